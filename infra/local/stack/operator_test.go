package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/store/embedded"
)

const operatorKey = "cs_test_op"

// queueReview makes a review-tier call as chat-user and returns the item's id.
func (h *harness) queueReview(path string, body any) string {
	h.t.Helper()
	call := map[string]any{"connection": "crm", "method": "POST", "path": path, "intent": "write"}
	if body != nil {
		call["body"] = body
	}
	r := h.call("cs_test_ask", call)
	expect(h.t, r, http.StatusForbidden, "review_required")
	id := r.str("review.id")
	if !strings.HasPrefix(id, "rv_") {
		h.t.Fatalf("review id %q", id)
	}
	return id
}

func (h *harness) operatorPost(key, path string, body any) result {
	h.t.Helper()
	b, _ := json.Marshal(body)
	return h.do(http.MethodPost, path, key, bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
}

func TestOperatorRoutesRefuseNonOperators(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.queueReview("/accounts/2/close", nil)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/operator/reviews", ""},
		{"GET", "/v1/operator/reviews/" + id, ""},
		{"POST", "/v1/operator/reviews/" + id, `{"decision":"run"}`},
		{"POST", "/v1/operator/reviews/" + id, `{"decision":"dismiss","reason":"no"}`},
		{"POST", "/v1/operator/tools/crm/purge_contacts", `{}`},
		{"GET", "/v1/operator/nothing-here", ""},
	}
	for _, key := range []string{"cs_test_ask", "cs_test_refuse", "cs_test_run", "cs_test_ro"} {
		for _, rt := range routes {
			r := h.do(rt.method, rt.path, key, strings.NewReader(rt.body), map[string]string{"Content-Type": "application/json"})
			if r.status != http.StatusForbidden || r.str("code") != "forbidden" {
				t.Errorf("%s %s with %s: %d %s, want 403 forbidden", rt.method, rt.path, key, r.status, r.body)
			}
		}
	}
	for _, rt := range routes {
		r := h.do(rt.method, rt.path, "", strings.NewReader(rt.body), nil)
		expect(t, r, http.StatusUnauthorized, "unauthenticated")
	}
	// The page: a non-operator key is refused at sign-in and gets no session.
	b := newBrowser(t, h)
	page := b.get("/operator")
	r := b.login(page, "cs_test_ask")
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "needs role operator") || b.hasSession() {
		t.Fatalf("non-operator sign-in: %d session=%v\n%s", r.status, b.hasSession(), r.body)
	}
	// Nothing ran or changed.
	if st := h.statusOf("cs_test_ask", id); st != "pending" {
		t.Fatalf("review item %s is %s, want pending", id, st)
	}
	if n := h.upstream.Count("POST", "/accounts/2/close"); n != 0 {
		t.Fatalf("upstream called %d times", n)
	}
}

func TestOperatorRunsAReviewItemOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.queueReview("/accounts/2/close", map[string]any{"note": "customer asked"})
	// The agent reads the item like a confirmation: kind review, pending.
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, st, http.StatusOK, "")
	if st.str("kind") != "review" || st.str("status") != "pending" {
		t.Fatalf("agent's view %s", st.body)
	}
	list := h.do(http.MethodGet, "/v1/operator/reviews", operatorKey, nil, nil)
	expect(t, list, http.StatusOK, "")
	if list.str("reviews.0.id") != id || list.str("reviews.0.credential") != "chat-user" || list.str("reviews.0.args.body.note") != "customer asked" {
		t.Fatalf("list %s", list.body)
	}

	// Ten operators press Run at once: the upstream is called once.
	const n = 10
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "run"})
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			ok++
			if r.str("status") != "executed" || r.get("response.status") != float64(200) {
				t.Errorf("run answer %s", r.body)
			}
		case http.StatusConflict:
			if r.str("code") != "confirmation_decided" {
				t.Errorf("losing run: %s", r.body)
			}
		default:
			t.Errorf("run: %d %s", r.status, r.body)
		}
	}
	if ok != 1 {
		t.Fatalf("%d runs answered 200, want 1", ok)
	}
	if c := h.upstream.Count("POST", "/accounts/2/close"); c != 1 {
		t.Fatalf("upstream called %d times, want 1", c)
	}
	reqs := h.upstream.Requests()
	if got := reqs[len(reqs)-1].Header.Get("Idempotency-Key"); got != id+":0" {
		t.Errorf("Idempotency-Key %q, want %s:0", got, id)
	}
	st = h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.str("status") != "executed" || st.get("operations.0.outcome.status") != float64(200) {
		t.Fatalf("agent's view after the run %s", st.body)
	}
	// Run again later, or dismiss: refused, nothing runs.
	again := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "run"})
	expect(t, again, http.StatusConflict, "confirmation_decided")
	dis := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "dismiss"})
	expect(t, dis, http.StatusConflict, "confirmation_decided")
	if c := h.upstream.Count("POST", "/accounts/2/close"); c != 1 {
		t.Fatalf("upstream called %d times, want 1", c)
	}
}

