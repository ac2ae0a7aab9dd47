package stack

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/notify"
)

var deleteContact12 = map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/12", "intent": "write"}

func redeemOf(call map[string]any, id string) map[string]any {
	out := map[string]any{}
	for k, v := range call {
		out[k] = v
	}
	out["intent"], out["confirmation_id"] = "confirmed_write", id
	return out
}

// pause makes the call, expects 202, and returns the confirmation id and the
// approver's link from the webhook.
func (h *harness) pause(key string, call map[string]any) (string, string) {
	h.t.Helper()
	r := h.call(key, call)
	expect(h.t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	return id, h.approvalLink(id)
}

// TestHandshake is the whole handshake as a person does it: the agent's call
// pauses, the approver opens the link from the webhook, reads the page,
// presses Approve, and the agent redeems once; the upstream runs once.
func TestHandshake(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	if h.upstream.Count("DELETE", "/contacts/12") != 0 {
		t.Fatal("a paused call reached the upstream")
	}
	h.waitConsole("/approve/" + id + "?a=console&")

	// Before approval: pending.
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 409, "confirmation_pending")

	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, 200, "")
	html := string(page.body)
	for _, want := range []string{"Approve this operation?", "DELETE", "/contacts/12", `name="decision"`, `value="approve"`, `value="reject"`, "Reject all", "Test Co", "#0f766e", "left"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP = %q", csp)
	}
	if page.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy = %q", page.header.Get("Referrer-Policy"))
	}
	if strings.Contains(strings.ToLower(html), "<script") {
		t.Error("the page has a script")
	}
	// GET and HEAD change nothing.
	expect(t, h.do(http.MethodHead, link, "", nil, nil), 200, "")
	if st := h.statusOf("cs_test_ask", id); st != "pending" {
		t.Fatalf("status after GET and HEAD = %s, want pending", st)
	}

	// The person presses Approve: the browser submits the page's own form.
	r := h.press(page, "approve")
	expect(t, r, 200, "")
	if !strings.Contains(string(r.body), "Approved") {
		t.Fatalf("outcome page = %s", r.body)
	}
	h.webhook.waitEvent(t, notify.TypeDecided, id)
	if st := h.statusOf("cs_test_ask", id); st != "approved" {
		t.Fatalf("status = %s, want approved", st)
	}

	r = h.call("cs_test_ask", redeemOf(deleteContact12, id))
	expect(t, r, 200, "")
	if r.str("status") != "executed" || r.get("response.status") != float64(204) {
		t.Errorf("redemption = %s", r.body)
	}
	reqs := h.upstream.Requests()
	if len(reqs) != 1 || reqs[0].Method != "DELETE" || reqs[0].Path != "/contacts/12" || reqs[0].IdempotencyKey != id+":0" {
		t.Fatalf("upstream saw %+v, want one DELETE /contacts/12 with Idempotency-Key %s:0", reqs, id)
	}
	h.webhook.waitEvent(t, notify.TypeExecuted, id)

	// A second redemption fails and the upstream is not called again.
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 409, "confirmation_used")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("upstream called %d times, want 1", n)
	}
	status := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if status.str("status") != "executed" || status.str("kind") != "call" || status.get("operations.0.outcome.status") != float64(204) || status.str("decided_at") == "" {
		t.Errorf("status = %s", status.body)
	}
	// Only its creator may read it.
	expect(t, h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask2", nil, nil), 404, "unknown_confirmation")
	// A second decision is refused, and the page shows the decision without buttons.
	expect(t, h.post(link, "reject", nil, "application/json"), 409, "")
	page = h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, 200, "")
	if strings.Contains(string(page.body), `value="approve"`) {
		t.Error("the decided page still has buttons")
	}
}

func TestReject(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	page := h.press(h.do(http.MethodGet, link, "", nil, nil), "reject")
	expect(t, page, 200, "")
	if !strings.Contains(string(page.body), "Rejected") {
		t.Errorf("outcome page = %s", page.body)
	}
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 403, "confirmation_rejected")
	if st := h.statusOf("cs_test_ask", id); st != "rejected" {
		t.Errorf("status = %s", st)
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times after a rejection", n)
	}
}

