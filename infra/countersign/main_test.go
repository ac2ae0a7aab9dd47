package main

import (
	"bytes"
	"strings"
	"testing"
)

// result is what one run of the command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runCmd runs the command with args through run.
func runCmd(tb testing.TB, args ...string) result {
	tb.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring
		stderr   string // substring
		noStdout bool
		noStderr bool
	}{
		{name: "no command prints the usage", args: nil, code: exitUsage, stderr: "usage: countersign <command>", noStdout: true},
		{name: "help goes to stdout", args: []string{"help"}, code: exitOK, stdout: "keys SUBCOMMAND", noStderr: true},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: `unknown command "frobnicate"`},
		{name: "a command's -h is not a failure", args: []string{"validate", "-h"}, code: exitOK, stderr: "usage: countersign validate DIR"},
		{name: "an unknown flag is a usage mistake", args: []string{"explain", "--nope"}, code: exitUsage, stderr: "flag provided but not defined: -nope"},
		{name: "keys without a subcommand", args: []string{"keys"}, code: exitUsage, stderr: "usage: countersign keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.noStdout && r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if tt.noStderr && r.stderr != "" {
				t.Errorf("stderr = %q, want nothing", r.stderr)
			}
		})
	}
}