func TestOperatorDismissesAReviewItem(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.queueReview("/accounts/9/close", nil)
	r := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "dismiss", "reason": "<script>alert(1)</script> not today"})
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "rejected" || r.str("decided_by") != "operator:root" {
		t.Fatalf("dismiss answer %s", r.body)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.str("status") != "rejected" || st.str("decision_reason") != "<script>alert(1)</script> not today" {
		t.Fatalf("agent's view %s", st.body)
	}
	// A dismissed item run later never runs.
	run := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "run"})
	expect(t, run, http.StatusConflict, "confirmation_decided")
	if c := h.upstream.Count("POST", "/accounts/9/close"); c != 0 {
		t.Fatalf("upstream called %d times", c)
	}
	bad := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "maybe"})
	expect(t, bad, http.StatusBadRequest, "invalid_request")
	unknown := h.operatorPost(operatorKey, "/v1/operator/reviews/rv_nope", map[string]string{"decision": "run"})
	expect(t, unknown, http.StatusNotFound, "unknown_confirmation")
	// A confirmation is not a review item.
	conf := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/3", "intent": "write"})
	expect(t, conf, http.StatusAccepted, "")
	notReview := h.operatorPost(operatorKey, "/v1/operator/reviews/"+conf.str("confirmation.id"), map[string]string{"decision": "run"})
	expect(t, notReview, http.StatusNotFound, "unknown_confirmation")
}

func TestOperatorReviewWhoseConnectionWasRemoved(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{
		"connections/legacy/policy.json": `{"base_url": "%UPSTREAM%", "endpoints": [{"method": "POST", "path": "/accounts/{id}/close", "confirm": "review"}]}`,
	}})
	r := h.call("cs_test_ask", map[string]any{"connection": "legacy", "method": "POST", "path": "/accounts/4/close", "intent": "write"})
	expect(t, r, http.StatusForbidden, "review_required")
	id := r.str("review.id")
	h.stop()
	if err := os.RemoveAll(filepath.Join(h.configDir, "connections", "legacy")); err != nil {
		t.Fatal(err)
	}
	h.start()
	run := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "run"})
	expect(t, run, http.StatusNotFound, "unknown_operation")
	if !strings.Contains(run.str("reason"), "no longer configured") {
		t.Errorf("reason %q", run.str("reason"))
	}
	// Still pending: the operator can dismiss it.
	dis := h.operatorPost(operatorKey, "/v1/operator/reviews/"+id, map[string]string{"decision": "dismiss", "reason": "connection removed"})
	expect(t, dis, http.StatusOK, "")
	if c := h.upstream.Count("POST", "/accounts/4/close"); c != 0 {
		t.Fatalf("upstream called %d times", c)
	}
}

