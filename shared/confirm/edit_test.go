package confirm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

// payOp is a POST /payments whose amount, memo and query x are editable.
func payOp(tb testing.TB, body string) countersign.Operation {
	tb.Helper()
	o, err := confirm.NewOperation("chat-user", "crm", "POST", "/payments", "/payments",
		countersign.Args{Body: json.RawMessage(body), Query: map[string]any{"x": "1", "many": []string{"a", "b"}}})
	if err != nil {
		tb.Fatal(err)
	}
	o.Editable = []string{"body.amount", "body.memo", "body.to.iban", "query.x", "query.many", "body.missing", "body.list"}
	return o
}

const payBody = `{"amount":900,"memo":"rent","to":{"iban":"DE1"},"list":[1],"urgent":true}`

// edited builds what the pipeline hands the lifecycle: the edited call,
// bound as the agent's is.
func edited(tb testing.TB, c *countersign.Confirmation, reqs ...confirm.EditRequest) confirm.Edited {
	tb.Helper()
	o := c.Operations[0]
	args, fields, err := confirm.EditedArgs(&o, reqs)
	if err != nil {
		tb.Fatal(err)
	}
	next, err := confirm.NewOperation(c.Credential, o.Connection, o.Method, o.Path, o.Endpoint, args)
	if err != nil {
		tb.Fatal(err)
	}
	return confirm.Edited{Index: 0, From: o.Binding, Op: next, Fields: fields}
}

func amount(v string) confirm.EditRequest {
	return confirm.EditRequest{Op: 0, Field: "body.amount", Value: json.RawMessage(v)}
}

