package httpapi_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store/embedded"
)

// countingReads counts the confirmation reads made through it.
type countingReads struct {
	*embedded.Store
	gets atomic.Int64
}

func (s *countingReads) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	s.gets.Add(1)
	return s.Store.GetConfirmation(ctx, id)
}

// TestApprovePOSTReadsOnce bounds an approve POST's work: it reads the
// confirmation once, for the page's checks, and decides from that read in
// one durable write (confirm.Answer.Read), not reading it again.
func TestApprovePOSTReadsOnce(t *testing.T) {
	e := newEnv(t)
	c, l := e.pendingCall(t)
	rc := &countingReads{Store: e.st}
	e.svc.Store = rc
	before := e.st.Stats().Writes
	h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
	expect(t, invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve"), h)), 200, "")
	if n := rc.gets.Load(); n != 1 {
		t.Errorf("the approve POST read the confirmation %d times, want 1", n)
	}
	if n := e.st.Stats().Writes - before; n != 1 {
		t.Errorf("the approve POST made %d durable writes, want 1", n)
	}
	if st := e.stored(t, c.ID); st.Status != countersign.StatusApproved {
		t.Errorf("stored %s, want approved", st.Status)
	}
}
