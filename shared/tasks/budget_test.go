package tasks_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/tasks"
)

// stuckChannel never answers: it waits until its context ends.
type stuckChannel struct{}

func (stuckChannel) Name() string { return "stuck" }

func (stuckChannel) Send(ctx context.Context, _ notify.Event) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestNotifyBudget: a receiver that never answers cannot hold the notify
// task past its budget, nor past its own deadline, and the task still
// succeeds (the confirmation keeps waiting for a person). The task runs in
// a synctest bubble, whose clock moves only when every goroutine waits: the
// time it takes is exactly the bound it waited for, on any machine.
func TestNotifyBudget(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, countersign.KindCall, deleteOp(t))
	c2 := e.create(t, countersign.KindCall, deleteOp(t))
	synctest.Test(t, func(t *testing.T) {
		h := e.notifyTask()
		h.Dispatcher = notify.NewDispatcher([]notify.Channel{stuckChannel{}}, nil)
		h.Budget = 100 * time.Millisecond

		start := time.Now()
		if _, err := h.Handle(context.Background(), taskInput(c.ID, "tok-budget")); err != nil {
			t.Fatalf("notify with a stuck receiver: %v", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("notify took %v with a 100ms budget, want the budget", took)
		}
		if got := e.token(t, c.ID); got != "tok-budget" {
			t.Errorf("token %q not stored", got)
		}

		// The invocation's own deadline wins over a larger budget: it stops
		// a quarter of the time left (375ms, less than a second) before it.
		h.Budget = time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start = time.Now()
		if _, err := h.Handle(ctx, taskInput(c2.ID, "tok-deadline")); err != nil {
			t.Fatalf("notify near its deadline: %v", err)
		}
		if took := time.Since(start); took != 1125*time.Millisecond {
			t.Errorf("notify took %v; it should stop 375ms before its 1.5s deadline, at 1.125s", took)
		}
	})
}

func taskInput(id, token string) tasks.NotifyInput {
	return tasks.NotifyInput{ConfirmationID: id, TaskToken: token}
}
