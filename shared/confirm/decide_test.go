package confirm_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

func TestAttachToken(t *testing.T) {
	t.Run("stores the token apart from the record", func(t *testing.T) {
		e := newEnv(t)
		c := e.createCall(t)
		got, ok, err := e.svc.AttachToken(e.ctx, c.ID, "tok-1")
		if err != nil || !ok || got.ID != c.ID {
			t.Fatalf("AttachToken = %v, ok %v, err %v", got, ok, err)
		}
		if tok := e.token(t, c.ID); tok != "tok-1" {
			t.Errorf("stored token %q, want tok-1", tok)
		}
		if v := e.get(t, c.ID).Version; v != c.Version {
			t.Errorf("record version %d after AttachToken, want %d: the record is not rewritten", v, c.Version)
		}
	})
	t.Run("same token again is idempotent", func(t *testing.T) {
		e := newEnv(t)
		c := e.createCall(t)
		for range 2 {
			if _, ok, err := e.svc.AttachToken(e.ctx, c.ID, "tok-1"); err != nil || !ok {
				t.Fatalf("AttachToken = ok %v, err %v", ok, err)
			}
		}
		if tok := e.token(t, c.ID); tok != "tok-1" {
			t.Errorf("stored token %q, want tok-1", tok)
		}
	})
	t.Run("a new token (task retried) replaces the old one", func(t *testing.T) {
		e := newEnv(t)
		c := e.createCall(t)
		_, _, _ = e.svc.AttachToken(e.ctx, c.ID, "tok-1")
		if _, ok, err := e.svc.AttachToken(e.ctx, c.ID, "tok-2"); err != nil || !ok {
			t.Fatalf("AttachToken = ok %v, err %v", ok, err)
		}
		if got := e.token(t, c.ID); got != "tok-2" {
			t.Errorf("token %q, want tok-2", got)
		}
	})
	t.Run("not pending: ok false, nothing changes", func(t *testing.T) {
		e := newEnv(t)
		c := e.createCall(t)
		if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusExpired); err != nil {
			t.Fatal(err)
		}
		before := e.get(t, c.ID)
		got, ok, err := e.svc.AttachToken(e.ctx, c.ID, "tok-late")
		if err != nil || ok {
			t.Fatalf("AttachToken = ok %v, err %v; want ok false, no error", ok, err)
		}
		if got == nil || got.Status != countersign.StatusExpired {
			t.Errorf("returned record %+v, want the expired record", got)
		}
		if diff := cmp.Diff(before, e.get(t, c.ID)); diff != "" {
			t.Errorf("record changed (-before +after):\n%s", diff)
		}
		if _, err := e.st.TaskToken(e.ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a token was stored for a record no longer pending: %v", err)
		}
	})
	t.Run("unknown confirmation", func(t *testing.T) {
		e := newEnv(t)
		_, ok, err := e.svc.AttachToken(e.ctx, "cf_nope", "tok")
		if ok {
			t.Error("ok = true")
		}
		wantCode(t, err, fault.UnknownConfirmation)
	})
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name         string
		kind         countersign.Kind
		ops          int
		decision     confirm.Answer
		wantStatus   countersign.Status
		wantSelected []bool
		wantRedeemBy bool
		wantTold     told
	}{
		{
			name: "approve a call sets redeem_by", kind: countersign.KindCall, ops: 1,
			decision:   confirm.Answer{Approve: true, Approver: "ops"},
			wantStatus: countersign.StatusApproved, wantSelected: []bool{true}, wantRedeemBy: true,
			wantTold: told{Success: true, Output: json.RawMessage(`{"approved":true,"execute":false}`), StoredStatus: countersign.StatusApproved},
		},
		{
			name: "approve a script: no redeem_by, the gateway executes", kind: countersign.KindScript, ops: 3,
			decision:   confirm.Answer{Approve: true, Approver: "ops"},
			wantStatus: countersign.StatusApproved, wantSelected: []bool{true, true, true},
			wantTold: told{Success: true, Output: json.RawMessage(`{"approved":true,"execute":true}`), StoredStatus: countersign.StatusApproved},
		},
		{
			name: "approve a script keeping some operations", kind: countersign.KindScript, ops: 3,
			decision:   confirm.Answer{Approve: true, Approver: "ops", Keep: []int{2, 0, 2}},
			wantStatus: countersign.StatusApproved, wantSelected: []bool{true, false, true},
			wantTold: told{Success: true, Output: json.RawMessage(`{"approved":true,"execute":true}`), StoredStatus: countersign.StatusApproved},
		},
		{
			name: "reject a call", kind: countersign.KindCall, ops: 1,
			decision:   confirm.Answer{Approve: false, Approver: "ops"},
			wantStatus: countersign.StatusRejected, wantSelected: []bool{false},
			wantTold: told{Error: confirm.RejectedError, Cause: "rejected by ops", StoredStatus: countersign.StatusRejected},
		},
		{
			name: "reject a script ignores Keep", kind: countersign.KindScript, ops: 2,
			decision:   confirm.Answer{Approve: false, Approver: "pager", Keep: []int{0}},
			wantStatus: countersign.StatusRejected, wantSelected: []bool{false, false},
			wantTold: told{Error: confirm.RejectedError, Cause: "rejected by pager", StoredStatus: countersign.StatusRejected},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var c *countersign.Confirmation
			if tt.kind == countersign.KindCall {
				c = e.createCall(t)
			} else {
				c = e.createScript(t, tt.ops)
			}
			e.ready(t, c.ID)
			e.clock.Advance(time.Minute)
			got, err := e.svc.Answer(e.ctx, c.ID, tt.decision)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			stored := e.get(t, c.ID)
			if diff := cmp.Diff(stored, got); diff != "" {
				t.Errorf("returned record differs from the stored one (-stored +returned):\n%s", diff)
			}
			if stored.Status != tt.wantStatus {
				t.Errorf("status %s, want %s", stored.Status, tt.wantStatus)
			}
			decidedAt := t0.Add(time.Minute)
			if stored.DecidedAt == nil || !stored.DecidedAt.Equal(decidedAt) || stored.DecidedBy != tt.decision.Approver {
				t.Errorf("decided at %v by %q, want %s by %q", stored.DecidedAt, stored.DecidedBy, decidedAt, tt.decision.Approver)
			}
			var sel []bool
			for _, op := range stored.Operations {
				sel = append(sel, op.Selected)
			}
			if diff := cmp.Diff(tt.wantSelected, sel); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantRedeemBy && (stored.RedeemBy == nil || !stored.RedeemBy.Equal(decidedAt.Add(600*time.Second))):
				t.Errorf("redeem_by %v, want %s", stored.RedeemBy, decidedAt.Add(600*time.Second))
			case !tt.wantRedeemBy && stored.RedeemBy != nil:
				t.Errorf("redeem_by %v, want none", stored.RedeemBy)
			}
			tells := e.wf.told()
			if len(tells) != 1 {
				t.Fatalf("workflow told %d times, want 1: %+v", len(tells), tells)
			}
			want := tt.wantTold
			want.Token = "tok:" + c.ID
			if diff := cmp.Diff(want, tells[0]); diff != "" {
				t.Errorf("workflow told (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(tb testing.TB, e *env) string
		d     confirm.Answer
		want  fault.Code
	}{
		{
			name: "already approved", want: fault.ConfirmationDecided, d: confirm.Answer{Approve: false, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string { return e.approvedCall(tb).ID },
		},
		{
			name: "already rejected", want: fault.ConfirmationDecided, d: confirm.Answer{Approve: true, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approver: "ops"}); err != nil {
					tb.Fatal(err)
				}
				return c.ID
			},
		},
		{
			name: "finalized expired by the timer", want: fault.ConfirmationExpired, d: confirm.Answer{Approve: true, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusExpired); err != nil {
					tb.Fatal(err)
				}
				return c.ID
			},
		},
		{
			name: "exactly at expires_at, no timer yet", want: fault.ConfirmationExpired, d: confirm.Answer{Approve: true, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				e.clock.Advance(600 * time.Second)
				return c.ID
			},
		},
		{
			name: "past expires_at", want: fault.ConfirmationExpired, d: confirm.Answer{Approve: false, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string {
				c := e.createCall(tb)
				e.ready(tb, c.ID)
				e.clock.Advance(time.Hour)
				return c.ID
			},
		},
		{
			name: "no task token yet", want: fault.ConfirmationPending, d: confirm.Answer{Approve: true, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string { return e.createCall(tb).ID },
		},
		{
			name: "keep index out of range", want: fault.InvalidRequest, d: confirm.Answer{Approve: true, Approver: "ops", Keep: []int{0, 3}},
			setup: func(tb testing.TB, e *env) string {
				c := e.createScript(tb, 3)
				e.ready(tb, c.ID)
				return c.ID
			},
		},
		{
			name: "keep index negative", want: fault.InvalidRequest, d: confirm.Answer{Approve: true, Approver: "ops", Keep: []int{-1}},
			setup: func(tb testing.TB, e *env) string {
				c := e.createScript(tb, 2)
				e.ready(tb, c.ID)
				return c.ID
			},
		},
		{
			name: "unknown confirmation", want: fault.UnknownConfirmation, d: confirm.Answer{Approve: true, Approver: "ops"},
			setup: func(tb testing.TB, e *env) string { return "cf_nope" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			id := tt.setup(t, e)
			toldBefore := len(e.wf.told())
			var before *countersign.Confirmation
			if tt.want != fault.UnknownConfirmation {
				before = e.get(t, id)
			}
			_, err := e.svc.Answer(e.ctx, id, tt.d)
			wantCode(t, err, tt.want)
			if n := len(e.wf.told()); n != toldBefore {
				t.Errorf("workflow told %d more times after a refused decision", n-toldBefore)
			}
			if before != nil {
				if diff := cmp.Diff(before, e.get(t, id)); diff != "" {
					t.Errorf("a refused decision changed the record (-before +after):\n%s", diff)
				}
			}
		})
	}
}

// TestDecideWorkflowGone: the decision stands when the workflow cannot be
// told (the execution already ended or timed out).
func TestDecideWorkflowGone(t *testing.T) {
	e := newEnv(t)
	c := e.createCall(t)
	e.ready(t, c.ID)
	e.wf.sendErr = errBoom
	got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"})
	if err != nil {
		t.Fatalf("Decide = %v, want the decision to stand", err)
	}
	if got.Status != countersign.StatusApproved || e.get(t, c.ID).Status != countersign.StatusApproved {
		t.Errorf("status %s (stored %s), want approved", got.Status, e.get(t, c.ID).Status)
	}
}

func TestDecideConcurrent(t *testing.T) {
	e := newEnv(t)
	c := e.createCall(t)
	e.ready(t, c.ID)
	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: i%2 == 0, Approver: "ops"})
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case fault.CodeOf(err) != fault.ConfirmationDecided:
			t.Errorf("decision %d: %v, want nil or %s", i, err, fault.ConfirmationDecided)
		}
	}
	if wins != 1 {
		t.Errorf("%d decisions won, want exactly 1", wins)
	}
	tells := e.wf.told()
	if len(tells) != 1 {
		t.Fatalf("workflow told %d times, want 1", len(tells))
	}
	stored := e.get(t, c.ID)
	if tells[0].Success != (stored.Status == countersign.StatusApproved) {
		t.Errorf("workflow told success=%v but the stored status is %s", tells[0].Success, stored.Status)
	}
}