func TestOperatorGatedTool(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	// Agents cannot reach it, whatever their choice.
	for _, key := range []string{"cs_test_run", "cs_test_ask"} {
		r := h.call(key, map[string]any{"connection": "crm", "method": "POST", "path": "/contacts/purge", "intent": "write"})
		if r.status != http.StatusNotFound && r.status != http.StatusForbidden {
			t.Fatalf("agent %s reached the tool: %d %s", key, r.status, r.body)
		}
	}
	r := h.operatorPost(operatorKey, "/v1/operator/tools/crm/purge_contacts", map[string]any{"body": map[string]any{"older_than_days": 30}})
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "executed" || r.str("tool") != "crm/purge_contacts" {
		t.Fatalf("tool answer %s", r.body)
	}
	if c := h.upstream.Count("POST", "/contacts/purge"); c != 1 {
		t.Fatalf("upstream called %d times, want 1", c)
	}
	// Only operator-gated tools run here; unknown arguments are refused.
	expect(t, h.operatorPost(operatorKey, "/v1/operator/tools/crm/archive_contact", map[string]any{"path": map[string]string{"id": "3"}}), http.StatusNotFound, "unknown_operation")
	expect(t, h.operatorPost(operatorKey, "/v1/operator/tools/crm/nope", map[string]any{}), http.StatusNotFound, "unknown_operation")
	expect(t, h.operatorPost(operatorKey, "/v1/operator/tools/crm/purge_contacts", map[string]any{"path": map[string]string{"id": "1"}}), http.StatusBadRequest, "invalid_request")
	expect(t, h.operatorPost(operatorKey, "/v1/operator/tools/crm/purge_contacts", map[string]any{"bogus": 1}), http.StatusBadRequest, "invalid_request")
}

// browser is a cookie-keeping HTTP client for the operator page, doing
// what a browser does with its forms.
type browser struct {
	t      testing.TB
	h      *harness
	client *http.Client
}

func newBrowser(t testing.TB, h *harness) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, client: &http.Client{Jar: jar}}
}

func (b *browser) send(req *http.Request) result {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

func (b *browser) get(path string) result {
	req, _ := http.NewRequest(http.MethodGet, b.h.stack.URL+path, nil)
	return b.send(req)
}

func (b *browser) post(path string, form url.Values, headers ...string) result {
	req, _ := http.NewRequest(http.MethodPost, b.h.stack.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]*)"`)

func csrfOf(tb testing.TB, page result) string {
	tb.Helper()
	m := csrfRe.FindSubmatch(page.body)
	if m == nil {
		tb.Fatalf("no csrf field on the page:\n%s", page.body)
	}
	return string(m[1])
}

func (b *browser) login(page result, key string) result {
	return b.post("/operator/login", url.Values{"csrf": {csrfOf(b.t, page)}, "key": {key}})
}

func (b *browser) hasSession() bool {
	u, _ := url.Parse(b.h.stack.URL + "/operator")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "cs_operator" && c.Value != "" {
			return true
		}
	}
	return false
}

