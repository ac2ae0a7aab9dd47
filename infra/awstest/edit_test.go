package awstest

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// editConnection's POST /payments lets the approver edit body.amount; an
// amount above 10000 is escalated to review.
const editConnection = "editing"

func editPolicy(upstream string) map[string]any {
	return map[string]any{
		"base_url": upstream,
		"endpoints": []any{
			map[string]any{"method": "POST", "path": "/payments", "confirm": true,
				"approval": map[string]any{"editable": []any{"body.amount"}},
				"escalate": []any{map[string]any{"field": "body.amount", "above": 10000, "escalate": "review"}}},
		},
	}
}

// editAndApprove: an approver edits the amount on the approve function's
// page POST. An edit above the threshold is refused (422 edit_escalated)
// and changes nothing; 900 → 500 is approved, the confirm state machine
// told; the agent redeems with its original 900, the answer says edited,
// and the upstream receives 500, once. Then the same with a JSON body.
func editAndApprove(f *flow) {
	body := map[string]any{"amount": 900, "memo": "invoice 7"}
	pay := func(intent, id string) answer {
		req := map[string]any{"connection": editConnection, "method": "POST", "path": "/payments", "body": body, "intent": intent}
		if id != "" {
			req["confirmation_id"] = id
		}
		b, _ := json.Marshal(req)
		return f.do(http.MethodPost, "/v1/calls", http.Header{"Authorization": {"Bearer " + askKey}, "Content-Type": {"application/json"}}, string(b))
	}
	r := pay("write", "")
	f.expect("the payment pauses", r, http.StatusAccepted, "confirmation_required")
	c, _ := r.Body["confirmation"].(map[string]any)
	id, _ := c["id"].(string)
	link := f.link(id)
	if st, page := f.page(link); st != http.StatusOK || !strings.Contains(page, `name="edit.0.body.amount"`) {
		f.Fatalf("GET approval page: %d, want an input for body.amount\n%s", st, page)
	}
	decide := func(amount string) answer {
		form := link.Query()
		form.Set("decision", "approve")
		form.Set("edit.0.body.amount", amount)
		return f.do(http.MethodPost, link.Path, http.Header{
			"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"},
		}, form.Encode())
	}
	f.expect("an edit over the threshold", decide("20000"), http.StatusUnprocessableEntity, "edit_escalated")
	if got := f.status(id); got != "pending" {
		f.Fatalf("after edit_escalated: %s, want pending", got)
	}
	f.expect("an edit of a field not listed", func() answer {
		form := link.Query()
		form.Set("decision", "approve")
		form.Set("edit.0.body.memo", `"other"`)
		return f.do(http.MethodPost, link.Path, http.Header{
			"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"},
		}, form.Encode())
	}(), http.StatusBadRequest, "invalid_edit")
	f.expect("approve with 500", decide("500"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	if hits := f.s.Upstream.Hits("POST /payments"); len(hits) != 0 {
		f.Fatalf("upstream called before the redemption: %v", hits)
	}
	red := pay("confirmed_write", id)
	f.expect("the agent redeems with its original 900", red, http.StatusOK, "executed")
	if red.Body["edited"] != true {
		f.Fatalf("the redemption does not say it ran an edited call: %s", red.Raw)
	}
	hits := f.s.Upstream.Hits("POST /payments")
	if len(hits) != 1 || !strings.Contains(hits[0], `"amount":500`) || strings.Contains(hits[0], "900") {
		f.Fatalf("upstream got %q, want one POST with amount 500", hits)
	}
	f.expect("redeem again", pay("confirmed_write", id), http.StatusConflict, "confirmation_used")
	if hits := f.s.Upstream.Hits("POST /payments"); len(hits) != 1 {
		f.Fatalf("upstream got %q after a second redemption, want one POST", hits)
	}

	// The same with the approve POST's JSON body: strict (an unknown
	// member is 400 and decides nothing), the escalating edit 422, then
	// 900 approved as 500 and run once by the agent's redemption. moto
	// 5.2.1 starts one execution per state machine and flow (see
	// resetWorkflows): the next pause needs the machines afresh.
	f.s.resetWorkflows(f.ctx)
	r = pay("write", "")
	f.expect("a second payment pauses", r, http.StatusAccepted, "confirmation_required")
	c, _ = r.Body["confirmation"].(map[string]any)
	id, _ = c["id"].(string)
	link = f.link(id)
	decideJSON := func(members map[string]any) answer {
		q := link.Query()
		exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
		if err != nil {
			f.Fatal(err)
		}
		in := map[string]any{"a": q.Get("a"), "exp": exp, "kid": q.Get("kid"), "sig": q.Get("sig"), "decision": "approve"}
		maps.Copy(in, members)
		b, _ := json.Marshal(in)
		return f.do(http.MethodPost, link.Path, http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}, string(b))
	}
	amount := func(v any) map[string]any {
		return map[string]any{"edits": []any{map[string]any{"op": 0, "field": "body.amount", "value": v}}}
	}
	f.expect("JSON with a member it does not take", decideJSON(map[string]any{"decison": "approve"}), http.StatusBadRequest, "invalid_request")
	f.expect("JSON: an edit over the threshold", decideJSON(amount(20000)), http.StatusUnprocessableEntity, "edit_escalated")
	f.expect("JSON: an edit of another type", decideJSON(amount("500")), http.StatusBadRequest, "invalid_edit")
	if got := f.status(id); got != "pending" {
		f.Fatalf("after the refused JSON approvals: %s, want pending", got)
	}
	f.expect("JSON: approve with 500", decideJSON(amount(500)), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	red = pay("confirmed_write", id)
	f.expect("the agent redeems the JSON-approved call with its 900", red, http.StatusOK, "executed")
	if red.Body["edited"] != true {
		f.Fatalf("the redemption does not say it ran an edited call: %s", red.Raw)
	}
	hits = f.s.Upstream.Hits("POST /payments")
	if len(hits) != 2 || !strings.Contains(hits[1], `"amount":500`) || strings.Contains(hits[1], "900") {
		f.Fatalf("upstream got %q, want a second POST with amount 500", hits)
	}
}
