package stack

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/notify"
)

// showPolicy is a connection whose contact writes show the contact as it
// is now (policy.json "show"), on the harness's demo CRM.
const showPolicy = `{
  "base_url": "%UPSTREAM%",
  "headers": {"X-Upstream-Token": "shown-secret"},
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "PATCH",  "path": "/contacts/{id}", "confirm": true, "show": {"path": "/contacts/{id}"}},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "show": {"path": "/contacts/{id}"}},
    {"method": "DELETE", "path": "/accounts/{id}", "confirm": true, "show": {"path": "/accounts/{id}", "recheck": false}},
    {"method": "GET",    "path": "/accounts/{id}"}
  ]
}`

func showHarness(t testing.TB) *harness {
	return newHarness(t, harnessOptions{files: map[string]string{"connections/shown/policy.json": showPolicy}})
}

var (
	deleteShown12 = map[string]any{"connection": "shown", "method": "DELETE", "path": "/contacts/12", "intent": "write"}
	// changeContact12 changes contact 12 through the auto-tier PATCH of
	// the crm connection: another agent at work.
	changeContact12 = map[string]any{"connection": "crm", "method": "PATCH", "path": "/contacts/12", "intent": "write",
		"body": map[string]any{"email": "jm@lisp.example"}}
)

// TestShowDelete: a paused DELETE carries the contact as it is now in
// GET /v1/confirmations/<id>, the confirmation.requested webhook and the
// page; the read was made as the connection, once, before anyone was asked.
func TestShowDelete(t *testing.T) {
	h := showHarness(t)
	id, link := h.pause("cs_test_ask", deleteShown12)

	ev := h.webhook.waitEvent(t, notify.TypeRequested, id)
	op := ev.Confirmation.Operations[0]
	if want := "Delete contact 12, John McCarthy <john.mccarthy@example.com>"; op.Summary != want {
		t.Errorf("webhook summary %q, want %q", op.Summary, want)
	}
	var cur map[string]any
	if err := json.Unmarshal(op.Current, &cur); err != nil || cur["status"] != float64(200) || !strings.Contains(string(op.Current), `"open_payments"`) {
		t.Errorf("webhook current = %s (%v)", op.Current, err)
	}

	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, st, 200, "")
	if st.get("operations.0.current.status") != float64(200) || st.str("operations.0.current.body.name") != "John McCarthy" ||
		st.str("operations.0.current.read_at") == "" || st.get("operations.0.current.body.open_payments.0.amount") == nil {
		t.Errorf("status current = %s", st.body)
	}
	if strings.Contains(string(st.body), "sha256") || strings.Contains(string(st.body), "etag") {
		t.Errorf("the status shows what only the recheck reads: %s", st.body)
	}
	// The read went to the upstream once, as the connection.
	reads := 0
	for _, r := range h.upstream.Requests() {
		if r.Method == "GET" && r.Path == "/contacts/12" {
			reads++
			if r.Header.Get("X-Upstream-Token") != "shown-secret" || r.Header.Get("Authorization") != "" {
				t.Errorf("the read's headers %v, want the connection's only", r.Header)
			}
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of /contacts/12 before anyone answered, want 1", reads)
	}

	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, 200, "")
	for _, want := range []string{">Now<", "John McCarthy", "inv_103", "Delete contact 12, John McCarthy"} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestShowRecheckRedeem: the contact changed between the approval and the
// redemption: 409 resource_changed, and the upstream got no write.
// Unchanged: it runs once.
func TestShowRecheckRedeem(t *testing.T) {
	h := showHarness(t)

	id, link := h.pause("cs_test_ask", deleteShown12)
	expect(t, h.post(link, "approve", nil, ""), 200, "")
	expect(t, h.call("cs_test_run", changeContact12), 200, "")
	r := h.call("cs_test_ask", redeemOf(deleteShown12, id))
	expect(t, r, http.StatusConflict, "resource_changed")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Fatalf("the upstream got %d deletes of a contact that changed", n)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.str("operations.0.outcome.error") != "resource_changed" || st.str("status") != "failed" {
		t.Errorf("after the recheck: %s", st.body)
	}
	// The approval is spent: nothing runs it later.
	expect(t, h.call("cs_test_ask", redeemOf(deleteShown12, id)), http.StatusConflict, "confirmation_used")

	// Asked again, unchanged: it runs, once.
	id2, link2 := h.pause("cs_test_ask", deleteShown12)
	page := h.do(http.MethodGet, link2, "", nil, nil)
	if !strings.Contains(string(page.body), "jm@lisp.example") {
		t.Errorf("the second page does not show the contact as it is now")
	}
	expect(t, h.post(link2, "approve", nil, ""), 200, "")
	expect(t, h.call("cs_test_ask", redeemOf(deleteShown12, id2)), 200, "")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Fatalf("%d deletes, want 1", n)
	}
}

// TestShowPatchChanges: a PATCH shows each changed field, from and to.
func TestShowPatchChanges(t *testing.T) {
	h := showHarness(t)
	call := map[string]any{"connection": "shown", "method": "PATCH", "path": "/contacts/12", "intent": "write",
		"body": map[string]any{"email": "jm@lisp.example", "company": "Stanford"}}
	id, link := h.pause("cs_test_ask", call)
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	var got struct {
		Operations []struct {
			Changes []map[string]any `json:"changes"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(st.body, &got); err != nil || len(got.Operations) != 1 {
		t.Fatalf("status %s: %v", st.body, err)
	}
	want := `[{"field":"company","from":"Contoso","to":"Stanford"},{"field":"email","from":"john.mccarthy@example.com","to":"jm@lisp.example"}]`
	if b, _ := json.Marshal(got.Operations[0].Changes); string(b) != want {
		t.Errorf("changes %s, want %s", b, want)
	}
	page := h.do(http.MethodGet, link, "", nil, nil)
	for _, w := range []string{"Contoso", "Stanford", "john.mccarthy@example.com", "jm@lisp.example", "Update contact 12"} {
		if !strings.Contains(string(page.body), w) {
			t.Errorf("page lacks %q", w)
		}
	}
	expect(t, h.post(link, "approve", nil, ""), 200, "")
	expect(t, h.call("cs_test_ask", redeemOf(call, id)), 200, "")
	if c, _ := h.upstream.Contact(12); c.Email != "jm@lisp.example" {
		t.Errorf("contact after the patch: %+v", c)
	}
}

// TestShowReadFails: a read that answers 404 is shown as such, and the
// recheck off runs the write whatever the resource became.
func TestShowReadFails(t *testing.T) {
	h := showHarness(t)
	call := map[string]any{"connection": "shown", "method": "DELETE", "path": "/accounts/99", "intent": "write"}
	id, link := h.pause("cs_test_ask", call)
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.get("operations.0.current.status") != float64(404) {
		t.Errorf("current of a missing account: %s", st.body)
	}
	page := h.do(http.MethodGet, link, "", nil, nil)
	if !strings.Contains(string(page.body), "404") {
		t.Errorf("the page does not say the read answered 404")
	}
	expect(t, h.post(link, "approve", nil, ""), 200, "")
	r := h.call("cs_test_ask", redeemOf(call, id))
	if r.status != 404 && r.status != 200 { // the upstream's own answer to the write
		t.Errorf("redeem: %d %s", r.status, r.body)
	}
	if n := h.upstream.Count("DELETE", "/accounts/99"); n != 1 {
		t.Errorf("%d deletes with the recheck off, want 1", n)
	}
}