// TestMismatch: an approval binds the credential, the operation and its exact
// arguments; approving "delete contact 12" does not approve 13.
func TestMismatch(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	pay := map[string]any{"connection": "crm", "method": "POST", "path": "/payments", "intent": "write",
		"query": map[string]string{"dry": "false"}, "body": map[string]any{"amount": 50, "currency": "EUR", "to": "ACME"}}
	id, link := h.pause("cs_test_ask", pay)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")

	changed := func(mut func(m map[string]any)) map[string]any {
		m := redeemOf(pay, id)
		q := map[string]string{"dry": "false"}
		m["query"] = q
		m["body"] = map[string]any{"amount": 50, "currency": "EUR", "to": "ACME"}
		mut(m)
		return m
	}
	cases := []struct {
		name string
		key  string
		call map[string]any
	}{
		{"another credential", "cs_test_ask2", changed(func(m map[string]any) {})},
		{"another amount", "cs_test_ask", changed(func(m map[string]any) { m["body"].(map[string]any)["amount"] = 51 })},
		{"another payee", "cs_test_ask", changed(func(m map[string]any) { m["body"].(map[string]any)["to"] = "EVIL" })},
		{"an extra body field", "cs_test_ask", changed(func(m map[string]any) { m["body"].(map[string]any)["memo"] = "x" })},
		{"another query", "cs_test_ask", changed(func(m map[string]any) { m["query"] = map[string]string{"dry": "true"} })},
		{"no query", "cs_test_ask", changed(func(m map[string]any) { delete(m, "query") })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, h.call(c.key, c.call), 403, "confirmation_mismatch")
		})
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Fatalf("a mismatched redemption reached the upstream %d times", n)
	}
	// The approval is still good for the exact call, key order aside.
	exact := redeemOf(pay, id)
	exact["body"] = map[string]any{"to": "ACME", "currency": "EUR", "amount": 50.0}
	expect(t, h.call("cs_test_ask", exact), 200, "")

	// Contact 12's approval does not approve contact 13.
	id12, link12 := h.pause("cs_test_ask", deleteContact12)
	expect(t, h.post(link12, "approve", nil, "application/json"), 200, "")
	del13 := redeemOf(deleteContact12, id12)
	del13["path"] = "/contacts/13"
	expect(t, h.call("cs_test_ask", del13), 403, "confirmation_mismatch")
	if n := h.upstream.Count("DELETE", "/contacts/13"); n != 0 {
		t.Fatalf("contact 13 was deleted with contact 12's approval")
	}
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id12)), 200, "")
}

func TestTamperedLinks(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	u, _ := url.Parse(link)
	q := u.Query()
	tamper := map[string]func(q url.Values){
		"signature": func(q url.Values) { q.Set("sig", flipFirst(q.Get("sig"))) },
		"expiry":    func(q url.Values) { q.Set("exp", fmt.Sprint(time.Now().Add(24*time.Hour).Unix())) },
		"approver":  func(q url.Values) { q.Set("a", "mallory") },
		"key id":    func(q url.Values) { q.Set("kid", "k00000000") },
		"no sig":    func(q url.Values) { q.Del("sig") },
	}
	for name, mut := range tamper {
		t.Run(name, func(t *testing.T) {
			q2 := url.Values{}
			for k, v := range q {
				q2[k] = append([]string(nil), v...)
			}
			mut(q2)
			bad := u.Path + "?" + q2.Encode()
			expect(t, h.do(http.MethodGet, bad, "", nil, nil), 403, "")
			expect(t, h.post(bad, "approve", nil, ""), 403, "")
		})
	}
	// Another confirmation's id with this signature.
	other, _ := h.pause("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/14", "intent": "write"})
	expect(t, h.post(strings.Replace(link, id, other, 1), "approve", nil, ""), 403, "")
	if st := h.statusOf("cs_test_ask", id); st != "pending" {
		t.Errorf("status after tampered posts = %s, want pending", st)
	}
	if st := h.statusOf("cs_test_ask", other); st != "pending" {
		t.Errorf("other status = %s, want pending", st)
	}
}

