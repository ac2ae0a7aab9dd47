package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/config"
)

// copyDir copies the directory src into a new temporary directory.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// edit replaces old with new in the file rel under dir.
func edit(tb testing.TB, dir, rel, old, new string) {
	tb.Helper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		tb.Fatalf("%s does not contain %q", rel, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		dir    func(t *testing.T) string
		code   int
		stdout string
	}{
		{name: "the demo configuration",
			dir:    func(*testing.T) string { return "../config" },
			stdout: "../config is valid: 1 connection (crm: 11 endpoints, 2 tools), 8 credentials, approvers: console\n"},
		{name: "the tier table's configuration",
			dir:    func(*testing.T) string { return tierTableDir },
			stdout: "testdata/tiertable is valid: 2 connections (billing: 2 endpoints, 0 tools; crm: 12 endpoints, 5 tools), 11 credentials, approvers: console\n"},
		{name: "one webhook and no console",
			dir: func(t *testing.T) string {
				d := copyDir(t, tierTableDir)
				edit(t, d, "settings.json", `{"console": true}`, `{"webhooks": [{"name": "ops", "url": "http://127.0.0.1:9/h", "secret": "s"}]}`)
				return d
			},
			stdout: "2 connections (billing: 2 endpoints, 0 tools; crm: 12 endpoints, 5 tools), 11 credentials, approvers: 1 webhook\n"},
		{name: "two problems in two files",
			dir: func(t *testing.T) string {
				d := copyDir(t, tierTableDir)
				edit(t, d, "connections/crm/policy.json", `"confirm": true, "operation_id"`, `"confirm": false, "operation_id"`)
				edit(t, d, "credentials.json", `"choice": "ask_agent"`, `"choice": "maybe"`)
				return d
			},
			code: exitFail},
		{name: "malformed JSON",
			dir: func(t *testing.T) string {
				d := copyDir(t, tierTableDir)
				edit(t, d, "connections/billing/policy.json", `"endpoints": [`, `"endpoints": [,`)
				return d
			},
			code: exitFail},
		{name: "a missing directory",
			dir:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "nowhere") },
			code: exitFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			r := runCmd(t, "validate", dir)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == exitOK {
				if !strings.HasSuffix(r.stdout, tt.stdout) || r.stderr != "" {
					t.Errorf("stdout %q (stderr %q), want it to end with %q", r.stdout, r.stderr, tt.stdout)
				}
				return
			}
			// Exactly what the local stack prints when it refuses to start
			// (infra/local: fmt.Fprintln(os.Stderr, "countersign:", err)).
			_, err := config.Load(dir, nil)
			if err == nil {
				t.Fatal("policy.Load accepts the directory")
			}
			if want := "countersign: " + err.Error() + "\n"; r.stderr != want {
				t.Errorf("stderr:\n%s\nwant the server's message:\n%s", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestValidateUsage(t *testing.T) {
	for _, args := range [][]string{{"validate"}, {"validate", "a", "b"}} {
		r := runCmd(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "validate takes one configuration directory") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
