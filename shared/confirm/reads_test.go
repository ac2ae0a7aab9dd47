package confirm_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store/embedded"
)

// readCounter counts the confirmation reads made through it.
type readCounter struct {
	*embedded.Store
	gets atomic.Int64
}

func (s *readCounter) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	s.gets.Add(1)
	return s.Store.GetConfirmation(ctx, id)
}

// TestRedeemReadsOnce bounds a redemption's work: it reads the record once
// (for the claim) and writes twice (the claim, the outcome); the outcome
// is written from the record as the claim wrote it, not read again.
func TestRedeemReadsOnce(t *testing.T) {
	e := newEnv(t)
	c := e.createCall(t)
	e.ready(t, c.ID)
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
		t.Fatal(err)
	}
	rc := &readCounter{Store: e.st}
	e.svc.Store = rc
	before := e.st.Stats().Writes
	ran, err := e.svc.RedeemCall(e.ctx, confirm.Redemption{ID: c.ID, Credential: "chat-user",
		Bind:     func(approved *countersign.Operation) (string, error) { return approved.Binding, nil },
		Upstream: &answering{}})
	if err != nil || ran.Err != nil || ran.Response.Status != http.StatusNoContent || ran.Confirmation.Status != countersign.StatusExecuted {
		t.Fatalf("RedeemCall = %+v, %v", ran, err)
	}
	if got := rc.gets.Load(); got != 1 {
		t.Errorf("the redemption read the confirmation %d times, want 1", got)
	}
	if got := e.st.Stats().Writes - before; got != 2 {
		t.Errorf("the redemption made %d durable writes, want 2", got)
	}
	stored, err := e.st.GetConfirmation(e.ctx, c.ID)
	if err != nil || stored.Status != countersign.StatusExecuted || stored.Operations[0].State != countersign.OpDone {
		t.Errorf("stored %+v, %v", stored, err)
	}
}

// TestAnswerFromRead bounds an answer given with the record its surface
// has just read (the approval page's lookup): it decides from a copy of
// that record, reading nothing, in one write; a copy that is no longer
// the stored record loses on its version and the answer reads the record
// again, deciding on what is stored.
func TestAnswerFromRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stale     bool
		wantReads int64
	}{
		{"as stored", false, 0},
		{"changed since", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.createCall(t)
			e.ready(t, c.ID)
			read := e.get(t, c.ID)
			if tc.stale {
				again := e.get(t, c.ID)
				if err := e.st.UpdateConfirmation(e.ctx, again); err != nil {
					t.Fatal(err)
				}
			}
			rc := &readCounter{Store: e.st}
			e.svc.Store = rc
			before := e.st.Stats().Writes
			got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Read: read})
			if err != nil || got.Status != countersign.StatusApproved {
				t.Fatalf("Answer = %+v, %v", got, err)
			}
			if n := rc.gets.Load(); n != tc.wantReads {
				t.Errorf("the answer read the confirmation %d times, want %d", n, tc.wantReads)
			}
			if n := e.st.Stats().Writes - before; n != 1 {
				t.Errorf("the answer made %d durable writes, want 1", n)
			}
			if read.Status != countersign.StatusPending || read.DecidedAt != nil {
				t.Errorf("the answer changed the record it was given: %+v", read)
			}
			stored := e.get(t, c.ID)
			if stored.Status != countersign.StatusApproved || stored.DecidedBy != "ops" || stored.Version != got.Version {
				t.Errorf("stored %+v, answered %+v", stored, got)
			}
			// A second answer from the same (now stale) read is refused.
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Read: read}); fault.CodeOf(err) != fault.ConfirmationDecided {
				t.Errorf("a second answer from the same read: %v, want confirmation_decided", err)
			}
		})
	}
}
