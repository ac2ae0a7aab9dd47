package confirm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

func TestRedeem(t *testing.T) {
	e := newEnv(t)
	c := e.approvedCall(t)
	binding := c.Operations[0].Binding
	e.clock.Advance(time.Minute)
	got, index, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", binding)
	if err != nil || index != 0 {
		t.Fatalf("Redeem = index %d, err %v; want 0, nil", index, err)
	}
	stored := e.get(t, c.ID)
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("returned record differs from the stored one:\n%s", diff)
	}
	if stored.Status != countersign.StatusRedeemed || stored.Operations[0].State != countersign.OpClaimed {
		t.Errorf("status %s, op state %q; want redeemed, claimed", stored.Status, stored.Operations[0].State)
	}
	if stored.RedeemedAt == nil || !stored.RedeemedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("redeemed_at %v, want %s", stored.RedeemedAt, t0.Add(time.Minute))
	}
	_, index, err = e.svc.Redeem(e.ctx, c.ID, "chat-user", binding)
	wantCode(t, err, fault.ConfirmationUsed)
	if index != -1 {
		t.Errorf("index %d on a refused redemption, want -1", index)
	}
}

func TestRedeemRefused(t *testing.T) {
	approved := func(tb testing.TB, e *env) *countersign.Confirmation { return e.approvedCall(tb) }
	tests := []struct {
		name       string
		setup      func(tb testing.TB, e *env) *countersign.Confirmation
		credential string
		// binding returns the binding presented; nil means the record's own.
		binding func(tb testing.TB, c *countersign.Confirmation) string
		want    fault.Code
	}{
		{name: "another call", setup: approved, credential: "chat-user", want: fault.ConfirmationMismatch,
			binding: func(tb testing.TB, c *countersign.Confirmation) string {
				return deleteOp(tb, "chat-user", "13").Binding
			}},
		{name: "another credential with the right binding", setup: approved, credential: "other-user", want: fault.ConfirmationMismatch},
		{name: "another credential with its own binding", setup: approved, credential: "other-user", want: fault.ConfirmationMismatch,
			binding: func(tb testing.TB, c *countersign.Confirmation) string {
				return deleteOp(tb, "other-user", "12").Binding
			}},
		{name: "another credential on a pending record is a mismatch, not pending", credential: "other-user", want: fault.ConfirmationMismatch,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation { return e.createCall(tb) }},
		{name: "pending", credential: "chat-user", want: fault.ConfirmationPending,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				return c
			}},
		{name: "pending past expiry", credential: "chat-user", want: fault.ConfirmationExpired,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createCall(tb)
				e.clock.Advance(600 * time.Second)
				return c
			}},
		{name: "finalized expired", credential: "chat-user", want: fault.ConfirmationExpired,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createCall(tb)
				if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusExpired); err != nil {
					tb.Fatal(err)
				}
				return c
			}},
		{name: "approved exactly at redeem_by", credential: "chat-user", want: fault.ConfirmationExpired,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.approvedCall(tb)
				e.clock.Advance(600 * time.Second)
				return c
			}},
		{name: "rejected", credential: "chat-user", want: fault.ConfirmationRejected,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approver: "ops"}); err != nil {
					tb.Fatal(err)
				}
				return c
			}},
		{name: "failed to start", credential: "chat-user", want: fault.ConfirmationUsed,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createCall(tb)
				if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusFailed); err != nil {
					tb.Fatal(err)
				}
				return c
			}},
		{name: "executed", credential: "chat-user", want: fault.ConfirmationUsed,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.approvedCall(tb)
				if _, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding); err != nil {
					tb.Fatal(err)
				}
				if _, err := e.svc.Complete(e.ctx, c.ID, 0, countersign.Outcome{Status: 204}); err != nil {
					tb.Fatal(err)
				}
				return c
			}},
		{name: "a script batch is never redeemed", credential: "chat-user", want: fault.ConfirmationMismatch,
			setup: func(tb testing.TB, e *env) *countersign.Confirmation {
				c := e.createScript(tb, 1)
				e.ready(tb, c.ID)
				if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
					tb.Fatal(err)
				}
				return c
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := tt.setup(t, e)
			binding := c.Operations[0].Binding
			if tt.binding != nil {
				binding = tt.binding(t, c)
			}
			before := e.get(t, c.ID)
			_, index, err := e.svc.Redeem(e.ctx, c.ID, tt.credential, binding)
			wantCode(t, err, tt.want)
			if index != -1 {
				t.Errorf("index %d, want -1", index)
			}
			if diff := cmp.Diff(before, e.get(t, c.ID)); diff != "" {
				t.Errorf("a refused redemption changed the record (-before +after):\n%s", diff)
			}
		})
	}
	t.Run("unknown confirmation", func(t *testing.T) {
		e := newEnv(t)
		_, _, err := e.svc.Redeem(e.ctx, "cf_nope", "chat-user", "x")
		wantCode(t, err, fault.UnknownConfirmation)
	})
}