// TestEditedArgs: only listed fields that the call has, of the same JSON
// type (strings, numbers, booleans; a query parameter given once) are
// edited; a value left as it was is no edit.
func TestEditedArgs(t *testing.T) {
	o := payOp(t, payBody)
	args, fields, err := confirm.EditedArgs(&o, []confirm.EditRequest{amount("500"), {Field: "body.to.iban", Value: json.RawMessage(`"FR2"`)},
		{Field: "query.x", Value: json.RawMessage(`"2"`)}, {Field: "body.memo", Value: json.RawMessage(`"rent"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if string(args.Body) != `{"amount":500,"list":[1],"memo":"rent","to":{"iban":"FR2"},"urgent":true}` || args.Query["x"] != "2" {
		t.Errorf("edited args: %s %v", args.Body, args.Query)
	}
	if len(fields) != 3 || string(fields["body.amount"].From) != "900" || string(fields["body.amount"].To) != "500" || string(fields["query.x"].From) != `"1"` {
		t.Errorf("fields: %v", fields)
	}
	if string(o.Args.Body) != payBody || o.Args.Query["x"] != "1" {
		t.Error("the agent's arguments were changed")
	}
	for _, c := range []struct {
		req  confirm.EditRequest
		want string
	}{
		{confirm.EditRequest{Field: "body.currency", Value: json.RawMessage(`"USD"`)}, "not editable"},
		{amount(`"500"`), "the edit is a string"},
		{amount(`true`), "the edit is a boolean"},
		{amount(`five`), "not JSON"},
		{amount(``), "not JSON"},
		{confirm.EditRequest{Field: "body.missing", Value: json.RawMessage(`1`)}, "no such field"},
		{confirm.EditRequest{Field: "body.list", Value: json.RawMessage(`[2]`)}, "only strings, numbers and booleans"},
		{confirm.EditRequest{Field: "query.x", Value: json.RawMessage(`2`)}, "is a string"},
		{confirm.EditRequest{Field: "query.many", Value: json.RawMessage(`"c"`)}, "no single query parameter"},
	} {
		_, _, err := confirm.EditedArgs(&o, []confirm.EditRequest{c.req})
		if fault.CodeOf(err) != fault.InvalidEdit || !strings.Contains(fault.ReasonOf(err), c.want) {
			t.Errorf("%s=%s: %v, want invalid_edit ~%q", c.req.Field, c.req.Value, err, c.want)
		}
	}
	if _, fields, err := confirm.EditedArgs(&o, []confirm.EditRequest{amount("900")}); err != nil || fields != nil {
		t.Errorf("the agent's own value: %v, %v; want no edit", fields, err)
	}
	c := &countersign.Confirmation{ID: "cf_x", Operations: []countersign.Operation{o}}
	if _, err := confirm.GroupEdits(c, []confirm.EditRequest{amount("1"), amount("2")}); fault.CodeOf(err) != fault.InvalidEdit {
		t.Errorf("a repeated field: %v", err)
	}
	if _, err := confirm.GroupEdits(c, []confirm.EditRequest{{Op: 1, Field: "body.amount"}}); fault.CodeOf(err) != fault.InvalidEdit {
		t.Errorf("another operation: %v", err)
	}
}

type sentOps struct{ ops []countersign.Operation }

// TestEditRecordedWithTheApproval: the edited call is stored in the write
// that records the approval, beside the agent's call, which keeps its
// arguments and binding; the agent's redemption matches its own binding
// (not the edited one) and what runs, once, is the edited call. The trail
// says what changed.
func TestEditRecordedWithTheApproval(t *testing.T) {
	e := newEnv(t)
	trail := &recorder{}
	e.svc.Audit = trail
	c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Operations: []countersign.Operation{payOp(t, payBody)}})
	if err != nil {
		t.Fatal(err)
	}
	e.ready(t, c.ID)
	ed := edited(t, c, amount("500"))
	agent := c.Operations[0].Binding
	got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Edits: []confirm.EditRequest{amount("500")}, Edited: []confirm.Edited{ed}})
	if err != nil {
		t.Fatal(err)
	}
	stored := e.get(t, c.ID)
	op := stored.Operations[0]
	switch {
	case got.Status != countersign.StatusApproved || stored.Status != countersign.StatusApproved:
		t.Fatalf("status %s", stored.Status)
	case op.Binding != agent || string(op.Args.Body) != payBody:
		t.Errorf("the agent's call changed: %s %s", op.Binding, op.Args.Body)
	case op.EditedCall == nil || op.EditedCall.Binding != ed.Op.Binding || op.EditedCall.Binding == agent:
		t.Errorf("edited call: %+v", op.EditedCall)
	case string(op.Runs().Args.Body) != `{"amount":500,"list":[1],"memo":"rent","to":{"iban":"DE1"},"urgent":true}`:
		t.Errorf("runs %s", op.Runs().Args.Body)
	case string(op.Edited["body.amount"].From) != "900" || string(op.Edited["body.amount"].To) != "500":
		t.Errorf("edited %v", op.Edited)
	}
	if !trail.has("confirmation.approved", "edited body.amount 900 → 500") {
		t.Errorf("the trail: %+v", trail.records())
	}

	if _, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", ed.Op.Binding); fault.CodeOf(err) != fault.ConfirmationMismatch {
		t.Errorf("redeemed with the edited binding: %v", err)
	}
	rc, index, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", agent)
	if err != nil {
		t.Fatal(err)
	}
	var sent sentOps
	if _, err := e.svc.RunClaimed(e.ctx, rc, index, func(_ context.Context, op countersign.Operation, _ string) countersign.Outcome {
		sent.ops = append(sent.ops, op)
		return countersign.Outcome{Status: 201}
	}); err != nil {
		t.Fatal(err)
	}
	if len(sent.ops) != 1 || sent.ops[0].Binding != ed.Op.Binding || !strings.Contains(string(sent.ops[0].Body()), `"amount":500`) {
		t.Errorf("ran %+v", sent.ops)
	}
}

// TestEditRefused: edits on a quorum, edits the pipeline did not check,
// edits made against another binding, and edits with a rejection are
// invalid_edit, and the record stays pending, unedited.
func TestEditRefused(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name     string
		required int
		answer   func(c *countersign.Confirmation) confirm.Answer
		want     string
	}{
		{"quorum", 2, func(c *countersign.Confirmation) confirm.Answer {
			return confirm.Answer{Approve: true, Approver: "ops", Person: &countersign.Person{Issuer: "i", Subject: "s"}, Edited: []confirm.Edited{edited(t, c, amount("5"))}}
		}, "quorum"},
		{"unchecked", 1, func(c *countersign.Confirmation) confirm.Answer {
			return confirm.Answer{Approve: true, Approver: "ops", Edits: []confirm.EditRequest{amount("5")}}
		}, "not checked"},
		{"stale", 1, func(c *countersign.Confirmation) confirm.Answer {
			ed := edited(t, c, amount("5"))
			ed.From = "another"
			return confirm.Answer{Approve: true, Approver: "ops", Edited: []confirm.Edited{ed}}
		}, "changed since"},
		{"reject", 1, func(c *countersign.Confirmation) confirm.Answer {
			return confirm.Answer{Approver: "ops", Edited: []confirm.Edited{edited(t, c, amount("5"))}}
		}, "not reject"},
	} {
		conf, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Required: c.required,
			Operations: []countersign.Operation{payOp(t, payBody)}})
		if err != nil {
			t.Fatal(err)
		}
		e.ready(t, conf.ID)
		_, err = e.svc.Answer(e.ctx, conf.ID, c.answer(conf))
		if fault.CodeOf(err) != fault.InvalidEdit || !strings.Contains(fault.ReasonOf(err), c.want) {
			t.Errorf("%s: %v, want invalid_edit ~%q", c.name, err, c.want)
		}
		if st := e.get(t, conf.ID); st.Status != countersign.StatusPending || st.Operations[0].EditedCall != nil || len(st.Approvals) != 0 {
			t.Errorf("%s: the record is %s, edited %v", c.name, st.Status, st.Operations[0].EditedCall)
		}
	}
}

// recorder is an audit trail in memory.
type recorder struct {
	mu  sync.Mutex
	got []countersign.AuditRecord
}

func (r *recorder) Record(_ context.Context, rec countersign.AuditRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
}

func (r *recorder) records() []countersign.AuditRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]countersign.AuditRecord(nil), r.got...)
}

func (r *recorder) has(action, reason string) bool {
	for _, rec := range r.records() {
		if rec.Action == action && strings.Contains(rec.Reason, reason) {
			return true
		}
	}
	return false
}