// TestExpiry shortens the wait to one second: the page, the POST, the status
// and the redemption all say expired, and the workflow's timer records it.
func TestExpiry(t *testing.T) {
	h := newHarness(t, harnessOptions{callSeconds: 1})
	id, link := h.pause("cs_test_ask", deleteContact12)
	h.webhook.waitEvent(t, notify.TypeExpired, id)
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, 410, "")
	if !strings.Contains(string(page.body), "This confirmation expired") {
		t.Errorf("expired page = %s", page.body)
	}
	expect(t, h.post(link, "approve", nil, "application/json"), 410, "confirmation_expired")
	if st := h.statusOf("cs_test_ask", id); st != "expired" {
		t.Errorf("status = %s", st)
	}
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 410, "confirmation_expired")
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestRedeemWindow: an approval must be redeemed within redeem_seconds.
func TestRedeemWindow(t *testing.T) {
	h := newHarness(t, harnessOptions{redeemSeconds: 1})
	id, link := h.pause("cs_test_ask", deleteContact12)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	time.Sleep(1100 * time.Millisecond)
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 410, "confirmation_expired")
	if st := h.statusOf("cs_test_ask", id); st != "expired" {
		t.Errorf("status = %s, want expired", st)
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestNothingSelected: a person who clears every box and presses Approve
// approves nothing; the page says so and the confirmation stays pending.
func TestNothingSelected(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	r := h.press(h.do(http.MethodGet, link, "", nil, nil), "approve", "0")
	expect(t, r, 400, "")
	if !strings.Contains(string(r.body), "Select at least one operation") {
		t.Errorf("page = %s", r.body)
	}
	if st := h.statusOf("cs_test_ask", id); st != "pending" {
		t.Errorf("status = %s, want pending", st)
	}
}

// TestConcurrentApprovals: 30 approvers press at once; one decision stands.
func TestConcurrentApprovals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	codes := parallel(30, func(i int) int {
		decision := "approve"
		if i%2 == 1 {
			decision = "reject"
		}
		return h.post(link, decision, nil, "application/json").status
	})
	if codes[200] != 1 || codes[409] != 29 {
		t.Fatalf("answers = %v, want one 200 and 29 409", codes)
	}
	if n := h.webhook.count(notify.TypeDecided, id); n > 1 {
		t.Errorf("%d decided events", n)
	}
}

// TestConcurrentRedemptions: 20 redemptions at once call the upstream once.
func TestConcurrentRedemptions(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	codes := parallel(20, func(int) int { return h.call("cs_test_ask", redeemOf(deleteContact12, id)).status })
	if codes[200] != 1 || codes[409] != 19 {
		t.Fatalf("answers = %v, want one 200 and 19 409", codes)
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
}

func parallel(n int, fn func(i int) int) map[int]int {
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c := fn(i)
			mu.Lock()
			codes[c]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

// TestRestart: an approval survives a restart with the same data, and so
// does a confirmation still pending at the restart.
func TestRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	approved, link := h.pause("cs_test_ask", deleteContact12)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	del14 := map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/14", "intent": "write"}
	pending, pendingLink := h.pause("cs_test_ask", del14)

	h.restart()

	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, approved)), 200, "")
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, approved)), 409, "confirmation_used")
	if st := h.statusOf("cs_test_ask", pending); st != "pending" {
		t.Fatalf("pending after restart = %s", st)
	}
	expect(t, h.do(http.MethodGet, pendingLink, "", nil, nil), 200, "")
	expect(t, h.post(pendingLink, "approve", nil, "application/json"), 200, "")
	expect(t, h.call("cs_test_ask", redeemOf(del14, pending)), 200, "")
	expect(t, h.call("cs_test_ask", redeemOf(del14, pending)), 409, "confirmation_used")
	if a, b := h.upstream.Count("DELETE", "/contacts/12"), h.upstream.Count("DELETE", "/contacts/14"); a != 1 || b != 1 {
		t.Fatalf("upstream calls: contact 12 %d, contact 14 %d; want 1 each", a, b)
	}
}

