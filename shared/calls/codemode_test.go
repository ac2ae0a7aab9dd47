package calls_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// TestBindEveryOutcome: with Options.Bind every outcome carries the
// binding that Bind computes for the same call without deciding it.
func TestBindEveryOutcome(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		cred string
		call calls.Call
		want calls.Outcome
	}{
		{"executed", "runner", calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/7", Intent: policy.IntentRead}, calls.Executed},
		{"collected", "chat-user", calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/7", Intent: policy.IntentWrite}, calls.Collected},
		{"denied", "ops-key", calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/7", Intent: policy.IntentWrite}, calls.Denied},
		{"unknown endpoint", "runner", calls.Call{Connection: "crm", Method: "GET", Path: "/secrets/1", Intent: policy.IntentRead}, calls.Denied},
		{"unknown connection", "runner", calls.Call{Connection: "erp", Method: "GET", Path: "/x", Intent: policy.IntentRead}, calls.Denied},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			res, err := e.svc.Do(e.ctx, e.creds[tt.cred], &c, calls.Options{Pause: calls.PauseCollect, Bind: true})
			if err != nil || res.Outcome != tt.want {
				t.Fatalf("Do: %+v, %v; want %s", res, err, tt.want)
			}
			c = tt.call
			op, err := e.svc.Bind(e.creds[tt.cred], &c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Operation.Binding == "" || res.Operation.Binding != op.Binding || op.Path != tt.call.Path {
				t.Fatalf("Do bound %q, Bind %q (%+v)", res.Operation.Binding, op.Binding, op)
			}
			for name, b := range seen {
				if b == op.Binding && tt.cred == "runner" {
					t.Errorf("%s and %s share a binding", name, tt.name)
				}
			}
			seen[tt.name] = op.Binding
		})
	}
	// Unknown endpoints bind their concrete path: two of them differ.
	a, _ := e.svc.Bind(e.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/secrets/1"})
	b, _ := e.svc.Bind(e.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/secrets/2"})
	if a.Binding == b.Binding {
		t.Error("two unknown paths bind the same")
	}
	if _, err := e.svc.Bind(e.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/a/../b"}); fault.CodeOf(err) != fault.InvalidRequest {
		t.Errorf("Bind of a dot segment: %v", err)
	}
}

// approvedBatch creates a script batch of DELETE /contacts/1..n for
// chat-user and approves keep (nil: all).
func (e *env) approvedBatch(tb testing.TB, n int, keep []int) *countersign.Confirmation {
	tb.Helper()
	var ops []countersign.Operation
	for i := 1; i <= n; i++ {
		res, err := e.svc.Do(e.ctx, e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/" + string(rune('0'+i)), Intent: policy.IntentWrite},
			calls.Options{Pause: calls.PauseCollect})
		if err != nil || res.Outcome != calls.Collected {
			tb.Fatalf("collect: %+v, %v", res, err)
		}
		ops = append(ops, res.Operation)
	}
	c, err := e.svc.Confirm.Create(e.ctx, confirm.Request{Kind: countersign.KindScript, Credential: "chat-user", Operations: ops})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := e.svc.Confirm.AttachToken(e.ctx, c.ID, "tok-"+c.ID); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Keep: keep}); err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestExecuteOne: each approved operation of a batch runs once, at the
// first attempt; later and concurrent attempts replay its stored outcome.
func TestExecuteOne(t *testing.T) {
	e := newEnv(t)
	c := e.approvedBatch(t, 3, []int{0, 2})

	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 10 {
		wg.Go(func() {
			out, replayed, err := e.svc.ExecuteOne(e.ctx, c.ID, 2)
			// A concurrent attempt may find the operation claimed and not
			// yet done: it cannot tell a call in flight from a crash, so it
			// calls nothing and says the outcome is unknown.
			if fault.CodeOf(err) == fault.OutcomeUnknown {
				return
			}
			if err != nil {
				t.Errorf("ExecuteOne: %v", err)
				return
			}
			if out.Status != 200 || string(out.Body) != `{"ok":true}` {
				t.Errorf("outcome %+v", out)
			}
			if !replayed {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fresh != 1 {
		t.Errorf("%d attempts ran the operation, want 1", fresh)
	}
	seen := e.up.seen()
	if len(seen) != 1 || seen[0].Method != "DELETE" || seen[0].URI != "/contacts/3" || seen[0].Key != c.ID+":2" {
		t.Fatalf("upstream saw %+v, want DELETE /contacts/3 once with key %s:2", seen, c.ID)
	}
	out, replayed, err := e.svc.ExecuteOne(e.ctx, c.ID, 2)
	if err != nil || !replayed || out.Status != 200 {
		t.Fatalf("replay: %+v %v %v", out, replayed, err)
	}
	if _, _, err := e.svc.ExecuteOne(e.ctx, c.ID, 1); fault.CodeOf(err) != fault.ConfirmationRejected {
		t.Fatalf("cleared operation: %v, want confirmation_rejected", err)
	}
	stored, _ := e.svc.Confirm.Get(e.ctx, c.ID)
	if stored.Status != countersign.StatusRedeemed || stored.Operations[0].State != countersign.OpWaiting {
		t.Errorf("batch %s, op 0 %q: the script's end decides the status, and op 0 was not reached", stored.Status, stored.Operations[0].State)
	}
	if n := len(e.up.seen()); n != 1 {
		t.Errorf("upstream called %d times", n)
	}
}

func TestExecuteOneUnknownOutcome(t *testing.T) {
	e := newEnv(t)
	c := e.approvedBatch(t, 1, nil)
	if _, claimed, err := e.svc.Confirm.ClaimOne(e.ctx, c.ID, 0); err != nil || !claimed {
		t.Fatal(err)
	}
	// The attempt that claimed it died before storing the outcome.
	if _, _, err := e.svc.ExecuteOne(e.ctx, c.ID, 0); fault.CodeOf(err) != fault.OutcomeUnknown {
		t.Fatalf("err %v, want outcome_unknown", err)
	}
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestStoredOutcomeIsBounded: a large answer reaches the caller whole and
// is kept on the confirmation truncated, with the whole body's length.
func TestStoredOutcomeIsBounded(t *testing.T) {
	e := newEnv(t)
	e.up.body = `{"blob":"` + strings.Repeat("x", calls.MaxStoredBody) + `"}`
	c := e.approvedBatch(t, 1, nil)
	out, _, err := e.svc.ExecuteOne(e.ctx, c.ID, 0)
	if err != nil || len(out.Body) <= calls.MaxStoredBody || out.Truncated {
		t.Fatalf("caller got %d bytes, truncated %v, err %v", len(out.Body), out.Truncated, err)
	}
	stored, _ := e.svc.Confirm.Get(e.ctx, c.ID)
	if o := stored.Operations[0].Outcome; o == nil || len(o.Body) > calls.MaxStoredBody || !o.Truncated || o.BodyBytes != len(e.up.body) || o.Status != 200 {
		t.Fatalf("stored outcome %+v, want status 200, a truncated body", o)
	}
	replay, replayed, err := e.svc.ExecuteOne(e.ctx, c.ID, 0)
	if err != nil || !replayed || !replay.Truncated {
		t.Fatalf("replay %+v %v %v", replay, replayed, err)
	}
}

func TestExecuteRefusesScriptBatches(t *testing.T) {
	e := newEnv(t)
	c := e.approvedBatch(t, 1, nil)
	if _, err := e.svc.Execute(e.ctx, c.ID); fault.CodeOf(err) != fault.ConfirmationMismatch {
		t.Fatalf("Execute of a script batch: %v, want confirmation_mismatch", err)
	}
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestAnswerWaitsUntilReady: an answer to a confirmation whose workflow has
// not yet handed over its task token (a person who pressed the button the
// moment the link appeared) waits for it instead of failing, and then
// decides; one to a confirmation whose token never comes still fails with
// confirmation_pending, after the wait.
func TestAnswerWaitsUntilReady(t *testing.T) {
	e := newEnv(t)
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/9", Intent: policy.IntentWrite},
		calls.Options{Pause: calls.PauseCollect})
	if err != nil || res.Outcome != calls.Collected {
		t.Fatalf("collect: %+v, %v", res, err)
	}
	c, err := e.svc.Confirm.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Operations: []countersign.Operation{res.Operation}})
	if err != nil {
		t.Fatal(err)
	}
	attached := make(chan error, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		_, _, err := e.svc.Confirm.AttachToken(e.ctx, c.ID, "tok-"+c.ID)
		attached <- err
	}()
	got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"})
	if err != nil || got.Status != countersign.StatusApproved {
		t.Fatalf("answer before the token: %v, %v; want approved once the token came", got, err)
	}
	if err := <-attached; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	c2, err := e.svc.Confirm.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Operations: []countersign.Operation{res.Operation}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Answer(ctx, c2.ID, confirm.Answer{Approve: true, Approver: "ops"}); fault.CodeOf(err) != fault.ConfirmationPending {
		t.Fatalf("answer with no token ever: %v, want confirmation_pending", err)
	}
}
