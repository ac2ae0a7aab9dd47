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
