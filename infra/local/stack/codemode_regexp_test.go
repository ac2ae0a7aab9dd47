//go:build unix

package stack

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCodeModeRegexpBacktracking: a regular expression that backtracks
// for minutes on goja's backtracking engine, sent by the read-only key
// over POST /v1/scripts, answers 422 script_limit_exceeded within the
// time limit, and nothing goes on running after the answer: the process's
// CPU time stands still in the second that follows (it went on using
// about 1.8 cores for minutes), and a call made then is answered as
// quickly as before.
func TestCodeModeRegexpBacktracking(t *testing.T) {
	if processCPU() == 0 {
		t.Fatal("getrusage measured no CPU time for this process")
	}
	h := newHarness(t, harnessOptions{})
	read := func() time.Duration {
		t.Helper()
		began := time.Now()
		expect(t, h.do(http.MethodGet, "/v1/rest/crm/contacts/1", "cs_test_run", nil, nil), http.StatusOK, "")
		return time.Since(began)
	}
	median := func() time.Duration {
		var ds []time.Duration
		for range 9 {
			ds = append(ds, read())
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	before := median()

	began := time.Now()
	r := h.script("cs_test_ro", `/^(?=a)(a+)+$/.test("a".repeat(29) + "!")`, "")
	took := time.Since(began)
	expect(t, r, http.StatusUnprocessableEntity, "script_limit_exceeded")
	if !strings.Contains(string(r.body), "a regular expression took longer than 500ms to match") {
		t.Errorf("answer %s", r.body)
	}
	// The default time limit is 5 s; one match's is half a second.
	if took > 5*time.Second {
		t.Errorf("answered after %s", took)
	}

	cpu := processCPU()
	time.Sleep(time.Second)
	if burnt := processCPU() - cpu; burnt > 300*time.Millisecond {
		t.Fatalf("the process used %s of CPU in the second after the answer: the match goes on", burnt)
	}
	if after := median(); after > 3*before+20*time.Millisecond {
		t.Errorf("calls took %s after the answer, %s before", after, before)
	}
}