func TestRedeemConcurrent(t *testing.T) {
	e := newEnv(t)
	c := e.approvedCall(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, _, errs[i] = e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding)
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case fault.CodeOf(err) != fault.ConfirmationUsed:
			t.Errorf("redemption %d: %v, want nil or %s", i, err, fault.ConfirmationUsed)
		}
	}
	if wins != 1 {
		t.Errorf("%d redemptions won, want exactly 1", wins)
	}
}

func TestCompleteFinalStatus(t *testing.T) {
	ok := countersign.Outcome{Status: 200, Body: json.RawMessage(`{"ok":true}`)}
	bad := countersign.Outcome{Error: "upstream unreachable"}
	tests := []struct {
		name     string
		ops      int
		keep     []int
		outcomes map[int]countersign.Outcome
		// after lists the status after each Complete, in index order.
		want []countersign.Status
	}{
		{"one op ran", 1, nil, map[int]countersign.Outcome{0: ok}, []countersign.Status{countersign.StatusExecuted}},
		{"one op could not reach the upstream", 1, nil, map[int]countersign.Outcome{0: bad}, []countersign.Status{countersign.StatusFailed}},
		{"an upstream 500 still ran", 1, nil, map[int]countersign.Outcome{0: {Status: 500}}, []countersign.Status{countersign.StatusExecuted}},
		{"all ran", 2, nil, map[int]countersign.Outcome{0: ok, 1: ok}, []countersign.Status{countersign.StatusRedeemed, countersign.StatusExecuted}},
		{"some failed", 3, nil, map[int]countersign.Outcome{0: ok, 1: bad, 2: ok}, []countersign.Status{countersign.StatusRedeemed, countersign.StatusRedeemed, countersign.StatusPartiallyExecuted}},
		{"all failed", 2, nil, map[int]countersign.Outcome{0: bad, 1: bad}, []countersign.Status{countersign.StatusRedeemed, countersign.StatusFailed}},
		{"unselected operations do not count", 3, []int{1}, map[int]countersign.Outcome{1: ok}, []countersign.Status{countersign.StatusExecuted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.createCard(t, tt.ops)
			e.ready(t, c.ID)
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Keep: tt.keep}); err != nil {
				t.Fatal(err)
			}
			// Claim as ExecuteApproved would, so the record is redeemed.
			rec := e.get(t, c.ID)
			rec.Status = countersign.StatusRedeemed
			for i := range rec.Operations {
				if rec.Operations[i].Selected {
					rec.Operations[i].State = countersign.OpClaimed
				}
			}
			if err := e.st.UpdateConfirmation(e.ctx, rec); err != nil {
				t.Fatal(err)
			}
			var got []countersign.Status
			for i := range tt.ops {
				out, ok := tt.outcomes[i]
				if !ok {
					continue
				}
				c, err := e.svc.Complete(e.ctx, c.ID, i, out)
				if err != nil {
					t.Fatalf("Complete %d: %v", i, err)
				}
				got = append(got, c.Status)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a second Complete keeps the first outcome", func(t *testing.T) {
		e := newEnv(t)
		c := e.approvedCall(t)
		if _, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Complete(e.ctx, c.ID, 0, ok); err != nil {
			t.Fatal(err)
		}
		v := e.get(t, c.ID).Version
		got, err := e.svc.Complete(e.ctx, c.ID, 0, bad)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != countersign.StatusExecuted || got.Operations[0].Outcome.Error != "" || e.get(t, c.ID).Version != v {
			t.Errorf("second Complete changed the record: status %s, outcome %+v", got.Status, got.Operations[0].Outcome)
		}
	})
	t.Run("no such operation", func(t *testing.T) {
		e := newEnv(t)
		c := e.approvedCall(t)
		for _, i := range []int{-1, 1} {
			if _, err := e.svc.Complete(e.ctx, c.ID, i, ok); err == nil {
				t.Errorf("Complete(%d) = nil error", i)
			}
		}
	})
}

// countingRunner counts upstream calls per operation path and records the
// idempotency keys it was given.
type countingRunner struct {
	mu    sync.Mutex
	calls map[string]int
	keys  []string
	// fail makes the call for a path fail to reach the upstream.
	fail map[string]bool
	// crash panics on the call for a path, as a Lambda dying mid-call.
	crash map[string]bool
}

func newCountingRunner() *countingRunner {
	return &countingRunner{calls: map[string]int{}, fail: map[string]bool{}, crash: map[string]bool{}}
}

