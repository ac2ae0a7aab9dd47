package script_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestLinkedOnlyWhereScriptsRun: the JavaScript engine is linked by the
// scripts function and the local stack, never by the gateway, execute,
// operator, approve, notify and finalize functions or the packages they
// build from (the journal a script batch's status reads included): their
// bootstraps stay small and start fast.
func TestLinkedOnlyWhereScriptsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, testenv.Go, "the go command is not on PATH; install Go 1.26 (https://go.dev/dl/) and run: go test ./shared/script")
	}
	root := filepath.Join("..", "..")
	for pkg, want := range map[string]bool{
		"./functions/scripts": true, "./infra/local": true,
		"./functions/gateway": false, "./functions/execute": false, "./functions/operator": false,
		"./functions/approve": false, "./functions/notify": false, "./functions/finalize": false,
		"./shared/app": false, "./shared/calls": false, "./shared/httpapi": false, "./shared/tasks": false,
		"./shared/script/journal": false,
	} {
		cmd := exec.Command(goTool, "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if got := strings.Contains(string(out), "github.com/dop251/goja\n"); got != want {
			t.Errorf("%s links goja: %v, want %v", pkg, got, want)
		}
	}
}