// TestRestartExpiry: a confirmation pending when the stack stops still
// expires after it starts again.
func TestRestartExpiry(t *testing.T) {
	h := newHarness(t, harnessOptions{callSeconds: 2})
	id, link := h.pause("cs_test_ask", deleteContact12)
	h.stop()
	time.Sleep(2100 * time.Millisecond)
	h.start()
	h.webhook.waitEvent(t, notify.TypeExpired, id)
	expect(t, h.post(link, "approve", nil, "application/json"), 410, "confirmation_expired")
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), 410, "confirmation_expired")
}

// TestLongPollAndRESTRedemption: ?wait= returns as soon as a person decides;
// a REST client redeems with Countersign-Confirmation.
func TestLongPollAndRESTRedemption(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, map[string]string{"Prefer": "respond-async"})
	expect(t, r, 202, "")
	id := r.str("confirmation.id")
	link := h.approvalLink(id)

	done := make(chan result, 1)
	start := time.Now()
	go func() { done <- h.do(http.MethodGet, "/v1/confirmations/"+id+"?wait=20", "cs_test_ask", nil, nil) }()
	time.Sleep(200 * time.Millisecond)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	got := <-done
	if got.str("status") != "approved" || time.Since(start) > 5*time.Second {
		t.Fatalf("long poll answered %s after %v", got.body, time.Since(start))
	}
	// Without the header the call is still refused.
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, nil), 403, "requires_confirmation")
	r = h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, map[string]string{"Countersign-Confirmation": id})
	expect(t, r, 204, "")
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, map[string]string{"Countersign-Confirmation": id}), 409, "confirmation_used")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Fatalf("upstream called %d times", n)
	}
	expect(t, h.do(http.MethodGet, "/v1/confirmations/"+id+"?wait=abc", "cs_test_ask", nil, nil), 400, "invalid_request")
}

// TestShutdownAnswersLongPolls: stopping the stack answers a waiting
// ?wait= at once with the current status instead of holding the shutdown.
func TestShutdownAnswersLongPolls(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, _ := h.pause("cs_test_ask", deleteContact12)
	done := make(chan result, 1)
	go func() { done <- h.do(http.MethodGet, "/v1/confirmations/"+id+"?wait=25", "cs_test_ask", nil, nil) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	h.stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v with a long poll open", took)
	}
	r := <-done
	if r.status != http.StatusOK || r.str("status") != "pending" {
		t.Errorf("long poll answered %d %s", r.status, r.body)
	}
}

// TestStartFailures: a start that fails after opening things reports the
// error, leaves nothing open, and a second stack on the same data waits
// for the lock, then says why it cannot start.
func TestStartFailures(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	busy := strings.TrimPrefix(h.stack.URL, "http://")
	_, err := Start(t.Context(), Options{ConfigDir: h.configDir, Addr: busy, DataDir: t.TempDir(), Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "listen on "+busy) {
		t.Errorf("start on a busy port: %v", err)
	}
	_, err = Start(t.Context(), Options{ConfigDir: h.configDir, Addr: "127.0.0.1:0", DataDir: h.dataDir, Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("start on locked data: %v", err)
	}
	// The running stack is unharmed.
	expect(t, h.do(http.MethodGet, "/healthz", "", nil, nil), 200, "")
}

// flipFirst changes a base64url signature's first character to another, so
// the signature always differs (setting its end to "AA" left it unchanged
// whenever it already ended so, one run in 256).
func flipFirst(sig string) string {
	c := byte('A')
	if sig[0] == 'A' {
		c = 'B'
	}
	return string(c) + sig[1:]
}
