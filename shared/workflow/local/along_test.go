package local

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/workflow"
)

// TestStartAlong: the execution StartAlong prepares is written by the
// store's confirmation write (here a stand-in that runs the Along's write
// in its own transaction, as the embedded store does), and start then only
// acts on it: the first state runs (notify is called once) with no write
// of the engine's own. When the confirmation write did not make it (it
// failed), start starts the execution itself; when an execution of that
// name exists, the write declines and start answers as Start does.
func TestStartAlong(t *testing.T) {
	input := func(name string) []byte {
		return fmt.Appendf(nil, `{"confirmation_id":%q,"timeout_seconds":600}`, name)
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		var pending func(tx *bbolt.Tx) (bool, error)
		var along *store.Along
		v.e.along = func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along) {
			pending, along = fn, &store.Along{}
			return store.WithAlong(ctx, along), along
		}
		writes := 0
		v.e.write = func(fn func(*bbolt.Tx) error) error { writes++; return v.db.Update(fn) }
		confirmationWrite := func() (made bool) {
			t.Helper()
			if err := v.db.Update(func(tx *bbolt.Tx) error {
				var err error
				made, err = pending(tx)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if made {
				along.MarkDone()
			}
			return made
		}

		ctx, start := v.e.StartAlong(context.Background(), workflow.Confirm, "cf_1", input("cf_1"))
		if len(store.AlongOf(ctx)) != 1 || !confirmationWrite() {
			t.Fatal("the execution did not go with the confirmation write")
		}
		id, err := start(context.Background())
		if err != nil || id != "local:confirm:cf_1" {
			t.Fatalf("start: %q, %v", id, err)
		}
		synctest.Wait()
		wantState(t, v.info(t, id), StatusRunning, "Notify")
		if n := f.calls(&f.notify); len(n) != 1 || n[0].payload["execution"] != id {
			t.Fatalf("notify calls = %v", n)
		}
		if writes != 0 {
			t.Errorf("the engine wrote the started execution again (%d writes)", writes)
		}

		// The confirmation write failed: start starts it on its own.
		_, start = v.e.StartAlong(context.Background(), workflow.Confirm, "cf_2", input("cf_2"))
		if id, err := start(context.Background()); err != nil || id != "local:confirm:cf_2" || writes != 1 {
			t.Fatalf("start after a failed write: %q, %v, %d writes", id, err, writes)
		}
		synctest.Wait()
		wantState(t, v.info(t, "local:confirm:cf_2"), StatusRunning, "Notify")

		// An execution of that name with another input: the write declines
		// and start reports what Start does.
		_, start = v.e.StartAlong(context.Background(), workflow.Confirm, "cf_1", input("other"))
		if confirmationWrite() {
			t.Fatal("an existing execution was overwritten")
		}
		if _, err := start(context.Background()); !errors.Is(err, ErrExecutionAlreadyExists) {
			t.Fatalf("start of an existing name: %v, want ErrExecutionAlreadyExists", err)
		}
	})
}

// answerAlong answers the task on token with AnswerAlong, its write made
// by a stand-in for the confirmation write (as TestStartAlong's), and
// fails unless the answer went with that write.
func answerAlong(e *Engine, token string, output []byte, errorName, cause string) error {
	var pending func(tx *bbolt.Tx) (bool, error)
	var along *store.Along
	e.along = func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along) {
		pending, along = fn, &store.Along{}
		return store.WithAlong(ctx, along), along
	}
	defer func() { e.along = nil }()
	_, send := e.AnswerAlong(context.Background(), token, func() ([]byte, string, string, bool) { return output, errorName, cause, true })
	if pending == nil {
		return errors.New("AnswerAlong carried no write")
	}
	made := false
	if err := e.db.Update(func(tx *bbolt.Tx) error {
		var err error
		made, err = pending(tx)
		return err
	}); err != nil {
		return err
	}
	if !made {
		return errors.New("the answer was not written with the confirmation write")
	}
	along.MarkDone()
	return send(context.Background())
}

