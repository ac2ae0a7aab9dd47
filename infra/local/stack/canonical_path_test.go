package stack

import (
	"net/http"
	"strings"
	"testing"
)

// TestCanonicalEncodedLiteral: /contacts/%61ll is /contacts/all to the
// upstream (PATH_INFO is decoded), so it is decided as the literal (never,
// blocked) on every surface, not as /contacts/{id} (confirm), which a
// run-without-asking key would run and an ask_person key would put to a
// person.
func TestCanonicalEncodedLiteral(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))

	expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi/contacts/%61ll", "cs_test_run", "", ""), http.StatusForbidden, "blocked")
	w.none(t, n, "REST DELETE /contacts/%61ll")

	call := map[string]any{"connection": "wsgi", "method": "DELETE", "path": "/contacts/%61ll", "intent": "write"}
	expect(t, h.call("cs_test_run", call), http.StatusForbidden, "blocked")
	expect(t, h.call("cs_test_ask", call), http.StatusForbidden, "blocked")
	w.none(t, n, "/v1/calls DELETE /contacts/%61ll")

	r := h.script("cs_test_run", `call('wsgi', 'DELETE', '/contacts/%61ll')`, "")
	expect(t, r, http.StatusOK, "")
	if r.str("calls.0.state") != "denied" || r.str("result.code") != "blocked" {
		t.Fatalf("code mode: %s", r.body)
	}
	w.none(t, n, "code mode DELETE /contacts/%61ll")

	// The same spelling reaches the literal in one form: %2D is -, an
	// unreserved character, and the upstream gets the decoded form.
	expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi/contacts/a%2Db", "cs_test_run", "", ""), http.StatusOK, "")
	got := w.requests(t)
	if len(got) != n+1 || got[n].Path != "/contacts/a-b" {
		t.Fatalf("upstream saw %+v, want one DELETE /contacts/a-b", got[n:])
	}
}

// TestCanonicalCaseTwin: /contacts/ALL takes /contacts/{id} here but runs
// /contacts/all on a router that ignores case: it is decided at the
// stricter of the two (never). An ordinary id still takes {id}.
func TestCanonicalCaseTwin(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	for _, p := range []string{"/contacts/ALL", "/contacts/All", "/contacts/%41LL"} {
		expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi"+p, "cs_test_run", "", ""), http.StatusForbidden, "blocked")
		expect(t, h.call("cs_test_ask", map[string]any{"connection": "wsgi", "method": "DELETE", "path": p, "intent": "write"}), http.StatusForbidden, "blocked")
	}
	w.none(t, n, "DELETE /contacts/ALL")
	expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi/contacts/12", "cs_test_run", "", ""), http.StatusOK, "")
	if got := w.requests(t); len(got) != n+1 || got[n].Path != "/contacts/12" {
		t.Fatalf("upstream saw %+v, want one DELETE /contacts/12", got[n:])
	}
}

// TestCanonicalTwinSpellings: the spellings other routers reduce to the
// literal /contacts/all (a format suffix for Rails and Spring, trailing
// dots and spaces for IIS, full-width letters for NFKC) are decided at
// the literal's tier (never), and a double-encoded escape, which a
// second decoding turns into another character (%2561ll is all, %252F a
// slash), is refused; the upstream gets nothing.
func TestCanonicalTwinSpellings(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	for _, p := range []string{"/contacts/all.json", "/contacts/ALL.xml", "/contacts/all.", "/contacts/all%20", "/contacts/%EF%BD%81%EF%BD%8C%EF%BD%8C"} {
		expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi"+p, "cs_test_run", "", ""), http.StatusForbidden, "blocked")
		expect(t, h.call("cs_test_ask", map[string]any{"connection": "wsgi", "method": "DELETE", "path": p, "intent": "write"}), http.StatusForbidden, "blocked")
	}
	for _, p := range []string{"/contacts/%2561ll", "/contacts/12%252Fowner"} {
		expect(t, h.restRaw(http.MethodDelete, "/v1/rest/wsgi"+p, "cs_test_run", "", ""), http.StatusBadRequest, "invalid_request")
		expect(t, h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "DELETE", "path": p, "intent": "write"}), http.StatusBadRequest, "invalid_request")
	}
	w.none(t, n, "a twin spelling of /contacts/all or a double-encoded escape")
}

