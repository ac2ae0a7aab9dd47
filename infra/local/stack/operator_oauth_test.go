package stack

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOperatorRevokesOAuthGrant: a person who authorized two clients
// (an MCP client and an API token) is a user with two OAuth grants,
// listed among the credentials as the person they are. The
// operator lists them a page at a time (GET
// /v1/operator/credentials/<id>/oauth-grants: a cursor is its
// credential's), sees them on the user's page, and revokes one with the
// page's form behind its confirmation box: its token is refused at once,
// the other client's still works, and the trail names the operator. Every
// refused form or request is a 4xx and revokes nothing.
func TestOperatorRevokesOAuthGrant(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	sb := newSignInBrowser(t, "ann@example.com")
	s, _ := h.oauthSession(sb, "Claude Code", clientKind{})
	listTools(t, s)
	token, _ := h.apiToken(sb)
	me := h.do(http.MethodGet, "/v1/credentials/me", token, nil, nil)
	user := me.str("id")
	if me.status != http.StatusOK || !strings.HasPrefix(user, "user_") {
		t.Fatalf("me: %d %s", me.status, me.body)
	}

	path := "/v1/operator/credentials/" + user + "/oauth-grants"
	all := h.operatorJSON(http.MethodGet, path, "")
	expect(t, all, http.StatusOK, "")
	if n := len(all.get("oauth_grants").([]any)); n != 2 || strings.Contains(string(all.body), "refresh") {
		t.Fatalf("the user's grants: %s", all.body)
	}
	first := h.operatorJSON(http.MethodGet, path+"?limit=1", "")
	next := first.str("next_cursor")
	if len(first.get("oauth_grants").([]any)) != 1 || next == "" {
		t.Fatalf("a page of one: %s", first.body)
	}
	second := h.operatorJSON(http.MethodGet, path+"?limit=1&cursor="+url.QueryEscape(next), "")
	if second.status != http.StatusOK || second.str("oauth_grants.0.id") == first.str("oauth_grants.0.id") || second.str("next_cursor") != "" {
		t.Fatalf("the second page: %s", second.body)
	}
	for _, tt := range []struct {
		name, method, path, key string
		status                  int
		code                    string
	}{
		{"another credential's cursor", http.MethodGet, "/v1/operator/credentials/chat-user/oauth-grants?cursor=" + url.QueryEscape(next), operatorKey, 400, "invalid_request"},
		{"limit out of range", http.MethodGet, path + "?limit=1000", operatorKey, 400, "invalid_request"},
		{"unknown parameter", http.MethodGet, path + "?x=1", operatorKey, 400, "invalid_request"},
		{"unknown credential", http.MethodGet, "/v1/operator/credentials/nobody/oauth-grants", operatorKey, 404, "not_found"},
		{"a non-operator lists", http.MethodGet, path, "cs_test_ask", 403, "forbidden"},
		{"a non-operator revokes", http.MethodDelete, "/v1/operator/oauth-grants/" + first.str("oauth_grants.0.id"), "cs_test_ask", 403, "forbidden"},
		{"POST the listing", http.MethodPost, path, operatorKey, 405, "method_not_allowed"},
		{"unknown grant", http.MethodDelete, "/v1/operator/oauth-grants/og_nothing", operatorKey, 404, "not_found"},
	} {
		r := h.do(tt.method, tt.path, tt.key, nil, nil)
		if r.status != tt.status || r.str("code") != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
		}
	}

	// The page: the user's grants, each with a revoke form behind a box.
	b := newBrowser(t, h)
	b.login(b.get("/operator"), operatorKey)
	page := b.get("/operator/credentials/" + user)
	expect(t, page, http.StatusOK, "")
	csrf := csrfOf(t, page)
	var apiGrant string
	for _, g := range all.get("oauth_grants").([]any) {
		if m := g.(map[string]any); !strings.HasSuffix(m["resource"].(string), "/mcp") {
			apiGrant = m["id"].(string)
		}
	}
	if apiGrant == "" || !strings.Contains(string(page.body), `<h3 id="oauth-grants">OAuth grants</h3>`) || !strings.Contains(string(page.body), `action="/operator/oauth-grants/`+apiGrant+`"`) ||
		!strings.Contains(string(page.body), "Claude Code") {
		t.Fatalf("the user's page lacks its OAuth grants:\n%s", page.body)
	}
	action := "/operator/oauth-grants/" + apiGrant
	for _, tt := range []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"stale token", url.Values{"csrf": {"stale"}, "confirm": {"yes"}}, http.StatusForbidden, "stale"},
		{"no token", url.Values{"confirm": {"yes"}}, http.StatusForbidden, "stale"},
		{"box not ticked", url.Values{"csrf": {csrf}, "credential": {user}}, http.StatusBadRequest, "Tick the box"},
		{"duplicate fields", url.Values{"csrf": {csrf}, "confirm": {"yes", "yes"}}, http.StatusBadRequest, "more than once"},
		{"huge", url.Values{"csrf": {csrf}, "confirm": {"yes"}, "credential": {strings.Repeat("x", 70<<10)}}, http.StatusRequestEntityTooLarge, "larger than 64 KiB"},
	} {
		r := b.post(action, tt.form)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.says) {
			t.Errorf("%s: %d, want %d saying %q\n%s", tt.name, r.status, tt.status, tt.says, messageOf(r.body))
		}
	}
	if r := b.post("/operator/oauth-grants/og_nothing", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); r.status != http.StatusNotFound {
		t.Errorf("an unknown grant: %d\n%s", r.status, messageOf(r.body))
	}
	if r := h.do(http.MethodGet, "/v1/credentials/me", token, nil, nil); r.status != http.StatusOK {
		t.Fatalf("a refused form revoked the grant: %d %s", r.status, r.body)
	}

	done := b.post(action, url.Values{"csrf": {csrf}, "confirm": {"yes"}, "credential": {user}})
	if done.status != http.StatusOK || !strings.Contains(string(done.body), "Revoked OAuth grant "+apiGrant) {
		t.Fatalf("revoke: %d\n%s", done.status, messageOf(done.body))
	}
	if r := h.do(http.MethodGet, "/v1/credentials/me", token, nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("the revoked grant's token: %d %s, want 401", r.status, r.body)
	}
	listTools(t, s) // the MCP client's grant still works
	after := h.operatorJSON(http.MethodGet, path, "")
	for _, g := range after.get("oauth_grants").([]any) {
		m := g.(map[string]any)
		if want := map[bool]string{true: "revoked", false: "active"}[m["id"] == apiGrant]; m["status"] != want {
			t.Errorf("grant %v is %v, want %s", m["id"], m["status"], want)
		}
	}
	dash := b.get("/operator")
	if !strings.Contains(string(dash.body), "oauth_grant.revoked") || !strings.Contains(string(dash.body), "operator:root") {
		t.Errorf("the trail does not show the revocation by root")
	}
	if !strings.Contains(string(dash.body), `<div class="said">person <bdi>ann@example.com</bdi></div>`) {
		t.Errorf("the credentials list does not say who the user is")
	}
	// Revoking it again changes nothing and says so as done.
	if r := h.operatorJSON(http.MethodDelete, "/v1/operator/oauth-grants/"+apiGrant, ""); r.status != http.StatusOK || r.str("revoked.status") != "revoked" {
		t.Errorf("revoke again: %d %s", r.status, r.body)
	}
}
