package bench

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
)

// TestCountersignAllocations holds countersign's side of the comparison
// to its allocation target (docs/design.md: at most one a decision): a
// decision allocates nothing, except that a threshold which escalates
// allocates its reason, which names the value the call holds.
func TestCountersignAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	b := loadBench(t)
	var cs Engine
	for _, e := range b.Engines {
		if e.Name() == "countersign" {
			cs = e
		}
	}
	if cs == nil {
		t.Fatal("no countersign engine")
	}
	for _, c := range Mix() {
		cred := b.Credentials[c.Credential]
		call := c.Call
		want := 0.0
		if strings.HasPrefix(c.Name, "threshold_") && c.Want.Escalated {
			want = 1
		}
		if n := testing.AllocsPerRun(200, func() { cs.Decide(&call, cred) }); n != want {
			t.Errorf("%s: %v allocations a decision, want %v", c.Name, n, want)
		}
	}
}
