package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callContext is the context of one upstream call: its parent, with the
// call's deadline (the client's timeout, or the parent's deadline when
// that comes first). It starts no timer of its own while nothing waits on
// its Done: a call the direct transport sends ends at the deadline through
// its connection's deadline, and stops when the parent ends through an
// AfterFunc on the parent (watch). Whatever waits on Done (http.Transport,
// for the calls it sends; a dial; a child context) gets the context
// context.WithDeadline would have made, made then: the same deadline, the
// same errors. A timer and its context were the most the call's own
// bookkeeping cost on the auto path (TestDirectAllocations).
type callContext struct {
	context.Context // the parent
	deadline        time.Time

	once   sync.Once
	made   atomic.Bool
	timed  context.Context
	cancel context.CancelFunc
}

// withCallDeadline returns parent with a deadline timeout from now (or the
// parent's, when earlier), as context.WithTimeout does; its release is
// WithTimeout's cancel.
func withCallDeadline(parent context.Context, timeout time.Duration) *callContext {
	c := &callContext{Context: parent, deadline: time.Now().Add(timeout)}
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	return c
}

// timer returns the context with the deadline's timer, made on first use.
func (c *callContext) timer() context.Context {
	c.once.Do(func() {
		c.timed, c.cancel = context.WithDeadline(c.Context, c.deadline)
		c.made.Store(true)
	})
	return c.timed
}

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *callContext) Done() <-chan struct{} { return c.timer().Done() }

// Err is the parent's error, or DeadlineExceeded once the deadline has
// passed; once the timer is made, its context's (so that Err is never nil
// after Done is closed).
func (c *callContext) Err() error {
	if c.made.Load() {
		return c.timed.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// AfterFunc lets a child context (or context.AfterFunc) be told when c
// ends without a goroutine of its own, as it is told by the contexts of
// package context.
func (c *callContext) AfterFunc(f func()) func() bool { return context.AfterFunc(c.timer(), f) }

// release ends the timer's context, when one was made; after it, c is
// done (Canceled), as a context.WithDeadline is after its cancel.
func (c *callContext) release() {
	c.once.Do(func() {
		c.timed, c.cancel = released, func() {}
		c.made.Store(true)
	})
	c.cancel()
}

// released is the context of a call released before it made a timer.
var released = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// watch runs f when ctx ends, until the returned function is called. For
// a call's own context that has no timer, it watches the parent: the
// deadline is the connection's.
func watch(ctx context.Context, f func()) (stop func() bool) {
	if c, ok := ctx.(*callContext); ok && !c.made.Load() {
		return context.AfterFunc(c.Context, f)
	}
	return context.AfterFunc(ctx, f)
}