func (r *countingRunner) run(_ context.Context, op countersign.Operation, key string) countersign.Outcome {
	r.mu.Lock()
	r.calls[op.Path]++
	r.keys = append(r.keys, key)
	crash, fail := r.crash[op.Path], r.fail[op.Path]
	r.mu.Unlock()
	if crash {
		panic("crash between claim and outcome")
	}
	if fail {
		return countersign.Outcome{Error: "unreachable"}
	}
	return countersign.Outcome{Status: 200, Body: json.RawMessage(fmt.Sprintf(`{"deleted":%q}`, op.Path))}
}

func (r *countingRunner) snapshot() (map[string]int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.calls))
	for k, v := range r.calls {
		m[k] = v
	}
	return m, append([]string(nil), r.keys...)
}

// approvedScript creates a batch of n operations (/contacts/1 ...) and
// approves keep (nil: all).
func (e *env) approvedScript(tb testing.TB, n int, keep []int) *countersign.Confirmation {
	tb.Helper()
	c := e.createScript(tb, n)
	e.ready(tb, c.ID)
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Keep: keep}); err != nil {
		tb.Fatalf("approve: %v", err)
	}
	return e.get(tb, c.ID)
}

func TestExecuteApprovedOnce(t *testing.T) {
	e := newEnv(t)
	c := e.approvedScript(t, 3, []int{0, 2})
	r := newCountingRunner()
	first, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
	if err != nil {
		t.Fatalf("ExecuteApproved: %v", err)
	}
	if first.Status != countersign.StatusExecuted {
		t.Errorf("status %s, want executed", first.Status)
	}
	calls, keys := r.snapshot()
	wantCalls := map[string]int{"/contacts/1": 1, "/contacts/3": 1}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{c.ID + ":0", c.ID + ":2"}, keys); diff != "" {
		t.Errorf("idempotency keys (-want +got):\n%s", diff)
	}
	if op := first.Operations[1]; op.State != countersign.OpWaiting || op.Outcome != nil {
		t.Errorf("unselected operation was touched: %+v", op)
	}
	for _, i := range []int{0, 2} {
		if op := first.Operations[i]; op.State != countersign.OpDone || op.Outcome == nil || op.Outcome.Status != 200 {
			t.Errorf("operation %d: state %q, outcome %+v; want done with the stored outcome", i, op.State, op.Outcome)
		}
	}

	// A Lambda retry replays the stored outcomes and calls nothing.
	second, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
	if err != nil {
		t.Fatalf("retried ExecuteApproved: %v", err)
	}
	if calls, _ := r.snapshot(); !cmp.Equal(wantCalls, calls) {
		t.Errorf("a retry called the upstream again: %v", calls)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("a retry did not replay the stored record (-first +second):\n%s", diff)
	}
}

func TestExecuteApprovedPartial(t *testing.T) {
	e := newEnv(t)
	c := e.approvedScript(t, 2, nil)
	r := newCountingRunner()
	r.fail["/contacts/2"] = true
	got, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != countersign.StatusPartiallyExecuted {
		t.Errorf("status %s, want partially_executed", got.Status)
	}
	if got.Operations[1].Outcome == nil || got.Operations[1].Outcome.Error == "" {
		t.Errorf("failed operation's outcome %+v, want the error stored", got.Operations[1].Outcome)
	}
}

// TestExecuteApprovedCrash: an operation claimed by an execution that died
// before storing its outcome is never run again (it may have reached the
// upstream); the other operations still run once.
func TestExecuteApprovedCrash(t *testing.T) {
	e := newEnv(t)
	c := e.approvedScript(t, 3, nil)
	r := newCountingRunner()
	r.crash["/contacts/2"] = true
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the runner did not crash")
			}
		}()
		_, _ = e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
	}()
	mid := e.get(t, c.ID)
	if mid.Operations[1].State != countersign.OpClaimed || mid.Operations[2].State != countersign.OpWaiting {
		t.Fatalf("after the crash: states %q %q, want claimed, waiting", mid.Operations[1].State, mid.Operations[2].State)
	}
	r.crash = map[string]bool{}
	got, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
	if err != nil {
		t.Fatalf("ExecuteApproved after the crash: %v", err)
	}
	calls, _ := r.snapshot()
	want := map[string]int{"/contacts/1": 1, "/contacts/2": 1, "/contacts/3": 1}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
	if got.Operations[1].State != countersign.OpClaimed || got.Operations[1].Outcome != nil {
		t.Errorf("the interrupted operation: %+v; want still claimed, no outcome", got.Operations[1])
	}
	// Nothing approved runs twice: the record stays "redeemed" for good
	// (docs/design.md, Limits).
	if got.Status != countersign.StatusRedeemed {
		t.Errorf("status %s after an interrupted execution", got.Status)
	}
	if _, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run); err != nil {
		t.Fatal(err)
	}
	if calls2, _ := r.snapshot(); !cmp.Equal(want, calls2) {
		t.Errorf("a third execution called the upstream: %v", calls2)
	}
}

