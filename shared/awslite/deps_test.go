package awslite_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestNoFunctionLinksAnSDKClient: no Lambda function's bootstrap links a
// service client of aws-sdk-go-v2 (github.com/aws/aws-sdk-go-v2/service/...):
// S3, Secrets Manager, Step Functions, SNS and DynamoDB are awslite's
// (package doc), and one import of an SDK client brings back its package
// initialisation at every cold start (DynamoDB's was the largest of any
// package) and its generated client in every bootstrap.
func TestNoFunctionLinksAnSDKClient(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, testenv.Go, "the go command is not on PATH; install Go 1.26 (https://go.dev/dl/) and run: go test ./shared/awslite")
	}
	cmd := exec.Command(goTool, "list", "-tags", "lambda.norpc", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./functions/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./functions/...: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 7 {
		t.Fatalf("go list found %d functions, want the 7 of the Makefile: %q", len(lines), lines)
	}
	for _, line := range lines {
		fn, deps, _ := strings.Cut(line, " ")
		for _, dep := range strings.Fields(deps) {
			if strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/") {
				t.Errorf("%s links %s", fn, dep)
			}
		}
	}
}
