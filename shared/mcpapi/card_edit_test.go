package mcpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// editableCall is a pending card call whose endpoint lets the person edit
// a number, a string, a boolean, an object (never offered: only leaves are
// edited) and a field whose name holds a zero-width space.
func editableCall() *countersign.Confirmation {
	return &countersign.Confirmation{ID: "cf_1", Kind: countersign.KindCall, Status: countersign.StatusPending, GatewayRuns: true,
		ExpiresAt: t0.Add(10 * time.Minute), Operations: []countersign.Operation{{
			Connection: "pay", Method: "POST", Path: "/payments", Endpoint: "/payments", Selected: true,
			Args:     countersign.Args{Body: json.RawMessage(`{"amount":900,"memo":"rent \u202eyaM","urgent":true,"meta":{"a":1},"x\u200by":"z"}`)},
			Editable: []string{"body.amount", "body.memo", "body.urgent", "body.meta", "body.x\u200by", "body.absent"},
		}}}
}

// TestCardEditInputs: a pending card offers the fields the page offers
// (confirm.EditInputs), each with the agent's value and its type, the
// label with hidden characters as escapes and the value as the agent sent
// it (the card sets it as the input's value, never as markup); a decided,
// out-of-band, quorum or passkey card offers none.
func TestCardEditInputs(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	c := editableCall()
	v := h.cardOf(c, countersign.StatusPending)
	got := v.Operations[0].Inputs
	want := []cardInput{
		{Field: "body.amount", Label: "body.amount", Kind: "number", Value: "900"},
		{Field: "body.memo", Label: "body.memo", Kind: "string", Value: "rent \u202eyaM"},
		{Field: "body.urgent", Label: "body.urgent", Kind: "boolean", Value: "true"},
		{Field: "body.x\u200by", Label: `body.x\u200By`, Kind: "string", Value: "z"},
	}
	if len(got) != len(want) {
		t.Fatalf("inputs %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("input %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for name, mod := range map[string]func(*countersign.Confirmation) countersign.Status{
		"decided": func(c *countersign.Confirmation) countersign.Status {
			c.Status = countersign.StatusApproved
			return c.Status
		},
		"quorum": func(c *countersign.Confirmation) countersign.Status { c.Required = 2; return c.Status },
		"passkey": func(c *countersign.Confirmation) countersign.Status {
			c.Rules = &countersign.ApprovalRules{Passkey: true}
			return c.Status
		},
		"out of band": func(c *countersign.Confirmation) countersign.Status {
			c.Rules = &countersign.ApprovalRules{OutOfBandOnly: true}
			return c.Status
		},
		"edited": func(c *countersign.Confirmation) countersign.Status {
			c.Operations[0].EditedCall = &countersign.EditedCall{Args: c.Operations[0].Args}
			return c.Status
		},
	} {
		c := editableCall()
		if v := h.cardOf(c, mod(c)); len(v.Operations[0].Inputs) != 0 {
			t.Errorf("%s: the card offers %+v", name, v.Operations[0].Inputs)
		}
	}
}

// TestCardTellsWhatRan: once a person edited the call, the card and the
// model read the edited arguments (what runs) and what changed.
func TestCardTellsWhatRan(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	c := editableCall()
	c.Status = countersign.StatusExecuted
	op := &c.Operations[0]
	op.EditedCall = &countersign.EditedCall{Args: countersign.Args{Body: json.RawMessage(`{"amount":500,"memo":"rent"}`)}}
	op.Edited = map[string]countersign.EditedField{"body.amount": {From: json.RawMessage("900"), To: json.RawMessage("500")}}
	op.Outcome = &countersign.Outcome{Status: 201}
	v := h.cardOf(c, countersign.StatusExecuted)
	co := v.Operations[0]
	if !co.Edited || len(co.Edits) != 1 || co.Edits[0] != (cardChange{Field: "body.amount", From: "900", To: "500"}) ||
		!strings.Contains(co.Args, `"amount": 500`) || strings.Contains(co.Args, "900") {
		t.Errorf("the card's operation: %+v", co)
	}
	text := cardText(v)
	if !strings.Contains(text, "a person edited it before approving: body.amount 900 → 500; what runs is the edited call, with arguments") ||
		!strings.Contains(text, `"amount": 500`) {
		t.Errorf("the model reads %q", text)
	}
}

// TestCardEdits: the card's inputs become edits typed by the agent's
// values, as the page's plain form values are: a number's digits, a
// string quoted, a boolean as it is; an edit without an operation of the
// confirmation is invalid_edit.
func TestCardEdits(t *testing.T) {
	c := editableCall()
	zero, one := 0, 1
	got, err := cardEdits(c, []cardEdit{{Op: &zero, Field: "body.amount", Value: " 12345678901234567890 "},
		{Op: &zero, Field: "body.memo", Value: `June "rent"`}, {Op: &zero, Field: "body.urgent", Value: "false"}})
	if err != nil || len(got) != 3 || string(got[0].Value) != "12345678901234567890" || string(got[1].Value) != `"June \"rent\""` || string(got[2].Value) != "false" {
		t.Errorf("edits %+v, %v", got, err)
	}
	for name, in := range map[string][]cardEdit{
		"no operation":      {{Field: "body.amount", Value: "1"}},
		"another operation": {{Op: &one, Field: "body.amount", Value: "1"}},
		"too many":          make([]cardEdit, 51),
	} {
		if _, err := cardEdits(c, in); fault.CodeOf(err) != fault.InvalidEdit {
			t.Errorf("%s: %v, want invalid_edit", name, err)
		}
	}
}
