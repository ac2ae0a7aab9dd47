package calls_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestEditDecidedAgain: an approver's edit is decided again by the same
// policy without counting the call again against its rate rule: an edit
// over the threshold is edit_escalated and leaves the confirmation
// pending; one within it is recorded with the approval, its body and
// binding the edited call's; an edit to a decided confirmation is
// invalid_edit.
func TestEditDecidedAgain(t *testing.T) {
	up := &recorder{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json":    `{"approvers": {"console": true}}`,
		"credentials.json": testCredentials,
		"connections/crm/policy.json": fmt.Sprintf(`{"base_url": %q, "endpoints": [
    {"method": "POST", "path": "/payments", "confirm": true, "approval": {"editable": ["body.amount"]},
     "escalate": [{"field": "body.amount", "above": 100, "escalate": "review"}, {"rate": {"calls": 5, "per_seconds": 600}, "escalate": "review"}]}]}`, srv.URL),
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cs *countingStore
	e := loadPipeline(t, dir, func(now func() time.Time) testStore {
		es, err := embedded.Open(filepath.Join(t.TempDir(), "db"), &embedded.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = es.Close() })
		cs = &countingStore{testStore: es}
		return cs
	})
	pay := &calls.Call{Connection: "crm", Method: "POST", Path: "/payments", Intent: policy.IntentWrite,
		Body: []byte(`{"amount": 90, "to": "acct_7"}`), ContentType: "application/json"}
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], pay, calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("the call: %+v, %v", res, err)
	}
	id, counted := res.Confirmation.ID, cs.adds.Load()
	if counted != 1 {
		t.Fatalf("the call made %d velocity writes, want 1", counted)
	}
	if _, _, err := e.svc.Confirm.AttachToken(e.ctx, id, "tok-"+id); err != nil {
		t.Fatal(err)
	}
	edit := func(v string) confirm.Answer {
		return confirm.Answer{Approve: true, Approver: "ops", Edits: []confirm.EditRequest{{Field: "body.amount", Value: json.RawMessage(v)}}}
	}
	if _, err := e.svc.Answer(e.ctx, id, edit("150")); fault.CodeOf(err) != fault.EditEscalated {
		t.Fatalf("an edit over the threshold: %v", err)
	}
	if c, _ := e.svc.Lookup(e.ctx, id); c.Status != countersign.StatusPending || c.Operations[0].EditedCall != nil {
		t.Fatalf("after edit_escalated: %s, %+v", c.Status, c.Operations[0].EditedCall)
	}
	c, err := e.svc.Answer(e.ctx, id, edit("50"))
	if err != nil {
		t.Fatal(err)
	}
	op := c.Operations[0]
	runs := op.Runs()
	if c.Status != countersign.StatusApproved || op.EditedCall == nil || string(runs.Body()) != `{"amount":50,"to":"acct_7"}` ||
		op.EditedCall.Binding == op.Binding || op.Binding != res.Operation.Binding {
		t.Fatalf("approved with the edit: %s %+v", c.Status, op)
	}
	if n := cs.adds.Load(); n != counted {
		t.Errorf("the edit was counted against the rate rule again: %d writes, want %d", n, counted)
	}
	if _, err := e.svc.Answer(e.ctx, id, edit("60")); fault.CodeOf(err) != fault.InvalidEdit {
		t.Errorf("an edit to a decided confirmation: %v", err)
	}
}

// TestEditRefusedUnderPasskey: a call approved with a passkey cannot be
// edited (the assertion signs the call as it was made): invalid_edit, and
// nothing is decided.
func TestEditRefusedUnderPasskey(t *testing.T) {
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json":    `{"approvers": {"console": true}}`,
		"credentials.json": testCredentials,
		"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:1", "endpoints": [
    {"method": "POST", "path": "/payments", "confirm": true, "approval": {"editable": ["body.amount"], "passkey": true}}]}`,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := loadPipeline(t, dir, func(now func() time.Time) testStore {
		es, err := embedded.Open(filepath.Join(t.TempDir(), "db"), &embedded.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = es.Close() })
		return es
	})
	pay := &calls.Call{Connection: "crm", Method: "POST", Path: "/payments", Intent: policy.IntentWrite,
		Body: []byte(`{"amount": 90}`), ContentType: "application/json"}
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], pay, calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("the call: %+v, %v", res, err)
	}
	id := res.Confirmation.ID
	if _, _, err := e.svc.Confirm.AttachToken(e.ctx, id, "tok-"+id); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Answer(e.ctx, id, confirm.Answer{Approve: true, Approver: "ops",
		Edits: []confirm.EditRequest{{Field: "body.amount", Value: json.RawMessage("50")}}})
	if fault.CodeOf(err) != fault.InvalidEdit || !strings.Contains(fault.ReasonOf(err), "passkey") {
		t.Fatalf("an edit under a passkey: %v, want invalid_edit naming the passkey", err)
	}
	if c, _ := e.svc.Lookup(e.ctx, id); c.Status != countersign.StatusPending || c.Operations[0].EditedCall != nil {
		t.Fatalf("after the refused edit: %s, %+v", c.Status, c.Operations[0].EditedCall)
	}
}
