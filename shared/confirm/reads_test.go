package confirm_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
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
