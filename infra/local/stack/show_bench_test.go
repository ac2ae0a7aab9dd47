package stack

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/notify"
)

// BenchmarkPauseShow measures what a show read adds to a pause, in the
// same run: the call pauses (202) and the notify task sends the link
// (the webhook got it), with the read made and stored in between (with)
// or without one (without), on the same upstream. p50-ns/op is the median
// of the iterations (the read is one GET of the demo CRM on loopback and
// one more durable write; see TestPauseShowWrites).
func BenchmarkPauseShow(b *testing.B) {
	h := newHarness(b, harnessOptions{limits: benchLimits, files: map[string]string{"connections/shown/policy.json": showPolicy}})
	for _, bc := range []struct {
		name string
		call map[string]any
	}{
		{"without", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/12", "intent": "write"}},
		{"with", deleteShown12},
	} {
		b.Run(bc.name, func(b *testing.B) {
			before := h.stack.StoreStats()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				r := h.call("cs_test_ask", bc.call)
				if r.status != http.StatusAccepted {
					b.Fatalf("call: %d %s", r.status, r.body)
				}
				h.webhook.waitEvent(b, notify.TypeRequested, r.str("confirmation.id"))
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
			after := h.stack.StoreStats()
			b.ReportMetric(float64(after.Writes-before.Writes)/float64(b.N), "writes/op")
		})
	}
}

// TestPauseShowWrites pins the cost of a show read in durable writes: two
// on top of a pause's, the read stored on the record and then the task
// token (which, without a show read, goes with the pause's write: nobody
// may answer before the read is stored).
func TestPauseShowWrites(t *testing.T) {
	h := showHarness(t)
	count := func(call map[string]any) uint64 {
		before := h.stack.StoreStats()
		r := h.call("cs_test_ask", call)
		expect(t, r, http.StatusAccepted, "")
		h.webhook.waitEvent(t, notify.TypeRequested, r.str("confirmation.id"))
		return h.stack.StoreStats().Writes - before.Writes
	}
	without := count(map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/12", "intent": "write"})
	with := count(deleteShown12)
	if with != without+2 {
		t.Errorf("a pause with a show read made %d durable writes, without %d: want two more", with, without)
	}
}
