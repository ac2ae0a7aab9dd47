package mcpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/lambdabuild"
	"github.com/countersign/countersign/internal/testenv"
)

// TestMCPSDKPatchApplies: the bootstraps are built with the MCP SDK patched
// (scripts/mcp-sdk.patch, applied by scripts/goja-patched.sh for make
// lambdas, sam build and the AWS path test) so that its pagination cursors
// need no encoding/gob, whose package initialisation every cold start of
// the scripts function paid, and so that it decodes with
// go-json-experiment/json (v1 semantics, names matched exactly) rather than
// linking segmentio's JSON as well. The patch must apply to the SDK go.mod
// names, leave no import of encoding/gob in it nor in the scripts function
// and no segmentio JSON in the scripts function, and the SDK's own
// pagination tests must pass on the patched copy (they page through every
// size with the cursors it writes, and refuse a bad one), as must its JSON
// tests (members matched case-sensitively, with a NUL, nesting bounded).
func TestMCPSDKPatchApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it copies the MCP SDK's module and runs its tests")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, testenv.Go, "the go command is not on PATH; install Go 1.26 (https://go.dev/dl/) and run: go test ./shared/mcpapi")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	modfile, err := lambdabuild.PatchedModfile(context.Background(), root, dir)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(modfile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "replace github.com/modelcontextprotocol/go-sdk => " + filepath.Join(dir, "mcp-go-sdk"); !strings.Contains(string(mod), want) {
		t.Errorf("%s does not say %q:\n%s", modfile, want, mod)
	}
	files, err := filepath.Glob(filepath.Join(dir, "mcp-go-sdk", "mcp", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the MCP SDK's sources under %s: %v", dir, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), `"encoding/gob"`) {
			t.Errorf("the patched SDK's %s imports encoding/gob", filepath.Base(f))
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, dep := range strings.Fields(run("list", "-modfile="+modfile, "-tags", "lambda.norpc", "-deps", "./functions/scripts")) {
		if dep == "encoding/gob" {
			t.Error("the scripts function links encoding/gob with the patched SDK")
		}
		if dep == "github.com/segmentio/encoding/json" {
			t.Error("the scripts function links segmentio's JSON with the patched SDK")
		}
	}
	run("test", "-count=1", "-modfile="+modfile, "-run", "Paginat", "github.com/modelcontextprotocol/go-sdk/mcp")
	run("test", "-count=1", "-modfile="+modfile, "github.com/modelcontextprotocol/go-sdk/internal/json")
}
