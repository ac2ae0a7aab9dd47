package stack

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// approveJSONBody is the approve POST's JSON body for link: its signed
// fields, decision approve, and the members given (replacing any).
func approveJSONBody(tb testing.TB, link string, members map[string]any) (string, []byte) {
	tb.Helper()
	u, err := url.Parse(link)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	body := map[string]any{"a": q.Get("a"), "exp": exp, "kid": q.Get("kid"), "sig": q.Get("sig"), "decision": "approve"}
	for k, v := range members {
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return u.Path, b
}

// postJSON posts body to path as JSON, asking for JSON.
func (h *harness) postJSON(path string, body []byte) result {
	h.t.Helper()
	return h.do(http.MethodPost, path, "", bytes.NewReader(body),
		map[string]string{"Content-Type": "application/json; charset=utf-8", "Accept": "application/json"})
}

// TestEditAndApproveJSON is edit and approve with the approve POST's JSON
// body through the real routes: a body that is not exactly an approval
// (unknown member, a name twice, trailing bytes, invalid UTF-8, a wrong
// type, null, too large), a bad signature, an unlisted field, a type
// change and an edit over the review threshold (422) decide nothing and
// run nothing; approved with the amount edited from 900 to 500, the agent's
// redemption with its 900 says edited and the upstream receives 500, once.
func TestEditAndApproveJSON(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	path, good := approveJSONBody(t, link, map[string]any{"edits": []map[string]any{{"op": 0, "field": "body.amount", "value": 500}}})
	edit := func(field string, value any) []byte {
		_, b := approveJSONBody(t, link, map[string]any{"edits": []map[string]any{{"op": 0, "field": field, "value": value}}})
		return b
	}
	_, badSig := approveJSONBody(t, link, map[string]any{"sig": strings.Repeat("A", 43)})
	_, asString := approveJSONBody(t, link, map[string]any{"op": "0"})
	goodText := string(good)
	for _, c := range []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"unknown member", []byte(strings.Replace(goodText, `"decision"`, `"decison":"approve","decision"`, 1)), 400, "invalid_request"},
		{"a name twice", []byte(strings.Replace(goodText, `"decision":"approve"`, `"decision":"reject","decision":"approve"`, 1)), 400, "invalid_request"},
		{"trailing bytes", []byte(goodText + ` {"decision":"reject"}`), 400, "invalid_request"},
		{"invalid UTF-8", []byte(strings.Replace(goodText, `"decision"`, "\"reason\":\"\xff\",\"decision\"", 1)), 400, "invalid_request"},
		{"a wrong type", asString, 400, "invalid_request"},
		{"null", []byte(strings.Replace(goodText, `"decision"`, `"op":null,"decision"`, 1)), 400, "invalid_request"},
		{"not JSON", []byte("decision=approve"), 400, "invalid_request"},
		{"too large", []byte(strings.Replace(goodText, `"decision"`, `"reason":"`+strings.Repeat("x", 70<<10)+`","decision"`, 1)), 413, "payload_too_large"},
		{"bad signature", badSig, 403, "bad_signature"},
		{"unlisted field", edit("body.currency", "USD"), 400, "invalid_edit"},
		{"type change", edit("body.amount", "500"), 400, "invalid_edit"},
		{"path parameter", edit("path.id", "1"), 400, "invalid_edit"},
		{"over the threshold", edit("body.amount", 20000), 422, "edit_escalated"},
	} {
		expect(t, h.postJSON(path, c.body), c.status, c.code)
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s: the confirmation is %s, want pending", c.name, st)
		}
	}
	if n := h.upstream.Count("POST", "/payments"); n != 0 {
		t.Fatalf("a refused approval reached the upstream (%d calls)", n)
	}

	r := h.postJSON(path, good)
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "approved" {
		t.Fatalf("approve with a JSON edit: %s", r.body)
	}
	// The agent redeems the call it made: 900; the edited call runs.
	red := h.call("cs_test_ask", redeemOf(payEdit(900), id))
	expect(t, red, http.StatusOK, "")
	if red.get("edited") != true || red.get("arguments.body.amount") != float64(500) {
		t.Fatalf("the redemption's answer: %s", red.body)
	}
	pays := h.upstream.Payments()
	if len(pays) != 1 || pays[0].Amount.String() != "500" {
		t.Fatalf("the upstream's payments: %+v", pays)
	}
	expect(t, h.call("cs_test_ask", redeemOf(payEdit(900), id)), http.StatusConflict, "confirmation_used")
	// Decided: another JSON approval is refused and runs nothing, with
	// edits (they need a pending confirmation) or without.
	expect(t, h.postJSON(path, good), http.StatusBadRequest, "invalid_edit")
	_, plain := approveJSONBody(t, link, nil)
	expect(t, h.postJSON(path, plain), http.StatusConflict, "confirmation_decided")
	if n := h.upstream.Count("POST", "/payments"); n != 1 {
		t.Errorf("POST /payments reached the upstream %d times", n)
	}
}

