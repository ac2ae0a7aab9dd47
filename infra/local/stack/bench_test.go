package stack

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/upstream"
	"github.com/countersign/countersign/shared/workflow/local"
)

// benchLimits lift the per-credential limits (600 calls a minute and 20
// pending confirmations by default), which a benchmark passes in a second.
const benchLimits = `{"calls_per_minute": 1000000, "pending_confirmations": 10000}`

// cpuPerOp reports the process's CPU time per iteration (cpu-ns/op): the
// client, the gateway and the upstream all run in this process, so it is
// the whole call's CPU cost, which moves far less with the machine's load
// than ns/op does.
func cpuPerOp(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(processCPU()-since)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAutoCall measures what the gateway adds on the auto path: the
// same read of the same upstream, directly, through a bare reverse proxy,
// through GET /v1/rest and through POST /v1/calls (gateway) on loopback.
// Compare them with benchstat: gateway and rest against proxy is what the
// gateway costs beyond any hop (bench/cmd/hop measures the same with each
// in its own process).
//
// The stack logs as the local binary does by default (reqlog's JSON at
// info, one line per call), into io.Discard: the line is built and
// written, and what the writer does with it after is the binary's
// logWriter's.
func BenchmarkAutoCall(b *testing.B) {
	h := newHarness(b, harnessOptions{limits: benchLimits, logger: slog.New(reqlog.NewJSONHandler(io.Discard, nil))})
	client := &http.Client{}
	conn := h.stack.Config.Connections["crm"]
	b.Run("direct", func(b *testing.B) {
		cpu0 := processCPU()
		defer func() { cpuPerOp(b, cpu0) }()
		for b.Loop() {
			resp, err := client.Get(conn.BaseURL + "/contacts/12")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	// A bare reverse proxy on the transport the gateway's upstream client
	// uses: what any hop costs, the gateway's baseline.
	target, err := url.Parse(conn.BaseURL)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: upstream.NewTransport(),
	})
	b.Cleanup(proxy.Close)
	b.Run("proxy", func(b *testing.B) {
		cpu0 := processCPU()
		defer func() { cpuPerOp(b, cpu0) }()
		for b.Loop() {
			resp, err := client.Get(proxy.URL + "/contacts/12")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("rest", func(b *testing.B) {
		cpu0 := processCPU()
		defer func() { cpuPerOp(b, cpu0) }()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodGet, h.stack.URL+"/v1/rest/crm/contacts/12", nil)
			req.Header.Set("Authorization", "Bearer cs_test_ask")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	body := []byte(`{"connection":"crm","method":"GET","path":"/contacts/12","intent":"read"}`)
	b.Run("gateway", func(b *testing.B) {
		cpu0 := processCPU()
		defer func() { cpuPerOp(b, cpu0) }()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, h.stack.URL+"/v1/calls", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer cs_test_ask")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// BenchmarkHandshake measures one whole pause on the local stack: the call
// pauses (202), the notify task sends the link (webhook), the approver
// posts Approve, and the agent redeems; the upstream runs once.
func BenchmarkHandshake(b *testing.B) {
	h := newHarness(b, harnessOptions{limits: benchLimits})
	before := h.stack.StoreStats()
	cpu0 := processCPU()
	for b.Loop() {
		r := h.call("cs_test_ask", deleteContact12)
		if r.status != http.StatusAccepted {
			b.Fatalf("call: %d %s", r.status, r.body)
		}
		id := r.str("confirmation.id")
		ev := h.webhook.waitEvent(b, notify.TypeRequested, id)
		link := h.link(ev.Links[0].URL)
		if a := h.post(link, "approve", nil, "application/json"); a.status != http.StatusOK {
			b.Fatalf("approve: %d %s", a.status, a.body)
		}
		red := h.call("cs_test_ask", redeemOf(deleteContact12, id))
		if red.status != http.StatusOK {
			b.Fatalf("redeem: %d %s", red.status, red.body)
		}
	}
	b.StopTimer()
	cpuPerOp(b, cpu0)
	after := h.stack.StoreStats()
	b.ReportMetric(float64(after.Writes-before.Writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "commits/op")
	b.ReportMetric(float64(after.Pages-before.Pages)/float64(b.N), "pages/op")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != b.N {
		b.Fatalf("upstream DELETEs %d, want one per handshake (%d)", n, b.N)
	}
}

// TestHandshakeWrites pins the durable writes of one handshake, one per
// step that must be durable: the confirmation with the quota's use it
// counts, the call's audit record (call.paused), the workflow's
// execution started and waiting with its token, and that token where
// the answer finds it (the notify task then finds it in place and
// writes nothing); the
// decision with its record (confirmation.approved) and the workflow's
// answer with its next states; the redemption's claim (before the upstream
// call); and the outcome with its record (confirmation.redeemed). The
// three records are in the credential's chain, in order, and it verifies.
func TestHandshakeWrites(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	before := h.stack.StoreStats()
	r := h.call("cs_test_ask", deleteContact12)
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	expect(t, h.post(h.approvalLink(id), "approve", nil, "application/json"), http.StatusOK, "")
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), http.StatusOK, "")
	// The workflow's last write may land after the redemption.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := h.stack.engine.Execution(context.Background(), "local:confirm:"+id)
		if err == nil && info.Status == local.StatusSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workflow did not end: %+v, %v", info, err)
		}
	}
	after := h.stack.StoreStats()
	if got, want := after.Writes-before.Writes, uint64(4); got != want {
		t.Errorf("%d durable writes for one handshake, want %d", got, want)
	}
	ctx := context.Background()
	chains, err := audit.Chains(ctx, h.stack.store)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, chain := range chains {
		recs, err := h.stack.store.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Subject == id {
				actions = append(actions, r.Chain+" "+r.Action+" "+r.Outcome)
			}
		}
	}
	chain := audit.ChainOf("chat-user") // cs_test_ask's credential
	if want := []string{chain + " call.paused confirmation_required", chain + " confirmation.approved approved", chain + " confirmation.redeemed executed"}; !slices.Equal(actions, want) {
		t.Errorf("the chain records %q of the handshake, want %q", actions, want)
	}
	if rep, err := audit.Verify(ctx, h.stack.store); err != nil || !rep.OK() {
		t.Errorf("the audit chains do not verify: %v, %+v", err, rep)
	}
}
