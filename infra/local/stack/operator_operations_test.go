package stack

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOperationsPage: /operator/operations lists each connection's
// endpoints with their tier and the rules that can change it (threshold,
// velocity, hooks, delegation, remember), says how to change them, and for
// a chosen credential shows each endpoint's outcome as the pipeline decides
// it: the page's pause is the gateway's. Bad parameters are a 4xx and show
// no outcome.
func TestOperationsPage(t *testing.T) {
	h := newRememberHarness(t)
	b := newBrowser(t, h)
	b.login(b.get("/operator"), operatorKey)

	page := b.get("/operator/operations")
	expect(t, page, http.StatusOK, "")
	s := string(page.body)
	for _, want := range []string{
		`<a href="/operator/operations" aria-current="page">Operations</a>`,
		`<code>make config-push</code>`,
		`<h3 id="connection-crm">`,
		`<code><bdi>POST /payments</bdi></code></td><td>confirm</td>`,
		`threshold: connections/crm/policy.json endpoints[6].escalate[0] body.amount above 10000: review`,
		`delegations: a delegated call at the confirm tier is raised to review`,
		`<h3 id="connection-hooked">`,
		`hooks: asked on every call`,
		`remember: an approver may allow later calls for up to 30 minutes and 3 calls`,
		`velocity: connections/remember/policy.json endpoints[1].escalate[0] rate 20 calls per 86400 s: review`,
		`operator-gated: runs only from the operator surface`,
		`<option value="chat-user">chat-user</option>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the operations page lacks %s", want)
		}
	}
	if strings.Contains(s, "<th>Outcome</th>") {
		t.Error("outcomes shown with no credential chosen")
	}

	// For chat-user (ask_person): DELETE /contacts/{id} pauses, on the page
	// and at the gateway.
	page = b.get("/operator/operations?credential=chat-user")
	expect(t, page, http.StatusOK, "")
	s = string(page.body)
	for _, want := range []string{
		`<option value="chat-user" selected>chat-user</option>`,
		`<code><bdi>DELETE /contacts/{id}</bdi></code></td><td>confirm</td>`,
		`<bdi>pause (confirm): `,
		`<bdi>deny blocked (never): `,
		`<bdi>execute (auto): `,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the outcomes for chat-user lack %s", want)
		}
	}
	row := s[strings.Index(s, `<code><bdi>DELETE /contacts/{id}</bdi></code></td><td>confirm</td>`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "pause (confirm)") {
		t.Errorf("DELETE /contacts/{id} for chat-user: %s", row)
	}
	if r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/1", "intent": "write"}); r.status != http.StatusAccepted || r.str("status") != "confirmation_required" {
		t.Errorf("the gateway did not pause it: %d %s", r.status, r.body)
	}
	// For runner (run_without_asking) the same endpoint executes.
	page = b.get("/operator/operations?credential=runner")
	s = string(page.body)
	row = s[strings.Index(s, `<code><bdi>DELETE /contacts/{id}</bdi></code></td><td>confirm</td>`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "execute (confirm)") {
		t.Errorf("DELETE /contacts/{id} for runner: %s", row)
	}

	for _, tt := range []struct {
		query  string
		status int
		says   string
	}{
		{"credential=chat-user&credential=runner", http.StatusBadRequest, "once"},
		{"other=1", http.StatusBadRequest, "one parameter"},
		{"credential=nobody", http.StatusNotFound, "no credential"},
		{"credential=" + url.QueryEscape(strings.Repeat("x", 4000)), http.StatusNotFound, "no credential"},
		{"%zz", http.StatusBadRequest, "malformed"},
	} {
		r := b.get("/operator/operations?" + tt.query)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.says) || strings.Contains(string(r.body), "pause (confirm)") {
			t.Errorf("?%.40s: %d, want %d saying %q\n%s", tt.query, r.status, tt.status, tt.says, messageOf(r.body))
		}
	}
	// Signed out, nothing of it is shown.
	out := newBrowser(t, h).get("/operator/operations")
	if out.status == http.StatusOK || strings.Contains(string(out.body), "config-push") {
		t.Errorf("signed out: %d\n%s", out.status, out.body)
	}
}

// messageOf is the page's message paragraph, or its first 2000 bytes.
func messageOf(body []byte) string {
	s := string(body)
	if i := strings.Index(s, `<p class="message`); i >= 0 {
		s = s[i:]
		if j := strings.Index(s, "</p>"); j >= 0 {
			return s[:j]
		}
	}
	if len(s) > 2000 {
		s = s[:2000]
	}
	return s
}
