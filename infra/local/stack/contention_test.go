package stack

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestOneCredentialPausesAtOnce: 50 pauses from one credential at once,
// through POST /v1/calls, with pending_confirmations 30. The store counts
// the limit exactly (store.Store.TakeQuota), so exactly 30 pause (202) and
// 20 are refused (429 rate_limited); none fails with a 5xx (before, the
// racers lost a read-modify-write of one quota record and some answered
// 500 "under too much contention"). Every pause is in the credential's
// audit chain, which verifies.
func TestOneCredentialPausesAtOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{limits: `{"calls_per_minute": 1000000, "pending_confirmations": 30}`})
	var mu sync.Mutex
	var other []string
	codes := parallel(50, func(int) int {
		r := h.call("cs_test_ask", deleteContact12)
		if r.status != http.StatusAccepted && r.status != http.StatusTooManyRequests {
			mu.Lock()
			other = append(other, string(r.body))
			mu.Unlock()
		}
		return r.status
	})
	if codes[http.StatusAccepted] != 30 || codes[http.StatusTooManyRequests] != 20 {
		t.Errorf("answers %v, want exactly 30 202 and 20 429; other answers: %q", codes, other)
	}
	h.stop()

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.ChainOf("chat-user")})
	if err != nil {
		t.Fatal(err)
	}
	paused := 0
	for _, r := range recs {
		if r.Action == "call.paused" {
			paused++
		}
	}
	if paused != codes[http.StatusAccepted] {
		t.Errorf("%d call.paused records, want one per pause (%d)", paused, codes[http.StatusAccepted])
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil || !rep.OK() {
		t.Errorf("audit verify: %v, breaks %v", err, rep.Breaks())
	}
}

// BenchmarkPausesOneCredential measures pauses (POST /v1/calls → 202) per
// second at concurrency 20 from one credential, and, as the baseline in the
// same run, the same load spread over two credentials: with nothing
// serialized per credential the two are alike. Run:
//
//	go test -run '^$' -bench PausesOneCredential -benchtime 2000x ./infra/local/stack/
func BenchmarkPausesOneCredential(b *testing.B) {
	h := newHarness(b, harnessOptions{limits: benchLimits})
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"one-credential", []string{"cs_test_ask"}},
		{"two-credentials", []string{"cs_test_ask", "cs_test_ask2"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var n sync.Mutex
			i := 0
			stats := h.stack.StoreStats()
			cpu0 := processCPU()
			b.SetParallelism(max(1, 20/runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				n.Lock()
				key := tc.keys[i%len(tc.keys)]
				i++
				n.Unlock()
				for pb.Next() {
					if r := h.call(key, deleteContact12); r.status != http.StatusAccepted {
						b.Errorf("pause: %d %s", r.status, r.body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pauses/s")
			cpuPerOp(b, cpu0)
			reportStoreStats(b, stats, h.stack.StoreStats())
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkHandshakesOneCredential measures full handshakes per second
// (call → 202 → webhook → Approve → redeem → the upstream once) at
// concurrency 20 from one credential, and the same load over two
// credentials as the baseline in the same run. Run:
//
//	go test -run '^$' -bench HandshakesOneCredential -benchtime 1000x ./infra/local/stack/
func BenchmarkHandshakesOneCredential(b *testing.B) {
	h := newHarness(b, harnessOptions{limits: benchLimits})
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"one-credential", []string{"cs_test_ask"}},
		{"two-credentials", []string{"cs_test_ask", "cs_test_ask2"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var mu sync.Mutex
			i := 0
			before := h.upstream.Count("DELETE", "/contacts/12")
			stats := h.stack.StoreStats()
			cpu0 := processCPU()
			b.SetParallelism(max(1, 20/runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				key := tc.keys[i%len(tc.keys)]
				i++
				mu.Unlock()
				for pb.Next() {
					r := h.call(key, deleteContact12)
					if r.status != http.StatusAccepted {
						b.Errorf("pause: %d %s", r.status, r.body)
						return
					}
					id := r.str("confirmation.id")
					if r := h.post(h.approvalLink(id), "approve", nil, "application/json"); r.status != http.StatusOK {
						b.Errorf("approve: %d %s", r.status, r.body)
						return
					}
					if r := h.call(key, redeemOf(deleteContact12, id)); r.status != http.StatusOK {
						b.Errorf("redeem: %d %s", r.status, r.body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handshakes/s")
			cpuPerOp(b, cpu0)
			reportStoreStats(b, stats, h.stack.StoreStats())
			if n := h.upstream.Count("DELETE", "/contacts/12") - before; n != b.N {
				b.Errorf("the upstream ran %d DELETEs for %d handshakes", n, b.N)
			}
		})
	}
}

// reportStoreStats reports the store's durable writes, bbolt commits and
// pages written per iteration between two readings of its counters. The
// workflow's last writes of an iteration may land after it, so the
// figures are close, not exact, at the end of a run.
func reportStoreStats(b *testing.B, before, after embedded.Stats) {
	n := float64(b.N)
	b.ReportMetric(float64(after.Writes-before.Writes)/n, "writes/op")
	b.ReportMetric(float64(after.Commits-before.Commits)/n, "commits/op")
	b.ReportMetric(float64(after.Pages-before.Pages)/n, "pages/op")
}
