package stack

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var newKeyRe = regexp.MustCompile(`<pre id="new-key"><bdi>(cs_[a-z2-7]{40})</bdi></pre>`)

// TestOperatorPageManagesCredentials: on the operator page, through its
// CSRF-protected forms, an operator creates a key (shown once, usable at
// once), changes its choice (the next call follows it), opens its page
// (settings, last client, pending confirmations), revokes a grant, and
// revokes the key only with the confirm box ticked. Every refused form
// changes nothing.
func TestOperatorPageManagesCredentials(t *testing.T) {
	h := newRememberHarness(t)
	b := newBrowser(t, h)
	page := b.login(b.get("/operator"), operatorKey)
	expect(t, page, http.StatusOK, "")
	if !strings.Contains(string(page.body), `action="/operator/credentials"`) || !strings.Contains(string(page.body), `href="/operator/credentials/runner"`) {
		t.Fatalf("the page has no create form or credential links:\n%s", page.body)
	}
	csrf := csrfOf(t, page)

	// Refused forms: nothing is created.
	refused := []struct {
		name    string
		form    url.Values
		headers []string
		status  int
		says    string
	}{
		{"stale token", url.Values{"csrf": {"stale"}, "id": {"x1"}}, nil, http.StatusForbidden, "stale"},
		{"no token", url.Values{"id": {"x1"}}, nil, http.StatusForbidden, "stale"},
		{"another site", url.Values{"csrf": {csrf}, "id": {"x1"}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden, "another site"},
		{"duplicate fields", url.Values{"csrf": {csrf}, "id": {"x1", "x2"}}, nil, http.StatusBadRequest, "more than once"},
		{"unknown choice", url.Values{"csrf": {csrf}, "id": {"x1"}, "choice": {"always"}}, nil, http.StatusBadRequest, "not a choice"},
		{"connection not configured", url.Values{"csrf": {csrf}, "id": {"x1"}, "connections": {"crm, nowhere"}}, nil, http.StatusBadRequest, "not configured"},
		{"id clash", url.Values{"csrf": {csrf}, "id": {"runner"}}, nil, http.StatusConflict, "already exists"},
		{"bad id", url.Values{"csrf": {csrf}, "id": {"a b"}}, nil, http.StatusBadRequest, "not a credential id"},
		{"huge", url.Values{"csrf": {csrf}, "id": {strings.Repeat("x", 70<<10)}}, nil, http.StatusRequestEntityTooLarge, "larger than 64 KiB"},
	}
	for _, tt := range refused {
		r := b.post("/operator/credentials", tt.form, tt.headers...)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.says) || newKeyRe.Match(r.body) {
			t.Errorf("%s: %d, want %d saying %q\n%s", tt.name, r.status, tt.status, tt.says, r.body)
		}
	}
	if r := h.operatorJSON(http.MethodGet, "/v1/operator/credentials/x1", ""); r.status != http.StatusNotFound {
		t.Fatalf("a refused form created x1: %s", r.body)
	}

	// Create: the key is shown once, on the new credential's page, and works at once.
	created := b.post("/operator/credentials", url.Values{"csrf": {csrf}, "id": {"web-bot"}, "choice": {"refuse"}, "connections": {"crm, remember"}})
	m := newKeyRe.FindSubmatch(created.body)
	if created.status != http.StatusOK || m == nil || !strings.Contains(string(created.body), `<td id="choice">refuse</td>`) {
		t.Fatalf("create: %d\n%s", created.status, created.body)
	}
	key := string(m[1])
	if again := b.get("/operator/credentials/web-bot"); newKeyRe.Match(again.body) || strings.Contains(string(again.body), key) {
		t.Fatal("the key is shown again on the credential's page")
	}
	if strings.Contains(string(b.get("/operator").body), key) {
		t.Fatal("the key is shown again on the operator page")
	}
	expect(t, h.call(key, deleteContact("5")), http.StatusForbidden, "requires_confirmation")

	// Change the choice: the next call follows it; a refused change changes nothing.
	bad := b.post("/operator/credentials/web-bot", url.Values{"csrf": {csrf}, "action": {"change"}, "choice": {"sometimes"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(string(bad.body), `<td id="choice">refuse</td>`) {
		t.Fatalf("a bad change: %d\n%s", bad.status, bad.body)
	}
	changed := b.post("/operator/credentials/web-bot", url.Values{"csrf": {csrf}, "action": {"change"}, "choice": {"ask_person"}})
	if changed.status != http.StatusOK || !strings.Contains(string(changed.body), `<td id="choice">ask_person</td>`) {
		t.Fatalf("change: %d\n%s", changed.status, changed.body)
	}
	paused := h.call(key, deleteContact("6"))
	expect(t, paused, http.StatusAccepted, "")

	// Its page: the pending confirmation and the client it was last seen with.
	detail := b.get("/operator/credentials/web-bot")
	if detail.status != http.StatusOK || !strings.Contains(string(detail.body), paused.str("confirmation.id")) || !strings.Contains(string(detail.body), "Last client") {
		t.Fatalf("detail: %d\n%s", detail.status, detail.body)
	}

	// A grant of another credential, revoked from that credential's page.
	g := h.grantFor("cs_test_ask", 1, "10")
	askPage := b.get("/operator/credentials/chat-user")
	if !strings.Contains(string(askPage.body), `action="/operator/grants/`+g+`"`) {
		t.Fatalf("chat-user's page lacks the grant %s:\n%s", g, askPage.body)
	}
	rg := b.post("/operator/grants/"+g, url.Values{"csrf": {csrf}})
	if rg.status != http.StatusOK || !strings.Contains(string(rg.body), "Revoked grant "+g) {
		t.Fatalf("revoke grant: %d\n%s", rg.status, rg.body)
	}
	expect(t, h.call("cs_test_ask", delRemember(2)), http.StatusAccepted, "")

	// Revoke: not without the box ticked; then the key is refused.
	unconfirmed := b.post("/operator/credentials/web-bot", url.Values{"csrf": {csrf}, "action": {"revoke"}})
	if unconfirmed.status != http.StatusBadRequest || !strings.Contains(string(unconfirmed.body), "Tick the box") {
		t.Fatalf("unconfirmed revoke: %d\n%s", unconfirmed.status, unconfirmed.body)
	}
	expect(t, h.call(key, map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusOK, "")
	revoked := b.post("/operator/credentials/web-bot", url.Values{"csrf": {csrf}, "action": {"revoke"}, "confirm": {"yes"}})
	if revoked.status != http.StatusOK || !strings.Contains(string(revoked.body), "Revoked web-bot") {
		t.Fatalf("revoke: %d\n%s", revoked.status, revoked.body)
	}
	expect(t, h.call(key, map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusUnauthorized, "unauthenticated")
	if r := b.get("/operator/credentials/web-bot"); r.status != http.StatusNotFound {
		t.Fatalf("the revoked credential's page: %d", r.status)
	}
}