// TestCanonicalSemicolon: Tomcat and Spring read /contacts/all;x as
// /contacts/all with a path parameter, so a ; in a segment, raw or
// encoded, is refused with 400 naming the segment.
func TestCanonicalSemicolon(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	for _, p := range []string{"/contacts/all;x", "/contacts/all%3Bx", "/contacts/all%3bx"} {
		r := h.restRaw(http.MethodDelete, "/v1/rest/wsgi"+p, "cs_test_run", "", "")
		expect(t, r, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(r.str("reason"), "all") || !strings.Contains(r.str("reason"), ";") {
			t.Errorf("reason %q does not name the segment", r.str("reason"))
		}
		expect(t, h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "DELETE", "path": p, "intent": "write"}), http.StatusBadRequest, "invalid_request")
	}
	for _, p := range []string{`/contacts/a\b`, "/contacts/a%5Cb", "/contacts/a%00", "/contacts/a%0A", "/contacts/%FF"} {
		expect(t, h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "DELETE", "path": p, "intent": "write"}), http.StatusBadRequest, "invalid_request")
	}
	w.none(t, n, "a path with ;, \\, NUL, a control character or invalid UTF-8")
}

// TestCanonicalEncodedSlash: PATCH /contacts/12%2Fowner is PATCH
// /contacts/12/owner to a WSGI upstream, an endpoint the policy does not
// list: refused with 400 on every surface, and the upstream gets nothing.
// A parameter that opts in (encoded_slash_params) may hold one.
func TestCanonicalEncodedSlash(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	body := `{"owner": "mallory"}`
	for _, p := range []string{"/contacts/12%2Fowner", "/contacts/12%2fowner"} {
		r := h.restRaw(http.MethodPatch, "/v1/rest/wsgi"+p, "cs_test_run", body, "application/json")
		expect(t, r, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(r.str("reason"), "12%2Fowner") {
			t.Errorf("reason %q does not name the segment", r.str("reason"))
		}
		expect(t, h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "PATCH", "path": p, "intent": "write",
			"body": map[string]any{"owner": "mallory"}}), http.StatusBadRequest, "invalid_request")
	}
	r := h.script("cs_test_run", `call('wsgi', 'PATCH', '/contacts/12%2Fowner', {body: {owner: 'mallory'}})`, "")
	expect(t, r, http.StatusOK, "")
	if r.str("result.error") != "invalid_request" || !strings.Contains(r.str("result.reason"), "encoded slash") {
		t.Errorf("code mode: %s", r.body)
	}
	s := h.mcpSession("cs_test_run", clientKind{}, nil)
	res := callTool(t, s, "wsgi__patch_contacts_by_id", map[string]any{"id": "12/owner", "body": map[string]any{"owner": "mallory"}}, nil)
	if !res.IsError || !strings.Contains(text(res), "must not contain /") {
		t.Errorf("MCP answer %q", text(res))
	}
	w.none(t, n, "PATCH /contacts/12%2Fowner")

	// The opt-in: {key} of GET /files/{key} may hold %2F.
	expect(t, h.restRaw(http.MethodGet, "/v1/rest/wsgi/files/reports%2f2026.csv", "cs_test_run", "", ""), http.StatusOK, "")
	if got := w.requests(t); len(got) != n+1 || got[n].Path != "/files/reports/2026.csv" {
		t.Fatalf("upstream saw %+v, want one GET /files/reports/2026.csv", got[n:])
	}
}

// TestCanonicalSameBytes: a call spelled /contacts/%31%32 is bound, shown
// to the person and sent upstream as /contacts/12, and the approval is
// redeemed by the same call in either spelling.
func TestCanonicalSameBytes(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	call := map[string]any{"connection": "wsgi", "method": "DELETE", "path": "/contacts/%31%32", "intent": "write"}
	r := h.call("cs_test_ask", call)
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	if !strings.HasSuffix(r.str("preview.url"), "/contacts/12") {
		t.Errorf("preview.url %q, want it to end with /contacts/12", r.str("preview.url"))
	}
	link := h.approvalLink(id)
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	if !strings.Contains(string(page.body), "/contacts/12") || strings.Contains(string(page.body), "%31") {
		t.Errorf("the page does not show /contacts/12 as sent:\n%s", page.body)
	}
	expect(t, h.press(page, "approve"), http.StatusOK, "")
	call["intent"], call["confirmation_id"], call["path"] = "confirmed_write", id, "/contacts/12"
	expect(t, h.call("cs_test_ask", call), http.StatusOK, "")
	if got := w.requests(t); len(got) != n+1 || got[n].Path != "/contacts/12" || got[n].Method != "DELETE" {
		t.Fatalf("upstream saw %+v, want one DELETE /contacts/12", got[n:])
	}
}
