package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatalf instead of
// stopping the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed, r.msg = true, fmt.Sprintf(f, args...) }

func TestMissing(t *testing.T) {
	for _, tt := range []struct {
		require string
		fail    bool
	}{
		{"", false},
		{"all", true},
		{"dynalite", true},
		{"chromium,dynalite", true},
		{"chromium dynalite", true},
		{"chromium", false},
		{"dynalite-not", false},
		{"ALL", false}, // names are exact
	} {
		t.Run(fmt.Sprintf("%q", tt.require), func(t *testing.T) {
			t.Setenv(RequireEnv, tt.require)
			r := &recorder{TB: t}
			Missing(r, Dynalite, "start it with scripts/test-with-dynalite.sh")
			if r.failed != tt.fail || r.skipped == tt.fail {
				t.Fatalf("%s=%q: failed %v, skipped %v; want failed %v", RequireEnv, tt.require, r.failed, r.skipped, tt.fail)
			}
			if !strings.Contains(r.msg, "scripts/test-with-dynalite.sh") {
				t.Errorf("the message does not say what to run: %q", r.msg)
			}
		})
	}
}

func TestAptBinaryFound(t *testing.T) {
	t.Setenv(RequireEnv, "all")
	r := &recorder{TB: t}
	if p := AptBinary(r, Go, "golang-go", "no-such-binary-here", "go"); p == "" || r.failed || r.skipped {
		t.Fatalf("AptBinary found %q (failed %v, skipped %v); want the go on PATH", p, r.failed, r.skipped)
	}
}
