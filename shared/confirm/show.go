package confirm

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// Reader makes an operation's show read (op.Show) as its connection, and
// answers the whole of it (up to the read's own size limit) with its
// SHA-256 and ETag, or why it could not be read (Current.Error). It never
// fails otherwise. The call pipeline provides it (calls.ShowReader).
type Reader interface {
	Read(ctx context.Context, op countersign.Operation) countersign.Current
}

// Bounds of the show reads.
const (
	// ShowTimeout bounds the reads of one record, together: a slow
	// upstream never holds the pause, nor the write, longer.
	ShowTimeout = 5 * time.Second
	// maxConcurrentReads bounds the reads of a batch in flight at once.
	maxConcurrentReads = 4
	// currentBudget bounds the answers one record keeps, shared by its
	// operations (at least minCurrentBody each), as outcomeBudget does
	// for outcomes: the record must fit a store item.
	currentBudget  = 32 << 10
	minCurrentBody = 1 << 10
)

// ResourceChanged is the outcome error of an operation whose resource
// changed between what the person saw and the write: nothing was sent.
const ResourceChanged = "resource_changed"

// ReadCurrent makes the show read of each of ops that has one and no
// Current yet, all within ShowTimeout, and sets its Current (bounded to
// its share of the record) and, for a PUT or PATCH, its Changes. A read
// that fails is a Current with Error: the person is still asked. Without
// a Reader it does nothing.
func (s *Service) ReadCurrent(ctx context.Context, ops []countersign.Operation) {
	if s.Reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ShowTimeout)
	defer cancel()
	share := max(minCurrentBody, currentBudget/max(len(ops), 1))
	sem := make(chan struct{}, maxConcurrentReads)
	var wg sync.WaitGroup
	for i := range ops {
		op := &ops[i]
		if op.Show == nil || op.Current != nil {
			continue
		}
		wg.Go(func() {
			var cur countersign.Current
			select {
			case sem <- struct{}{}:
				cur = s.Reader.Read(ctx, *op)
				<-sem
			case <-ctx.Done():
				cur = countersign.Current{Error: fmt.Sprintf("not read within %s", ShowTimeout)}
			}
			now := s.now()
			cur.ReadAt = &now
			if cur.Error == "" && cur.Status < 300 {
				op.Changes = countersign.Changes(op.Method, op.Args.Body, cur.Body)
			}
			cur = boundCurrent(cur, share)
			op.Current = &cur
		})
	}
	wg.Wait()
}

// boundCurrent cuts a long body to max bytes, kept as a JSON string and
// marked Truncated (the SHA-256 still describes the whole answer).
func boundCurrent(c countersign.Current, max int) countersign.Current {
	if len(c.Body) <= max {
		return c
	}
	b := countersign.Outcome{Body: c.Body}.Bounded(max)
	c.Body, c.Truncated = b.Body, true
	return c
}

// Observe makes the show reads of a pending confirmation that has not
// had them yet and stores their answers on its operations
// (operations[].current and changes): the workflow's notify task calls it
// before it attaches the task token and sends the links, so nobody is
// asked before the record holds what they are to see. A record that is
// no longer pending, or whose reads were stored (a retried task), is left
// alone; so is one whose operations have no show read.
func (s *Service) Observe(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	if c.Status != countersign.StatusPending || !needsRead(c.Operations) {
		return c, nil
	}
	ops := append([]countersign.Operation(nil), c.Operations...)
	s.ReadCurrent(ctx, ops)
	c, err = s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		if len(c.Operations) != len(ops) {
			return errUnchanged
		}
		changed := false
		for i := range c.Operations {
			if c.Operations[i].Current == nil && ops[i].Current != nil {
				c.Operations[i].Current, c.Operations[i].Changes = ops[i].Current, ops[i].Changes
				changed = true
			}
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("observe %s: %w", id, err)
	}
	return c, nil
}

func needsRead(ops []countersign.Operation) bool {
	for _, op := range ops {
		if op.Show != nil && op.Current == nil {
			return true
		}
	}
	return false
}

// recheck reads op's resource again right before its write, when its
// endpoint asks for it and the person was shown an answer. ok is false
// when nothing may be sent: the resource changed since (out.Error is
// ResourceChanged), or it could not be read again (out.Error says why).
func (s *Service) recheck(ctx context.Context, op countersign.Operation) (out countersign.Outcome, ok bool) {
	if op.Show == nil || !op.Show.Recheck || !op.Current.Read() {
		return out, true
	}
	if s.Reader == nil {
		return countersign.Outcome{Error: "the resource could not be read again before the write (no reader); nothing was sent"}, false
	}
	rctx, cancel := context.WithTimeout(ctx, ShowTimeout)
	defer cancel()
	now := s.Reader.Read(rctx, op)
	switch {
	case now.Error != "":
		return countersign.Outcome{Error: "the resource could not be read again before the write: " + now.Error + "; nothing was sent"}, false
	case op.Current.ETag != "" && now.ETag != "":
		if now.ETag != op.Current.ETag {
			return countersign.Outcome{Error: ResourceChanged}, false
		}
	case now.SHA256 != op.Current.SHA256 || now.Status != op.Current.Status:
		return countersign.Outcome{Error: ResourceChanged}, false
	}
	return out, true
}

// stopError is the error a caller sees for an operation the recheck
// stopped (its stored outcome out).
func stopError(out countersign.Outcome) error {
	if out.Error == ResourceChanged {
		return fault.New(fault.ResourceChanged, "the resource changed after the person saw it; nothing was sent. Ask the person again with a new call")
	}
	reason := out.Error
	if !utf8.ValidString(reason) {
		reason = "the resource could not be read again before the write; nothing was sent"
	}
	return fault.New(fault.UpstreamUnreachable, reason)
}
