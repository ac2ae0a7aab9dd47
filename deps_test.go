package countersign_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestImportsNothingOfTheProject: the domain imports no package of the
// project, and the decision only the domain, so that every other package
// can import them (the root is wtf's domain package).
func TestImportsNothingOfTheProject(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, testenv.Go, "the go command is not on PATH; install Go 1.26 (https://go.dev/dl/) and run: go test .")
	}
	const module = "github.com/countersign/countersign"
	for pkg, allowed := range map[string][]string{
		".":               {module},
		"./shared/policy": {module, module + "/shared/policy"},
	} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			ok := !strings.HasPrefix(dep, module+"/") && dep != module
			for _, a := range allowed {
				ok = ok || dep == a
			}
			if !ok {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}