func TestOperatorPage(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	runID := h.queueReview("/accounts/3/close", map[string]any{"why": `<img src=x onerror=alert(1)>`})
	dismissID := h.queueReview("/accounts/12/close", nil)
	b := newBrowser(t, h)

	page := b.get("/operator")
	expect(t, page, http.StatusOK, "")
	if !strings.Contains(string(page.body), `type="password" name="key"`) || strings.Contains(string(page.body), "<script") {
		t.Fatalf("login page:\n%s", page.body)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	// Sign-in without the form's token: refused.
	if r := b.post("/operator/login", url.Values{"key": {operatorKey}}); r.status != http.StatusForbidden || b.hasSession() {
		t.Fatalf("login without csrf: %d", r.status)
	}
	page = b.get("/operator")
	dash := b.login(page, operatorKey)
	expect(t, dash, http.StatusOK, "")
	if !b.hasSession() {
		t.Fatal("no session cookie")
	}
	setCookie := strings.Join(dash.header.Values("Set-Cookie"), "\n")
	if !strings.Contains(setCookie, "HttpOnly") || !strings.Contains(setCookie, "SameSite=Strict") || !strings.Contains(setCookie, "Max-Age=") || strings.Contains(setCookie, operatorKey) {
		t.Fatalf("Set-Cookie %s", setCookie)
	}
	body := string(dash.body)
	for _, want := range []string{runID, dismissID, "chat-user", "Review queue", "Credentials", "Recent audit records", "review.queued", "&lt;img src=x onerror=alert(1)&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if strings.Contains(body, "<img src=x") || strings.Contains(body, operatorKey) {
		t.Fatal("the dashboard shows raw markup or the key")
	}
	csrf := csrfOf(t, dash)

	// CSRF: a form without the token, or from another site, does nothing.
	if r := b.post("/operator/reviews/"+runID, url.Values{"decision": {"run"}}); r.status != http.StatusForbidden {
		t.Fatalf("run without csrf: %d", r.status)
	}
	if r := b.post("/operator/reviews/"+runID, url.Values{"decision": {"run"}, "csrf": {csrf}}, "Origin", "http://evil.example"); r.status != http.StatusForbidden {
		t.Fatalf("cross-site run: %d", r.status)
	}
	if r := b.post("/operator/reviews/"+runID, url.Values{"decision": {"run"}, "csrf": {csrf}}, "Sec-Fetch-Site", "cross-site"); r.status != http.StatusForbidden {
		t.Fatalf("cross-site run: %d", r.status)
	}
	if c := h.upstream.Count("POST", "/accounts/3/close"); c != 0 {
		t.Fatalf("upstream called %d times by refused forms", c)
	}

	ran := b.post("/operator/reviews/"+runID, url.Values{"decision": {"run"}, "csrf": {csrf}})
	expect(t, ran, http.StatusOK, "")
	if !strings.Contains(string(ran.body), "Ran review item "+runID) || h.upstream.Count("POST", "/accounts/3/close") != 1 {
		t.Fatalf("run:\n%s", ran.body)
	}
	dis := b.post("/operator/reviews/"+dismissID, url.Values{"decision": {"dismiss"}, "reason": {`<b>duplicate</b>`}, "csrf": {csrf}})
	expect(t, dis, http.StatusOK, "")
	if !strings.Contains(string(dis.body), "&lt;b&gt;duplicate&lt;/b&gt;") || strings.Contains(string(dis.body), "<b>duplicate") {
		t.Fatalf("dismiss page does not escape the reason:\n%s", dis.body)
	}
	if st := h.do(http.MethodGet, "/v1/confirmations/"+dismissID, "cs_test_ask", nil, nil); st.str("decision_reason") != "<b>duplicate</b>" {
		t.Fatalf("agent's view %s", st.body)
	}

	// Cookie tampering: a changed session token is no session.
	u, _ := url.Parse(h.stack.URL + "/operator")
	var tok string
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "cs_operator" {
			tok = c.Value
		}
	}
	forged := newBrowser(t, h)
	forged.client.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_operator", Value: strings.Replace(tok, ".", ".x", 1), Path: "/operator"}})
	if r := forged.get("/operator"); !strings.Contains(string(r.body), "Operator sign-in") {
		t.Fatal("a tampered cookie got the dashboard")
	}
	// A session sealed for another purpose (the CSRF token) is no session either.
	forged.client.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_operator", Value: csrf, Path: "/operator"}})
	if r := forged.get("/operator"); !strings.Contains(string(r.body), "Operator sign-in") {
		t.Fatal("a CSRF token got the dashboard")
	}
	// Session expiry, and a session of a non-operator credential, made with
	// the stack's own key.
	key, err := links.LoadOrCreateKey(filepath.Join(h.dataDir, "signing-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := links.NewSigner(key)
	seal := func(cred string, exp time.Time) string {
		b, _ := json.Marshal(map[string]string{"c": cred, "n": "0123456789abcdef0123456789abcdef"})
		return signer.Seal("operator-session", b, exp)
	}
	expired := newBrowser(t, h)
	expired.client.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_operator", Value: seal("root", time.Now().Add(-time.Second)), Path: "/operator"}})
	if r := expired.get("/operator"); !strings.Contains(string(r.body), "Operator sign-in") {
		t.Fatal("an expired session got the dashboard")
	}
	// A correctly sealed cookie whose session the store does not hold is no
	// session: the cookie names a session, it does not carry one.
	unknown := newBrowser(t, h)
	unknown.client.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_operator", Value: seal("root", time.Now().Add(time.Hour)), Path: "/operator"}})
	if r := unknown.get("/operator"); !strings.Contains(string(r.body), "Operator sign-in") || strings.Contains(string(r.body), "Review queue") {
		t.Fatalf("a session the store does not hold: %d\n%s", r.status, r.body)
	}

	// Sign out ends the session.
	out := b.post("/operator/logout", url.Values{"csrf": {csrf}})
	expect(t, out, http.StatusOK, "")
	if b.hasSession() {
		t.Fatal("session cookie kept after sign-out")
	}

	// Brute force: after five wrong keys from one address, sign-in waits.
	bf := newBrowser(t, h)
	var last result
	for i := range 7 {
		p := bf.get("/operator")
		last = bf.login(p, fmt.Sprintf("cs_wrong_%d", i))
	}
	if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" {
		t.Fatalf("7th wrong key: %d", last.status)
	}
	if r := bf.login(bf.get("/operator"), operatorKey); r.status != http.StatusTooManyRequests || bf.hasSession() {
		t.Fatalf("the right key during the wait: %d", r.status)
	}
}

func TestAuditTrailOfAConfirmedCall(t *testing.T) {
	h := newHarness(t, harnessOptions{hook: func(req map[string]any) (string, string) { return "ask", "after hours" }})
	call := map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/5", "intent": "write"}
	r := h.call("cs_test_ask", call)
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	link := h.approvalLink(id)
	expect(t, h.post(link, "approve", nil, "application/json"), http.StatusOK, "")
	call["intent"], call["confirmation_id"] = "confirmed_write", id
	expect(t, h.call("cs_test_ask", call), http.StatusOK, "")
	// An auto-tier read writes nothing; a hooked call records the hook's answer.
	expect(t, h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/5", "intent": "read"}), http.StatusOK, "")
	expect(t, h.call("cs_test_ask", map[string]any{"connection": "hooked", "method": "GET", "path": "/contacts/5", "intent": "read"}), http.StatusAccepted, "")
	h.stop()

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recs, err := st.ListAudit(ctx, storeQuery(audit.ChainOf("chat-user")))
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		actions = append(actions, r.Action+" "+r.Outcome)
	}
	want := []string{"call.paused confirmation_required", "confirmation.approved approved", "confirmation.redeemed executed", "call.paused confirmation_required"}
	if strings.Join(actions, "|") != strings.Join(want, "|") {
		t.Fatalf("chat-user's chain:\n%s\nwant\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
	}
	if recs[0].Binding == "" || recs[0].Binding != recs[2].Binding || recs[1].Actor != "approver:ops" || recs[0].Rule == "" {
		t.Errorf("records %+v", recs[:3])
	}
	if hk := recs[3].Hook; hk == nil || hk.Decision != "ask" || hk.Reason != "after hours" {
		t.Errorf("hooked record's hook %+v", recs[3].Hook)
	}
	if cfg, err := st.LastAudit(ctx, audit.Config); err != nil || cfg.Action != "config.loaded" {
		t.Errorf("config chain: %+v %v", cfg, err)
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func hashOf(key string) string { return config.HashKey(key) }

func storeQuery(chain string) countersign.AuditQuery { return countersign.AuditQuery{Chain: chain} }

func TestApprovalPageShowsWhoAsksAndTakesAReason(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "POST", "path": "/contacts/4/archive", "intent": "write",
		"body": map[string]any{"note": "<script>alert(1)</script>"}, "client": map[string]string{"name": "Claude Code", "version": "2.1"}})
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	link := h.approvalLink(id)
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	body := string(page.body)
	for _, want := range []string{"Archive this contact?", "<code><bdi>chat-user</bdi></code>", `The agent says it is</dt>
<dd class="agent">“<bdi>Claude Code 2.1</bdi>” <span class="said">(its own words, not checked; can ask)`, "Why it needs you",
		`name="reason"`, "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("approval page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, `"query"`) {
		t.Errorf("approval page shows raw markup or an empty query:\n%s", body)
	}
	// Reject all with a reason: the agent reads it.
	u, _ := url.Parse(link)
	form := u.Query()
	form.Set("decision", "reject")
	form.Set("reason", "wrong contact <b>")
	rej := h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	expect(t, rej, http.StatusOK, "")
	if !strings.Contains(string(rej.body), "wrong contact &lt;b&gt;") {
		t.Errorf("the decided page does not show the reason:\n%s", rej.body)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.str("status") != "rejected" || st.str("decision_reason") != "wrong contact <b>" {
		t.Fatalf("agent's view %s", st.body)
	}
	// Approve shows the redemption deadline.
	r = h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/6", "intent": "write"})
	id = r.str("confirmation.id")
	ok := h.post(h.approvalLink(id), "approve", nil, "")
	if !strings.Contains(string(ok.body), "(redeem by)") {
		t.Errorf("approved page lacks the redemption deadline:\n%s", ok.body)
	}
}