// TestApproveJSONCSRF: the JSON body passes the form's CSRF rule (one
// path decides both): with a signed-in approver's session cookie, JSON
// from another Origin or site, or without the page's CSRF token, or with
// another confirmation's, is refused and the call stays pending; with the
// page's token it decides, and names the person.
func TestApproveJSONCSRF(t *testing.T) {
	h := newHarness(t, harnessOptions{approverSignIn: "optional"})
	id, link := pauseForApprovers(h)
	grace := newApproverBrowser(h, "grace@example.com")
	page := grace.open(link + "&signin=1")
	_, form := pageForm(t, page, "approve")
	if form.Get("csrf") == "" {
		t.Fatalf("grace's page has no CSRF token:\n%s", page.body)
	}
	path, _ := approveJSONBody(t, link, nil)
	post := func(members map[string]any, headers map[string]string) int {
		t.Helper()
		_, body := approveJSONBody(t, link, members)
		req, _ := http.NewRequest(http.MethodPost, h.stack.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := grace.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	token := map[string]any{"csrf": form.Get("csrf")}
	for _, c := range []struct {
		name    string
		members map[string]any
		headers map[string]string
	}{
		{"another Origin", token, map[string]string{"Origin": "https://evil.example"}},
		{"fetch metadata cross-site", token, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"the cookie and no token", nil, nil},
		{"the cookie and a forged token", map[string]any{"csrf": "x." + form.Get("csrf")}, nil},
	} {
		if st := post(c.members, c.headers); st != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, st)
		}
		if got := h.statusOf("cs_test_program", id); got != "pending" {
			t.Fatalf("%s: status %s, want pending", c.name, got)
		}
	}
	if st := post(token, map[string]string{"Origin": h.stack.URL}); st != http.StatusOK {
		t.Fatalf("JSON with the page's token: %d", st)
	}
	if got := h.statusOf("cs_test_program", id); got != "approved" {
		t.Fatalf("after the JSON approval: %s, want approved", got)
	}
}

// TestApproveRefusesOtherContentTypes: the approve POST is the form or
// JSON. The same fields as text/plain (JSON or form-encoded) or multipart
// are 400 invalid_request and decide nothing: JSON as text/plain used to
// be read as a form ("This link is not valid"), and form fields as
// text/plain decided. The form without a Content-Type still decides.
func TestApproveRefusesOtherContentTypes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/6", "intent": "write"})
	path, asJSON := approveJSONBody(t, link, nil)
	u, _ := url.Parse(link)
	form := u.Query()
	form.Set("decision", "approve")
	multipart := "--XyZ\r\nContent-Disposition: form-data; name=\"decision\"\r\n\r\napprove\r\n--XyZ--\r\n"
	for _, c := range []struct{ name, ct, body string }{
		{"JSON as text/plain", "text/plain", string(asJSON)},
		{"the form as text/plain", "text/plain; charset=utf-8", form.Encode()},
		{"multipart", "multipart/form-data; boundary=XyZ", multipart},
		{"JSON with a misspelt type", "application/jsn", string(asJSON)},
		{"a malformed type", "application/x-www-form-urlencoded; =", form.Encode()},
	} {
		r := h.do(http.MethodPost, path, "", strings.NewReader(c.body), map[string]string{"Content-Type": c.ct, "Accept": "application/json"})
		expect(t, r, http.StatusBadRequest, "invalid_request")
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s: the confirmation is %s, want pending", c.name, st)
		}
	}
	r := h.do(http.MethodPost, path, "", strings.NewReader(form.Encode()), map[string]string{"Accept": "application/json"})
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "approved" {
		t.Fatalf("the form without a Content-Type: %s", r.body)
	}
}
