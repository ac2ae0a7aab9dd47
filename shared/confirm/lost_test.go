package confirm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// lossyStore applies the next write and then loses its answer: the caller
// gets err (store.ErrConflict is what DynamoDB's SDK answers when it
// retries a write whose first answer was lost). With blind set, the next
// read fails too.
type lossyStore struct {
	confirm.Store
	mu    sync.Mutex
	armed bool
	err   error
	blind bool
	reads int
}

func (s *lossyStore) arm(err error, blind bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.err, s.blind = true, err, blind
}

func (s *lossyStore) lose(apply func() error) error {
	s.mu.Lock()
	armed, lostErr, blind := s.armed, s.err, s.blind
	s.armed = false
	if armed && blind {
		s.reads = 1
	}
	s.mu.Unlock()
	err := apply()
	if err != nil || !armed {
		return err
	}
	return fmt.Errorf("answer lost: %w", lostErr)
}

func (s *lossyStore) CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	return s.lose(func() error { return s.Store.CreateConfirmation(ctx, c) })
}

func (s *lossyStore) UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	v := c.Version
	err := s.lose(func() error { return s.Store.UpdateConfirmation(ctx, c) })
	if err != nil {
		c.Version = v // a failed write leaves the caller's version
	}
	return err
}

func (s *lossyStore) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	s.mu.Lock()
	blind := s.reads > 0
	s.reads = max(0, s.reads-1)
	s.mu.Unlock()
	if blind {
		return nil, errors.New("read failed")
	}
	return s.Store.GetConfirmation(ctx, id)
}

// TestLostAnswers: a write the store applied but whose answer was lost (an
// error, or a conflict from a retried write) stands: the lifecycle reads its
// own write tag back and goes on, so an approval is not spent for nothing
// and a decision is not reported as someone else's. When the record cannot
// be read back either, the write counts as not made: the caller gets an
// error, and what was written keeps every promise (a claim is never run
// again).
func TestLostAnswers(t *testing.T) {
	lost := map[string]error{"error": errBoom, "conflict": store.ErrConflict}
	for name, err := range lost {
		t.Run("create, "+name, func(t *testing.T) {
			e := newEnv(t)
			ls := &lossyStore{Store: e.st}
			e.svc.Store = ls
			ls.arm(err, false)
			c := e.createCall(t)
			if got := e.get(t, c.ID); got.Status != countersign.StatusPending || got.WriteID != c.WriteID {
				t.Errorf("stored %s with tag %q, returned tag %q", got.Status, got.WriteID, c.WriteID)
			}
			if n := len(e.wf.started()); n != 1 {
				t.Errorf("workflow started %d times, want 1", n)
			}
		})
		t.Run("decide, "+name, func(t *testing.T) {
			e := newEnv(t)
			ls := &lossyStore{Store: e.st}
			e.svc.Store = ls
			c := e.createCall(t)
			e.ready(t, c.ID)
			ls.arm(err, false)
			got, derr := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"})
			if derr != nil || got.Status != countersign.StatusApproved {
				t.Fatalf("Decide = %v, %v; want approved", got, derr)
			}
			if tells := e.wf.told(); len(tells) != 1 || !tells[0].Success {
				t.Errorf("workflow told %+v, want one success", tells)
			}
		})
		t.Run("redeem, "+name, func(t *testing.T) {
			e := newEnv(t)
			ls := &lossyStore{Store: e.st}
			e.svc.Store = ls
			c := e.approvedCall(t)
			ls.arm(err, false)
			got, index, rerr := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding)
			if rerr != nil || index != 0 || got.Operations[0].State != countersign.OpClaimed {
				t.Fatalf("Redeem = index %d, %v; want the claim", index, rerr)
			}
			_, _, rerr = e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding)
			wantCode(t, rerr, fault.ConfirmationUsed)
		})
		t.Run("execute claim, "+name, func(t *testing.T) {
			e := newEnv(t)
			ls := &lossyStore{Store: e.st}
			e.svc.Store = ls
			c := e.approvedScript(t, 2, nil)
			ls.arm(err, false)
			r := newCountingRunner()
			got, xerr := e.svc.ExecuteApproved(e.ctx, c.ID, r.run)
			if xerr != nil || got.Status != countersign.StatusExecuted {
				t.Fatalf("ExecuteApproved = %v, %v; want executed", got, xerr)
			}
			calls, _ := r.snapshot()
			for _, path := range []string{"/contacts/1", "/contacts/2"} {
				if calls[path] != 1 {
					t.Errorf("%s ran %d times, want once", path, calls[path])
				}
			}
		})
	}
	t.Run("redeem, and the read back fails", func(t *testing.T) {
		e := newEnv(t)
		ls := &lossyStore{Store: e.st}
		e.svc.Store = ls
		c := e.approvedCall(t)
		ls.arm(errBoom, true)
		if _, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding); err == nil || fault.As(err) != nil {
			t.Fatalf("Redeem = %v, want a store error", err)
		}
		// The claim was written: it is never made again, and the record
		// says the approval was spent.
		_, _, err := e.svc.Redeem(e.ctx, c.ID, "chat-user", c.Operations[0].Binding)
		wantCode(t, err, fault.ConfirmationUsed)
		if st := e.get(t, c.ID); st.Status != countersign.StatusRedeemed || st.Operations[0].State != countersign.OpClaimed {
			t.Errorf("stored %s, op %q; want redeemed, claimed", st.Status, st.Operations[0].State)
		}
	})
}
