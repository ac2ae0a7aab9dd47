package stack

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMCPCardEdit is edit and approve in the MCP card through the real
// routes: review_pending's card offers the editable fields as inputs of
// the agent's values' types; card_decide with an edit over the review
// threshold is edit_escalated, an unlisted field or another type
// invalid_edit, and each leaves the confirmation pending with nothing run
// (the token still decides); approved with the amount changed from 900 to
// 500 (the input's text, typed by the agent's value), the upstream
// receives 500, once, and the result tells the model what ran.
func TestMCPCardEdit(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
	const tool = "pay__post_payments"
	if listTools(t, s)[tool] == nil {
		t.Fatalf("no %s in %v", tool, names(listTools(t, s)))
	}
	r := callTool(t, s, tool, map[string]any{"body": map[string]any{"amount": 900, "currency": "EUR", "to": "acct_7"}}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if r.IsError || id == "" {
		t.Fatalf("the payment did not pause for the card: %q", text(r))
	}
	rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
	ops, _ := structured(t, rp)["operations"].([]any)
	if len(ops) != 1 {
		t.Fatalf("card operations %v", ops)
	}
	inputs := fmt.Sprint(ops[0].(map[string]any)["inputs"])
	for _, want := range []string{"field:body.amount kind:number label:body.amount value:900", "field:body.to kind:string label:body.to value:acct_7"} {
		if !strings.Contains(inputs, want) {
			t.Errorf("the card's inputs %s lack %s", inputs, want)
		}
	}
	token := cardToken(t, rp)
	decide := func(field, value string) map[string]any {
		return map[string]any{"confirmation_id": id, "token": token, "decision": "approve",
			"edits": []any{map[string]any{"op": 0, "field": field, "value": value}}}
	}
	for _, c := range []struct {
		name, field, value, code string
	}{
		{"over the threshold", "body.amount", "20000", "edit_escalated"},
		{"unlisted field", "body.currency", "USD", "invalid_edit"},
		{"not a number", "body.amount", "five", "invalid_edit"},
		{"path parameter", "path.id", "1", "invalid_edit"},
	} {
		d := callTool(t, s, "card_decide", decide(c.field, c.value), nil)
		if !d.IsError || structured(t, d)["code"] != c.code {
			t.Errorf("%s: %q, want %s", c.name, text(d), c.code)
		}
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%s: the confirmation is %s, want pending", c.name, st)
		}
	}
	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve",
		"edits": []any{map[string]any{"op": 0, "field": "body.amount", "value": "500"}, map[string]any{"op": 0, "field": "body.to", "value": "acct_7"}}}, nil)
	if d.IsError || structured(t, d)["status"] != "executed" {
		t.Fatalf("approve with 500: %q %v", text(d), structured(t, d))
	}
	said := text(d)
	if !strings.Contains(said, "a person edited it before approving: body.amount 900 → 500") || !strings.Contains(said, `"amount": 500`) {
		t.Errorf("the model is not told what ran: %q", said)
	}
	op := structured(t, d)["operations"].([]any)[0].(map[string]any)
	if op["edited"] != true || !strings.Contains(fmt.Sprint(op["args"]), `"amount": 500`) || op["inputs"] != nil {
		t.Errorf("the decided card's operation: %v", op)
	}
	time.Sleep(200 * time.Millisecond) // the workflow's execute task: still once
	pays := h.upstream.Payments()
	if len(pays) != 1 || pays[0].Amount.String() != "500" || pays[0].To != "acct_7" {
		t.Fatalf("the upstream's payments: %+v", pays)
	}
	if n := h.upstream.Count("POST", "/payments"); n != 1 {
		t.Errorf("POST /payments reached the upstream %d times", n)
	}
	// The model reads the same afterwards.
	if after := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil); !strings.Contains(text(after), "body.amount 900 → 500") {
		t.Errorf("review_pending after: %q", text(after))
	}
}
