package confirm_test

import (
	"encoding/json"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

func TestCreateWithID(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.Create(e.ctx, confirm.Request{ID: "cf_given", Kind: countersign.KindScript, Credential: "chat-user",
		Operations: []countersign.Operation{deleteOp(t, "chat-user", "1")}})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "cf_given" || e.get(t, "cf_given").Kind != countersign.KindScript {
		t.Fatalf("created %s", c.ID)
	}
	if s := e.wf.started(); len(s) != 1 || s[0].Name != "cf_given" {
		t.Errorf("workflow started %+v", s)
	}
	_, err = e.svc.Create(e.ctx, confirm.Request{ID: "cf_given", Kind: countersign.KindScript, Credential: "chat-user",
		Operations: []countersign.Operation{deleteOp(t, "chat-user", "1")}})
	if err == nil {
		t.Fatal("a second confirmation with the same id was created")
	}
}

// TestClaimOne: a script's run after approval claims its approved
// operations one at a time; each is claimed once, whatever the number of
// attempts, and a cleared one is refused.
func TestClaimOne(t *testing.T) {
	e := newEnv(t)
	c := e.approvedScript(t, 3, []int{0, 2})

	got, claimed, err := e.svc.ClaimOne(e.ctx, c.ID, 2)
	if err != nil || !claimed {
		t.Fatalf("first claim of 2: claimed %v, err %v", claimed, err)
	}
	if got.Status != countersign.StatusRedeemed || got.Operations[2].State != countersign.OpClaimed || got.Operations[0].State != countersign.OpWaiting {
		t.Fatalf("after the claim: status %s, states %q %q", got.Status, got.Operations[0].State, got.Operations[2].State)
	}
	// Another attempt sees it claimed, with no outcome yet.
	got, claimed, err = e.svc.ClaimOne(e.ctx, c.ID, 2)
	if err != nil || claimed || got.Operations[2].State != countersign.OpClaimed {
		t.Fatalf("second claim of 2: claimed %v, state %q, err %v", claimed, got.Operations[2].State, err)
	}
	if _, err := e.svc.Complete(e.ctx, c.ID, 2, countersign.Outcome{Status: 204}); err != nil {
		t.Fatal(err)
	}
	got, claimed, err = e.svc.ClaimOne(e.ctx, c.ID, 2)
	if err != nil || claimed || got.Operations[2].State != countersign.OpDone || got.Operations[2].Outcome.Status != 204 {
		t.Fatalf("claim of a done operation: claimed %v, op %+v, err %v", claimed, got.Operations[2], err)
	}

	_, _, err = e.svc.ClaimOne(e.ctx, c.ID, 1)
	wantCode(t, err, fault.ConfirmationRejected)
	_, _, err = e.svc.ClaimOne(e.ctx, c.ID, 3)
	wantCode(t, err, fault.ConfirmationMismatch)

	// Concurrent attempts: exactly one claims.
	wins := make(chan bool, 20)
	for range 20 {
		go func() {
			_, claimed, err := e.svc.ClaimOne(e.ctx, c.ID, 0)
			wins <- err == nil && claimed
		}()
	}
	n := 0
	for range 20 {
		if <-wins {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d attempts claimed operation 0, want 1", n)
	}
}

func TestClaimOneRefused(t *testing.T) {
	e := newEnv(t)
	pending := e.createScript(t, 1)
	_, _, err := e.svc.ClaimOne(e.ctx, pending.ID, 0)
	wantCode(t, err, fault.ConfirmationPending)

	rejected := e.createScript(t, 1)
	e.ready(t, rejected.ID)
	if _, err := e.svc.Answer(e.ctx, rejected.ID, confirm.Answer{Approver: "ops"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.ClaimOne(e.ctx, rejected.ID, 0)
	wantCode(t, err, fault.ConfirmationRejected)

	call := e.approvedCall(t)
	_, _, err = e.svc.ClaimOne(e.ctx, call.ID, 0)
	wantCode(t, err, fault.ConfirmationMismatch)

	finished := e.approvedScript(t, 2, nil)
	if _, err := e.svc.FinishScript(e.ctx, finished.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.ClaimOne(e.ctx, finished.ID, 1)
	wantCode(t, err, fault.ConfirmationUsed)
}

func TestFinishScript(t *testing.T) {
	ok := countersign.Outcome{Status: 204}
	bad := countersign.Outcome{Error: "unreachable"}
	tests := []struct {
		name     string
		keep     []int
		outcomes map[int]countersign.Outcome // operations that ran
		failed   bool
		want     countersign.Status
	}{
		{"every selected operation ran", []int{0, 2}, map[int]countersign.Outcome{0: ok, 2: ok}, false, countersign.StatusExecuted},
		{"one selected operation was not reached", nil, map[int]countersign.Outcome{0: ok}, false, countersign.StatusPartiallyExecuted},
		{"one failed upstream", nil, map[int]countersign.Outcome{0: ok, 1: bad, 2: ok}, false, countersign.StatusPartiallyExecuted},
		{"none ran", nil, nil, false, countersign.StatusFailed},
		{"the script failed after one ran", nil, map[int]countersign.Outcome{1: ok}, true, countersign.StatusPartiallyExecuted},
		{"the script failed before any ran", nil, nil, true, countersign.StatusFailed},
		{"the script failed after every selected one ran", []int{1}, map[int]countersign.Outcome{1: ok}, true, countersign.StatusPartiallyExecuted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.approvedScript(t, 3, tt.keep)
			for i, out := range tt.outcomes {
				if _, claimed, err := e.svc.ClaimOne(e.ctx, c.ID, i); err != nil || !claimed {
					t.Fatalf("claim %d: %v", i, err)
				}
				if _, err := e.svc.Complete(e.ctx, c.ID, i, out); err != nil {
					t.Fatal(err)
				}
			}
			result := json.RawMessage(`{"done":true}`)
			if tt.failed {
				result = nil
			}
			got, err := e.svc.FinishScript(e.ctx, c.ID, result, tt.failed)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want || string(got.Result) != string(result) {
				t.Fatalf("status %s, result %s; want %s, %s", got.Status, got.Result, tt.want, result)
			}
			// Finishing again changes nothing.
			again, err := e.svc.FinishScript(e.ctx, c.ID, json.RawMessage(`"other"`), !tt.failed)
			if err != nil || again.Status != tt.want || string(again.Result) != string(result) || again.Version != got.Version {
				t.Fatalf("second finish: %s %s v%d (err %v)", again.Status, again.Result, again.Version, err)
			}
		})
	}

	e := newEnv(t)
	_, err := e.svc.FinishScript(e.ctx, e.createScript(t, 1).ID, nil, false)
	wantCode(t, err, fault.ConfirmationPending)
	_, err = e.svc.FinishScript(e.ctx, e.approvedCall(t).ID, nil, false)
	wantCode(t, err, fault.ConfirmationMismatch)
}
