package script_test

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

// TestGojaPatchApplies: the bootstraps are built with goja patched so that
// a script sees no Go method (scripts/goja-patched.sh, make lambdas), which
// lets the linker drop the exported methods nothing calls, without its
// profiler (whose profile format's package init costs every cold start),
// and without the collation tables of its localeCompare, which code mode
// replaces with its own.
// The patch must
// apply to the goja go.mod names and leave no reflective method lookup in
// goja: after a goja upgrade this fails here, not only in make lambdas.
func TestGojaPatchApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it runs go list and copies goja's module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Missing(t, testenv.Go, "the go command is not on PATH; install Go 1.26 (https://go.dev/dl/) and run: go test ./shared/script")
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
	if want := "replace github.com/dop251/goja => " + filepath.Join(dir, "goja"); !strings.Contains(string(mod), want) {
		t.Errorf("%s does not say %q:\n%s", modfile, want, mod)
	}
	// No file of the patched goja lists methods through reflection
	// (reflect.Type.Method, reflect.Value.Method, MethodByName): one such
	// call, reachable, brings every exported method back into the binary.
	files, err := filepath.Glob(filepath.Join(dir, "goja", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("goja's sources under %s: %v", dir, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []string{".Method(", "MethodByName("} {
			if strings.Contains(string(src), call) {
				t.Errorf("the patched goja's %s calls %s", filepath.Base(f), call)
			}
		}
		// Nor imports the profile format of its profiler, whose package
		// init every cold start would pay.
		if strings.Contains(string(src), `"github.com/google/pprof/profile"`) {
			t.Errorf("the patched goja's %s imports github.com/google/pprof/profile", filepath.Base(f))
		}
		// Nor the collation tables of localeCompare, which code mode
		// replaces with its own (collate.go).
		if strings.Contains(string(src), `"golang.org/x/text/collate"`) {
			t.Errorf("the patched goja's %s imports golang.org/x/text/collate", filepath.Base(f))
		}
	}
}
