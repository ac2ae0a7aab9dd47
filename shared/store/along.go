package store

import (
	"context"
	"sync/atomic"

	"github.com/countersign/countersign"
)

// Along is a write that goes in the same transaction as the next
// confirmation write (CreateConfirmation, UpdateConfirmation) made with a
// context that carries it (WithAlong): the audit record of a transition,
// durable in the same commit as the transition. A store that commits
// several writes in one transaction (store/embedded) makes it; one that
// cannot (store/dynamostore) ignores it, and so does a write that fails.
// Done reports whether it was made: if not, the caller makes it on its own.
type Along struct {
	// Write is the write in the form of the store that built it
	// (audit.Trail.Along asks the store); a store makes only a Write of
	// its own form.
	Write any
	// Record builds the write's audit record from the confirmation as it
	// is stored by that write; false means there is nothing to write with
	// it (the caller writes what it needs on its own).
	Record func(c *countersign.Confirmation) (countersign.AuditRecord, bool)

	done atomic.Bool
}

// Done reports whether a store made the write with a confirmation write.
func (a *Along) Done() bool { return a != nil && a.done.Load() }

// MarkDone is called by the store once the write is committed.
func (a *Along) MarkDone() { a.done.Store(true) }

type alongKey struct{}

// WithAlong returns ctx carrying a; a nil a returns ctx.
func WithAlong(ctx context.Context, a *Along) context.Context {
	if a == nil {
		return ctx
	}
	return context.WithValue(ctx, alongKey{}, a)
}

// AlongOf returns the write ctx carries that is not yet made, or nil.
func AlongOf(ctx context.Context) *Along {
	a, _ := ctx.Value(alongKey{}).(*Along)
	if a == nil || a.Done() {
		return nil
	}
	return a
}
