package store

import (
	"context"
	"sync/atomic"

	"github.com/countersign/countersign"
)

// Along is a write that goes in the same transaction as the next
// confirmation write (CreateConfirmation, UpdateConfirmation) made with a
// context that carries it (WithAlong): the audit record of a transition,
// or the workflow execution a new confirmation starts, durable in the same
// commit as the transition. A store that commits
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
	// it (the caller writes what it needs on its own). Nil for a write
	// that is not an audit record.
	Record func(c *countersign.Confirmation) (countersign.AuditRecord, bool)

	done atomic.Bool
}

// Done reports whether a store made the write with a confirmation write.
func (a *Along) Done() bool { return a != nil && a.done.Load() }

// MarkDone is called by the store once the write is committed.
func (a *Along) MarkDone() { a.done.Store(true) }

type alongKey struct{}

// WithAlong returns ctx carrying a as well as the writes ctx carries
// already; a nil a returns ctx.
func WithAlong(ctx context.Context, a *Along) context.Context {
	if a == nil {
		return ctx
	}
	prev, _ := ctx.Value(alongKey{}).([]*Along)
	return context.WithValue(ctx, alongKey{}, append(prev[:len(prev):len(prev)], a))
}

// AlongOf returns the writes ctx carries that are not yet made, in the
// order they were added.
func AlongOf(ctx context.Context) []*Along {
	all, _ := ctx.Value(alongKey{}).([]*Along)
	var out []*Along
	for _, a := range all {
		if !a.Done() {
			out = append(out, a)
		}
	}
	return out
}