func TestFinalize(t *testing.T) {
	tests := []struct {
		name  string
		setup func(tb testing.TB, e *env) string
		to    countersign.Status
		want  countersign.Status
	}{
		{"pending to expired", func(tb testing.TB, e *env) string { return e.createCall(tb).ID }, countersign.StatusExpired, countersign.StatusExpired},
		{"pending to failed", func(tb testing.TB, e *env) string { return e.createCall(tb).ID }, countersign.StatusFailed, countersign.StatusFailed},
		{"pending to rejected", func(tb testing.TB, e *env) string { return e.createCall(tb).ID }, countersign.StatusRejected, countersign.StatusRejected},
		{"a decision made just before the timer stays", func(tb testing.TB, e *env) string { return e.approvedCall(tb).ID }, countersign.StatusExpired, countersign.StatusApproved},
		{"rejected stays rejected on failed", func(tb testing.TB, e *env) string {
			c := e.createCall(tb)
			e.ready(tb, c.ID)
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approver: "ops"}); err != nil {
				tb.Fatal(err)
			}
			return c.ID
		}, countersign.StatusFailed, countersign.StatusRejected},
		{"an approved batch the workflow could not run fails", func(tb testing.TB, e *env) string { return e.approvedScript(tb, 2, nil).ID },
			countersign.StatusFailed, countersign.StatusFailed},
		{"an approved batch stays approved on expired", func(tb testing.TB, e *env) string { return e.approvedScript(tb, 2, nil).ID },
			countersign.StatusExpired, countersign.StatusApproved},
		{"an approved call, which the agent redeems, stays approved on failed", func(tb testing.TB, e *env) string { return e.approvedCall(tb).ID },
			countersign.StatusFailed, countersign.StatusApproved},
		{"a batch being run stays redeemed on failed", func(tb testing.TB, e *env) string {
			// An executor claimed the first operation and was cut off.
			c := e.approvedScript(tb, 2, nil)
			c.Status, c.Operations[0].State = countersign.StatusRedeemed, countersign.OpClaimed
			if err := e.st.UpdateConfirmation(e.ctx, c); err != nil {
				tb.Fatal(err)
			}
			return c.ID
		}, countersign.StatusFailed, countersign.StatusRedeemed},
		{"redeemed stays redeemed", func(tb testing.TB, e *env) string {
			c := e.approvedCall(tb)
			if _, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding); err != nil {
				tb.Fatal(err)
			}
			return c.ID
		}, countersign.StatusExpired, countersign.StatusRedeemed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			id := tt.setup(t, e)
			e.clock.Advance(10 * time.Minute)
			for i := range 2 { // Step Functions may run the task twice
				got, err := e.svc.Finalize(e.ctx, id, tt.to)
				if err != nil {
					t.Fatalf("Finalize #%d: %v", i+1, err)
				}
				if got.Status != tt.want {
					t.Errorf("Finalize #%d returned %s, want %s", i+1, got.Status, tt.want)
				}
			}
			if st := e.get(t, id).Status; st != tt.want {
				t.Errorf("stored %s, want %s", st, tt.want)
			}
		})
	}
	t.Run("only terminal wait outcomes", func(t *testing.T) {
		e := newEnv(t)
		c := e.createCall(t)
		for _, to := range []countersign.Status{countersign.StatusApproved, countersign.StatusExecuted, countersign.StatusPending, "bogus"} {
			if _, err := e.svc.Finalize(e.ctx, c.ID, to); err == nil {
				t.Errorf("Finalize(%q) = nil error", to)
			}
		}
		if st := e.get(t, c.ID).Status; st != countersign.StatusPending {
			t.Errorf("stored %s, want pending", st)
		}
	})
	t.Run("unknown confirmation", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.Finalize(e.ctx, "cf_nope", countersign.StatusExpired)
		wantCode(t, err, fault.UnknownConfirmation)
	})
}
