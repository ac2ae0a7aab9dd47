package stack

import (
	"net/http"
	"strings"
	"testing"
)

// The findings of the attack on the local stack (issue 11): each row is a
// call that once ran, or answered 500, and must now be refused or
// escalated with nothing sent upstream.
func TestAttackFindings(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	payments := func(body string) string {
		return `{"connection":"crm","method":"POST","path":"/payments","intent":"write","body":` + body + `}`
	}
	rows := []struct {
		name          string
		key           string
		method, path  string
		body          string
		headers       map[string]string
		status        int
		code          string
		reasonContain string
	}{
		{name: "case-variant key over the threshold", key: "cs_test_run", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 5, "Amount": 99999}`), status: 403, code: "review_required", reasonContain: "99999"},
		{name: "case-variant key over REST", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `{"amount": 5, "AMOUNT": 99999}`, headers: map[string]string{"Content-Type": "application/json"}, status: 403, code: "review_required"},
		{name: "trailing } over REST", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `{"amount": 99999}}`, headers: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request", reasonContain: "trailing"},
		{name: "form-encoded body over the threshold", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `amount=99999`, headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 403, code: "review_required"},
		{name: "a body the threshold cannot read", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `amount is 99999`, headers: map[string]string{"Content-Type": "text/plain"}, status: 403, code: "review_required", reasonContain: "could not be checked"},
		{name: "a JSON body with no content type", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `{"amount": 99999}`, status: 403, code: "review_required"},
		{name: "duplicate key in /v1/calls", key: "cs_test_run", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 99999, "amount": 5}`), status: 400, code: "invalid_request", reasonContain: "duplicate"},
		{name: "duplicate key deep inside", key: "cs_test_ask", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 5, "meta": {"a": 1, "a": 2}}`), status: 400, code: "invalid_request", reasonContain: "duplicate"},
		{name: "duplicate key over REST", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/payments",
			body: `{"amount": 99999, "amount": 5}`, headers: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request"},
		{name: "1e400 on the pause path", key: "cs_test_ask", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 1e400}`), status: 400, code: "invalid_request", reasonContain: "number"},
		{name: "an integer beyond 2^53", key: "cs_test_ask", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 5, "ref": 9007199254740993}`), status: 400, code: "invalid_request", reasonContain: "9007199254740993"},
		{name: "deep nesting", key: "cs_test_ask", method: "POST", path: "/v1/calls",
			body: payments(`{"amount": 5, "x": ` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`), status: 400, code: "invalid_request", reasonContain: "deep"},
		{name: "Intent in the wrong case", key: "cs_test_run", method: "POST", path: "/v1/calls",
			body: `{"connection":"crm","method":"GET","path":"/contacts/12","Intent":"read"}`, status: 400, code: "invalid_request", reasonContain: "Intent"},
		{name: "intent twice", key: "cs_test_run", method: "POST", path: "/v1/calls",
			body: `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"read","intent":"write"}`, status: 400, code: "invalid_request", reasonContain: "intent"},
		{name: "a method override in the query", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/contacts?_method=DELETE",
			body: `{"name":"x"}`, headers: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request", reasonContain: "_method"},
		{name: "a bracketed method override in the query", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/contacts?_method%5B%5D=DELETE",
			body: `{"name":"x"}`, headers: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request", reasonContain: "_method"},
		{name: "a dotted method override in the query", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/contacts?_Method.x=DELETE",
			body: `{"name":"x"}`, headers: map[string]string{"Content-Type": "application/json"}, status: 400, code: "invalid_request", reasonContain: "_method"},
		{name: "a method override in a form", key: "cs_test_run", method: "POST", path: "/v1/rest/crm/contacts",
			body: `name=x&_METHOD=DELETE`, headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 400, code: "invalid_request"},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.key, strings.NewReader(tt.body), tt.headers)
			expect(t, r, tt.status, tt.code)
			if !strings.Contains(r.str("reason"), tt.reasonContain) {
				t.Errorf("reason %q does not say %q", r.str("reason"), tt.reasonContain)
			}
		})
	}
	if got := h.upstream.Requests(); len(got) != 0 {
		t.Errorf("the upstream received %d requests, the first %s %s", len(got), got[0].Method, got[0].Path)
	}
}

// TestOverrideHeadersNeverForwarded: headers that would make an upstream run
// another operation than the one decided never reach it over REST.
func TestOverrideHeadersNeverForwarded(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	headers := map[string]string{
		"X-HTTP-Method-Override": "DELETE", "X-HTTP-Method": "DELETE", "X-Method-Override": "DELETE",
		"X-Original-URL": "/accounts/2", "X-Rewrite-URL": "/accounts/2", "X-Forwarded-For": "10.0.0.1",
		"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "X-Forwarded-Prefix": "/admin",
		"Forwarded": "for=10.0.0.1;host=evil.example", "X-Real-IP": "10.0.0.1", "Accept": "application/kept",
	}
	r := h.do(http.MethodGet, "/v1/rest/crm/contacts/12", "cs_test_run", nil, headers)
	expect(t, r, 200, "")
	got := h.upstream.Requests()
	if len(got) != 1 {
		t.Fatalf("upstream saw %d requests", len(got))
	}
	for name := range headers {
		if v := got[0].Header.Get(name); (name == "Accept") != (v != "") {
			t.Errorf("%s reached the upstream as %q", name, v)
		}
	}
}

// TestForeignConfirmationOverHTTP: a key that needs no confirmation cannot
// run a call under another credential's approval.
func TestForeignConfirmationOverHTTP(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact12)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	for _, key := range []string{"cs_test_run", "cs_test_agent"} {
		expect(t, h.call(key, redeemOf(deleteContact12, id)), 403, "confirmation_mismatch")
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}
