package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store/embedded"
)

// editPolicy is a connection whose POST /payments lets the approver
// change the amount and the recipient, and escalates to review above 10000.
const editPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [
    {"method": "POST", "path": "/payments", "confirm": true,
     "escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}],
     "approval": {"editable": ["body.amount", "body.to"]}}
  ]
}`

func payEdit(amount int) map[string]any {
	return map[string]any{"connection": "pay", "method": "POST", "path": "/payments", "intent": "write",
		"body": map[string]any{"amount": amount, "currency": "EUR", "to": "acct_7"}}
}

// postEdit posts the approval form of link with decision approve and the
// edits given (edit.<op>.<field> = JSON value), asking for JSON.
func (h *harness) postEdit(link string, edits map[string]string) result {
	h.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		h.t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", "approve")
	for k, v := range edits {
		form.Set(k, v)
	}
	return h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
}

// TestEditAndApproveEndToEnd is edit and approve through the real routes:
// the page shows the editable fields as inputs; an unlisted field, a type
// change and an edit over the review threshold (422) decide nothing; the
// approver changes the amount from 900 to 500; GET shows both values and
// the decided event carries them; the agent redeems with its own 900 and
// the answer says edited with the arguments that ran; the upstream
// receives 500, once; a second redemption runs nothing.
func TestEditAndApproveEndToEnd(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	for _, want := range []string{`<input type="number" name="edit.0.body.amount" id="edit-0-0" step="any" value="900"`,
		`<input type="text" name="edit.0.body.to" id="edit-0-1" value="acct_7"`, `name="edit_form" value="page"`} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("the page lacks %s", want)
		}
	}

	for _, c := range []struct {
		name  string
		edits map[string]string
		code  string
	}{
		{"unlisted field", map[string]string{"edit.0.body.currency": `"USD"`}, "invalid_edit"},
		{"type change", map[string]string{"edit.0.body.amount": `"500"`}, "invalid_edit"},
		{"not JSON", map[string]string{"edit.0.body.amount": `five`}, "invalid_edit"},
		{"path parameter", map[string]string{"edit.0.path.id": `"1"`}, "invalid_edit"},
		{"no such operation", map[string]string{"edit.1.body.amount": `5`}, "invalid_edit"},
		{"over the threshold", map[string]string{"edit.0.body.amount": `20000`}, "edit_escalated"},
	} {
		r := h.postEdit(link, c.edits)
		want := http.StatusBadRequest
		if c.code == "edit_escalated" {
			want = http.StatusUnprocessableEntity
		}
		expect(t, r, want, c.code)
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s: the confirmation is %s, want pending", c.name, st)
		}
	}
	// A duplicate key.
	u, _ := url.Parse(link)
	form := u.Query()
	form.Set("decision", "approve")
	form["edit.0.body.amount"] = []string{"500", "400"}
	expect(t, h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}), http.StatusBadRequest, "invalid_edit")

	r := h.postEdit(link, map[string]string{"edit.0.body.amount": "500"})
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "approved" {
		t.Fatalf("approve with an edit: %s", r.body)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	var view struct {
		Operations []struct {
			Edited map[string]struct{ From, To json.RawMessage } `json:"edited"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(st.body, &view); err != nil || len(view.Operations) != 1 ||
		string(view.Operations[0].Edited["body.amount"].From) != "900" || string(view.Operations[0].Edited["body.amount"].To) != "500" {
		t.Fatalf("GET /v1/confirmations/%s: %s", id, st.body)
	}
	ev := h.webhook.waitEvent(t, notify.TypeDecided, id)
	if len(ev.Confirmation.Operations) != 1 || string(ev.Confirmation.Operations[0].Edited) != `{"body.amount":{"from":900,"to":500}}` {
		t.Errorf("the decided event's operation: %+v", ev.Confirmation.Operations)
	}

	// The agent redeems the call it made: 900; the edited call runs.
	red := h.call("cs_test_ask", redeemOf(payEdit(900), id))
	expect(t, red, http.StatusOK, "")
	if red.get("edited") != true || red.get("arguments.body.amount") != float64(500) || red.get("edits") == nil {
		t.Fatalf("the redemption's answer: %s", red.body)
	}
	pays := h.upstream.Payments()
	if len(pays) != 1 || pays[0].Amount.String() != "500" || pays[0].To != "acct_7" {
		t.Fatalf("the upstream's payments: %+v", pays)
	}
	// Once: a second redemption is refused and runs nothing; the edited
	// arguments are not what the agent's approval binds.
	expect(t, h.call("cs_test_ask", redeemOf(payEdit(900), id)), http.StatusConflict, "confirmation_used")
	if n := h.upstream.Count("POST", "/payments"); n != 1 {
		t.Errorf("POST /payments reached the upstream %d times", n)
	}

	// Redeemed with the edited arguments instead: refused, nothing runs.
	id2, link2 := h.pause("cs_test_ask", payEdit(900))
	expect(t, h.postEdit(link2, map[string]string{"edit.0.body.amount": "500"}), http.StatusOK, "")
	expect(t, h.call("cs_test_ask", redeemOf(payEdit(500), id2)), http.StatusForbidden, "confirmation_mismatch")
	if n := h.upstream.Count("POST", "/payments"); n != 1 {
		t.Errorf("a mismatched redemption reached the upstream (%d calls)", n)
	}

	// The trail records the edit with the approval.
	h.stop()
	db, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.ListAudit(context.Background(), countersign.AuditQuery{Chain: audit.ChainOf("chat-user")})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || r.Action == "confirmation.approved" && r.Subject == id && r.Reason == "edited body.amount 900 → 500"
	}
	if !found {
		t.Errorf("the trail has no approval of %s that says what was edited: %+v", id, recs)
	}
}

// TestApproveFormRefusesRepeatedFields: the approve form, like its JSON
// body, refuses a field the page sends once given twice (400
// invalid_request, nothing decided): decision=reject&decision=approve was
// read as its first value.
func TestApproveFormRefusesRepeatedFields(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/5", "intent": "write"})
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ field, first, second string }{
		{"decision", "approve", "reject"},
		{"decision", "reject", "approve"},
		{"decision", "approve", "approve"},
		{"a", u.Query().Get("a"), "someone"},
		{"sig", u.Query().Get("sig"), u.Query().Get("sig")},
		{"reason", "one", "two"},
		{"selection", "explicit", "explicit"},
	} {
		form := u.Query()
		form.Set("decision", "approve")
		form[c.field] = []string{c.first, c.second}
		r := h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
		expect(t, r, http.StatusBadRequest, "invalid_request")
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s twice: the confirmation is %s, want pending", c.field, st)
		}
	}
	r := h.postEdit(link, nil)
	expect(t, r, http.StatusOK, "")
	if r.str("status") != "approved" {
		t.Fatalf("a plain approval: %s", r.body)
	}
}
