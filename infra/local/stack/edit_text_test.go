package stack

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"testing"
)

// TestEditValueNotValidText is an edit whose JSON value is not valid
// I-JSON text (RFC 7493): invalid UTF-8, or an escaped lone surrogate, in
// the form's raw value. Decoding would run a replacement character while
// the record kept the bytes posted, so the edit recorded (and shown to
// the agent, in the audit trail) would differ from the call that runs.
// It is refused (400: invalid_request for a form that is not UTF-8,
// invalid_edit for an escaped lone surrogate), nothing is decided and the
// person may still approve.
func TestEditValueNotValidText(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	for v, code := range map[string]string{"\"acct\xff\"": "invalid_request", `"acct\ud800"`: "invalid_edit", `"\udc00x"`: "invalid_edit"} {
		expect(t, h.postEdit(link, map[string]string{"edit.0.body.to": v}), http.StatusBadRequest, code)
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%q: the confirmation is %s, want pending", v, st)
		}
	}
	expect(t, h.postEdit(link, map[string]string{"edit.0.body.to": `"acct\u0039"`}), http.StatusOK, "")
}

// TestEditInputHoldsTheValue is an editable string the page's text input
// cannot hold as it is: html/template writes a NUL as U+FFFD, and a
// browser strips a text input's line breaks (the HTML value sanitization
// algorithm). Offered, the person's Approve would post the altered text
// as an edit nobody made, and it would run. Such a field is not offered;
// pressing Approve approves the agent's call unedited.
func TestEditInputHoldsTheValue(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	for _, to := range []string{"acct\x007", "acct\n7", "acct\r\n7"} {
		call := payEdit(900)
		call["body"].(map[string]any)["to"] = to
		id, link := h.pause("cs_test_ask", call)
		page := h.do(http.MethodGet, link, "", nil, nil)
		expect(t, page, http.StatusOK, "")
		action, form := pageForm(t, page, "approve")
		for _, in := range inputRe.FindAllSubmatch(page.body, -1) {
			attrs := map[string]string{}
			for _, a := range attrRe.FindAllSubmatch(in[1], -1) {
				attrs[string(a[1])] = html.UnescapeString(string(a[2]))
			}
			switch attrs["type"] {
			case "text":
				// What a browser posts of a text input: its line breaks stripped.
				form.Set(attrs["name"], strings.NewReplacer("\r", "", "\n", "").Replace(attrs["value"]))
			case "number":
				form.Set(attrs["name"], attrs["value"])
			}
		}
		r := h.do(http.MethodPost, action, "", strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
		expect(t, r, http.StatusOK, "")
		if st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil); bytes.Contains(st.body, []byte(`"edited"`)) {
			t.Errorf("to %q: approving as the page stood recorded an edit nobody made: %s", to, st.body)
		}
	}
}

// TestEditNumberPastADouble: an edit to a number no double holds (1e400,
// -1e400, 1e-400) is valid JSON, so it is refused saying why (out of a
// double's range, or it does not survive the body's round trip), not as
// "not JSON"; nothing is decided.
func TestEditNumberPastADouble(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	for _, v := range []string{"1e400", "-1e400", "1e-400"} {
		path, body := approveJSONBody(t, link, map[string]any{"edits": []map[string]any{{"op": 0, "field": "body.amount", "value": json.RawMessage(v)}}})
		for _, r := range []result{h.postJSON(path, body), h.postEdit(link, map[string]string{"edit.0.body.amount": v})} {
			expect(t, r, http.StatusBadRequest, "invalid_edit")
			if reason := r.str("reason"); strings.Contains(reason, "not JSON") || !strings.Contains(reason, "range") && !strings.Contains(reason, "round trip") {
				t.Errorf("%s: the reason %q, want the number's range or round trip named", v, reason)
			}
		}
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s: the confirmation is %s, want pending", v, st)
		}
	}
}