// TestAnswerAlongFallsBack: an answer whose write did not go with the
// confirmation write is sent on its own by send, which reports what
// SendTaskSuccess reports (an unknown token); one whose answer function
// declines sends nothing.
func TestAnswerAlongFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		v.e.along = func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along) {
			a := &store.Along{}
			return store.WithAlong(ctx, a), a
		}
		id := v.start(t, workflow.Confirm, "cf_1", 600)
		synctest.Wait()
		token := v.info(t, id).TaskToken
		_, send := v.e.AnswerAlong(context.Background(), "no-such-token", func() ([]byte, string, string, bool) { return []byte(`{"approved":true}`), "", "", true })
		if err := send(context.Background()); !errors.Is(err, workflow.ErrTaskNotFound) {
			t.Fatalf("send for an unknown token: %v, want ErrTaskNotFound", err)
		}
		_, send = v.e.AnswerAlong(context.Background(), token, func() ([]byte, string, string, bool) { return nil, "", "", false })
		if err := send(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantState(t, v.info(t, id), StatusRunning, "Notify")
		// Not written with a confirmation write: send sends it.
		_, send = v.e.AnswerAlong(context.Background(), token, func() ([]byte, string, string, bool) {
			return []byte(`{"approved":true,"execute":false}`), "", "", true
		})
		if err := send(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantState(t, v.info(t, id), StatusSucceeded, "Approved")
	})
}

// TestStartAlongToken: the token StartAlongToken returns is the one the
// execution waits on and the notify function gets; an execution of that
// name that exists fails the confirmation write, as the token written
// beside it would not be its own.
func TestStartAlongToken(t *testing.T) {
	input := func(name string) []byte {
		return fmt.Appendf(nil, `{"confirmation_id":%q,"timeout_seconds":600}`, name)
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		var pending func(tx *bbolt.Tx) (bool, error)
		var along *store.Along
		v.e.along = func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along) {
			pending, along = fn, &store.Along{}
			return store.WithAlong(ctx, along), along
		}
		write := func() (bool, error) {
			var made bool
			err := v.db.Update(func(tx *bbolt.Tx) error {
				var err error
				made, err = pending(tx)
				return err
			})
			if made && err == nil {
				along.MarkDone()
			}
			return made, err
		}
		_, token, start := v.e.StartAlongToken(context.Background(), workflow.Confirm, "cf_1", input("cf_1"))
		if made, err := write(); !made || err != nil || token == "" {
			t.Fatalf("the execution did not go with the write: %v, %v, token %q", made, err, token)
		}
		id, err := start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if info := v.info(t, id); info.TaskToken != token {
			t.Errorf("the execution waits on %q, StartAlongToken said %q", info.TaskToken, token)
		}
		if n := f.calls(&f.notify); len(n) != 1 || n[0].payload["task_token"] != token {
			t.Fatalf("notify calls = %v, want one with the token", n)
		}

		_, _, _ = v.e.StartAlongToken(context.Background(), workflow.Confirm, "cf_1", input("cf_1"))
		if made, err := write(); made || !errors.Is(err, ErrExecutionAlreadyExists) {
			t.Fatalf("an existing execution: made %v, %v; want ErrExecutionAlreadyExists", made, err)
		}
	})
}

// TestStartedExecutionReadsOnce: a started confirm execution, from its
// write to the notify function's return (what every pause costs), decodes
// its record once: the driver reads it to run the Notify task, and neither
// the check that the task was not answered meanwhile (the token index
// says it) nor the driver's end (the task waits on its token) reads it
// again. It was three.
func TestStartedExecutionReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		before := recordDecodes.Load()
		id := v.start(t, workflow.Confirm, "cf_1", 600)
		synctest.Wait()
		if n := len(f.calls(&f.notify)); n != 1 {
			t.Fatalf("notify called %d times", n)
		}
		if n := recordDecodes.Load() - before; n != 1 {
			t.Errorf("%d decodes of the execution record from its start to the notify function's return, want 1", n)
		}
		v.e.mu.Lock()
		notified, drivers := len(v.e.notified), len(v.e.drivers)
		v.e.mu.Unlock()
		if notified != 1 || drivers != 0 {
			t.Errorf("%d notified marks and %d drivers, want 1 and 0", notified, drivers)
		}
		// Still answered as before.
		if err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{"approved":true}`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantState(t, v.info(t, id), StatusSucceeded, "Approved")
	})
}

// TestTokensSideBySide: task tokens made at the same instant share their
// first ten characters (the time, so a group commit's pauses share the
// token index's leaf pages) and differ after them (32 random bytes).
func TestTokensSideBySide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first, err := newToken()
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			tok, err := newToken()
			if err != nil {
				t.Fatal(err)
			}
			if len(tok) != 54 || tok[:10] != first[:10] || tok[11:] == first[11:] {
				t.Fatalf("tokens %q and %q: want 54 characters, the first ten shared and the rest not", first, tok)
			}
		}
	})
}
