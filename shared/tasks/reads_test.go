package tasks_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/tasks"
)

// countingStore counts the confirmation reads made through it.
type countingStore struct {
	*embedded.Store
	gets atomic.Int64
}

func (s *countingStore) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	s.gets.Add(1)
	return s.Store.GetConfirmation(ctx, id)
}

// TestNotifyWork bounds what the notify task does: it reads the
// confirmation once (Observe's read serves AttachToken), writes the token
// once, and, run again with the token in place (a retried task, or the
// local engine's token written with the pause), writes nothing.
func TestNotifyWork(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, countersign.KindCall, deleteOp(t))
	cs := &countingStore{Store: e.st}
	svc := &confirm.Service{Store: cs, Workflow: nopWorkflow{}, Now: e.clock.Now}
	task := &tasks.Notify{Confirm: svc, Signer: e.signer, Dispatcher: e.disp, PublicURL: publicURL}
	for i, wantWrites := range []uint64{1, 0} {
		cs.gets.Store(0)
		before := e.st.Stats().Writes
		if _, err := task.Handle(e.ctx, tasks.NotifyInput{ConfirmationID: c.ID, TaskToken: "tok-1"}); err != nil {
			t.Fatalf("notify %d: %v", i, err)
		}
		if got := cs.gets.Load(); got != 1 {
			t.Errorf("notify %d read the confirmation %d times, want 1", i, got)
		}
		if got := e.st.Stats().Writes - before; got != wantWrites {
			t.Errorf("notify %d made %d durable writes, want %d", i, got, wantWrites)
		}
	}
	if got := e.token(t, c.ID); got != "tok-1" {
		t.Errorf("stored token %q, want tok-1", got)
	}
}
