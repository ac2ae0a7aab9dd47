package stack

import (
	"net/http"
	"testing"
)

// TestEditValueNotValidText is an edit whose JSON value is not valid
// I-JSON text (RFC 7493): invalid UTF-8, or an escaped lone surrogate, in
// the form's raw value. Decoding would run a replacement character while
// the record kept the bytes posted, so the edit recorded (and shown to
// the agent, in the audit trail) would differ from the call that runs.
// It is refused (400 invalid_edit), nothing is decided and the person may
// still approve.
func TestEditValueNotValidText(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	for _, v := range []string{"\"acct\xff\"", `"acct\ud800"`, `"\udc00x"`} {
		expect(t, h.postEdit(link, map[string]string{"edit.0.body.to": v}), http.StatusBadRequest, "invalid_edit")
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%q: the confirmation is %s, want pending", v, st)
		}
	}
	expect(t, h.postEdit(link, map[string]string{"edit.0.body.to": `"acct\u0039"`}), http.StatusOK, "")
}