// TestExecuteApprovedConcurrent: executions racing on one record (a Lambda
// retry while the first invocation still runs, a duplicate click) run each
// operation once between them.
func TestExecuteApprovedConcurrent(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			e := newEnv(t)
			c := e.approvedScript(t, 4, nil)
			r := newCountingRunner()
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, 5)
			for i := range errs {
				wg.Go(func() {
					<-start
					_, errs[i] = e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("execution %d: %v", i, err)
				}
			}
			calls, keys := r.snapshot()
			for p, n := range calls {
				if n != 1 {
					t.Errorf("%s ran %d times, want once (keys sent: %v)", p, n, keys)
				}
			}
			if len(calls) != 4 {
				t.Errorf("%d operations ran, want 4", len(calls))
			}
			if st := e.get(t, c.ID).Status; st != countersign.StatusExecuted {
				t.Errorf("status %s, want executed", st)
			}
		})
	}
}

func TestExecuteApprovedRefused(t *testing.T) {
	t.Run("rejected", func(t *testing.T) {
		e := newEnv(t)
		c := e.createScript(t, 2)
		e.ready(t, c.ID)
		if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		r := newCountingRunner()
		_, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
		wantCode(t, err, fault.ConfirmationRejected)
		if calls, _ := r.snapshot(); len(calls) != 0 {
			t.Errorf("a rejected batch ran: %v", calls)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.ExecuteApproved(e.ctx, "cf_nope", newCountingRunner().run)
		wantCode(t, err, fault.UnknownConfirmation)
	})
	t.Run("pending runs nothing", func(t *testing.T) {
		e := newEnv(t)
		c := e.createScript(t, 2)
		r := newCountingRunner()
		_, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
		wantCode(t, err, fault.ConfirmationPending)
		if calls, _ := r.snapshot(); len(calls) != 0 {
			t.Errorf("a pending batch ran: %v", calls)
		}
		if st := e.get(t, c.ID).Status; st != countersign.StatusPending {
			t.Errorf("status %s, want pending", st)
		}
	})
	t.Run("expired runs nothing", func(t *testing.T) {
		e := newEnv(t)
		c := e.createScript(t, 2)
		e.clock.Advance(31 * time.Minute)
		r := newCountingRunner()
		_, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
		wantCode(t, err, fault.ConfirmationExpired)
		if calls, _ := r.snapshot(); len(calls) != 0 {
			t.Errorf("an expired batch ran: %v", calls)
		}
	})
}

func TestDecideEmptySelection(t *testing.T) {
	e := newEnv(t)
	c := e.createScript(t, 2)
	e.ready(t, c.ID)
	_, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Keep: []int{}})
	wantCode(t, err, fault.InvalidRequest)
	if st := e.get(t, c.ID).Status; st != countersign.StatusPending {
		t.Errorf("status %s after an empty approval, want pending", st)
	}
}

// raceStore lets a test write to a record between a reader's read and its
// conditional write: before runs once, on the first UpdateConfirmation whose
// record satisfies when.
type raceStore struct {
	store.Store
	mu     sync.Mutex
	done   bool
	when   func(c *countersign.Confirmation) bool
	before func(ctx context.Context)
}

func (s *raceStore) UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	s.mu.Lock()
	fire := !s.done && s.when(c)
	if fire {
		s.done = true
	}
	s.mu.Unlock()
	if fire {
		s.before(ctx)
	}
	return s.Store.UpdateConfirmation(ctx, c)
}

// TestExecuteApprovedLostClaimRace is the deterministic form of
// TestExecuteApprovedConcurrent: another executor claims operation 0 between
// this execution's read and its claiming write. The claiming write fails
// with a conflict; on the re-read the operation is claimed by the other
// executor, so this execution must not call the upstream for it.
func TestExecuteApprovedLostClaimRace(t *testing.T) {
	e := newEnv(t)
	c := e.approvedScript(t, 1, nil)
	rs := &raceStore{Store: e.st,
		when: func(rec *countersign.Confirmation) bool { return rec.Operations[0].State == countersign.OpClaimed },
		before: func(ctx context.Context) {
			other, err := e.st.GetConfirmation(ctx, c.ID)
			if err != nil {
				t.Error(err)
				return
			}
			other.Status, other.Operations[0].State = countersign.StatusRedeemed, countersign.OpClaimed
			if err := e.st.UpdateConfirmation(ctx, other); err != nil {
				t.Error(err)
			}
		}}
	e.svc.Store = rs
	r := newCountingRunner()
	if _, err := e.svc.ExecuteApproved(e.ctx, c.ID, r.run); err != nil {
		t.Fatal(err)
	}
	if calls, keys := r.snapshot(); len(calls) != 0 {
		t.Errorf("ran %v (keys %v) although another executor holds the claim: the flag set by the losing attempt survived the re-read", calls, keys)
	}
}
