// Package lambdabuild prepares what the Lambda builds are made with, for
// the tests that build or check them as make lambdas does.
package lambdabuild

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// PatchedModfile runs scripts/goja-patched.sh of the repository at root
// into dir, which copies goja and the MCP SDK there with the project's
// patches (scripts/goja.patch, scripts/mcp-sdk.patch), and returns the
// go.mod it wrote, for go build -modfile.
func PatchedModfile(ctx context.Context, root, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "goja-patched.sh"), dir)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/goja-patched.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
