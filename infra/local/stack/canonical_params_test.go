package stack

import (
	"net/http"
	"strings"
	"testing"
)

// TestCanonicalQueryNames: PHP reads " amount" and "amount\x00" as amount,
// so a query name with leading or trailing space, a + or a control
// character would pass a query.amount threshold: 400 over REST and in the
// /v1/calls envelope; the upstream gets nothing. The plain name is checked.
func TestCanonicalQueryNames(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	for _, q := range []string{"%20amount=500", "amount%00=500", "+amount=500", "amount%20=500", "amount%2B=500", "amount%0A=500"} {
		expect(t, h.restRaw(http.MethodGet, "/v1/rest/wsgi/payments?"+q, "cs_test_run", "", ""), http.StatusBadRequest, "invalid_request")
	}
	for _, name := range []string{" amount", "amount\x00", "amount ", "+amount", "am\tount"} {
		r := h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "GET", "path": "/payments", "intent": "read",
			"query": map[string]any{name: "500"}})
		expect(t, r, http.StatusBadRequest, "invalid_request")
	}
	r := h.script("cs_test_run", `call('wsgi', 'GET', '/payments', {query: {' amount': '500'}})`, "")
	expect(t, r, http.StatusUnprocessableEntity, "script_error")
	if !strings.Contains(r.str("reason"), `" amount"`) {
		t.Errorf("code mode: %s", r.body)
	}
	w.none(t, n, "a query name PHP reads as amount")

	expect(t, h.restRaw(http.MethodGet, "/v1/rest/wsgi/payments?amount=500", "cs_test_run", "", ""), http.StatusForbidden, "review_required")
	expect(t, h.restRaw(http.MethodGet, "/v1/rest/wsgi/payments?amount=50", "cs_test_run", "", ""), http.StatusOK, "")
	if got := w.requests(t); len(got) != n+1 || got[n].Values["amount"] != "50" {
		t.Fatalf("upstream saw %+v, want one GET /payments?amount=50", got[n:])
	}
}

// TestCanonicalBodyFieldInQuery: Flask's request.values, Rails' params and
// PHP's $_REQUEST merge the query with the body, so a body.amount
// threshold reads ?amount= too: POST /payments?amount=99999 with no body
// escalates, over REST and /v1/calls, and the upstream gets nothing.
func TestCanonicalBodyFieldInQuery(t *testing.T) {
	h, w := newWSGIHarness(t)
	n := len(w.requests(t))
	expect(t, h.restRaw(http.MethodPost, "/v1/rest/wsgi/payments?amount=99999", "cs_test_run", "", ""), http.StatusForbidden, "review_required")
	expect(t, h.restRaw(http.MethodPost, "/v1/rest/wsgi/payments?amount=99999", "cs_test_run", "currency=EUR", "application/x-www-form-urlencoded"), http.StatusForbidden, "review_required")
	expect(t, h.restRaw(http.MethodPost, "/v1/rest/wsgi/payments?amount=99999", "cs_test_run", `{"amount": 5}`, "application/json"), http.StatusForbidden, "review_required")
	expect(t, h.call("cs_test_run", map[string]any{"connection": "wsgi", "method": "POST", "path": "/payments", "intent": "write",
		"query": map[string]any{"amount": "99999"}}), http.StatusForbidden, "review_required")
	r := h.script("cs_test_run", `call('wsgi', 'POST', '/payments', {query: {amount: 99999}})`, "")
	expect(t, r, http.StatusOK, "")
	if r.str("calls.0.state") != "denied" || r.str("result.code") != "review_required" {
		t.Fatalf("code mode: %s", r.body)
	}
	w.none(t, n, "POST /payments?amount=99999")

	// Under the limit in both, it runs; the upstream reads the merged values.
	expect(t, h.restRaw(http.MethodPost, "/v1/rest/wsgi/payments?amount=50", "cs_test_run", "amount=60", "application/x-www-form-urlencoded"), http.StatusOK, "")
	if got := w.requests(t); len(got) != n+1 || got[n].Values["amount"] != "60" {
		t.Fatalf("upstream saw %+v, want one POST /payments", got[n:])
	}
}
