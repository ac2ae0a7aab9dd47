package calls

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// MaxWait bounds a status wait (API Gateway answers within 30 s).
const MaxWait = 25 * time.Second

// maxPoll is the longest pause between two reads of a waited-on record.
const maxPoll = time.Second

// Status is a confirmation as its owner reads it.
type Status struct {
	*countersign.Confirmation
	// Effective is the status corrected by the clock (confirm.Effective).
	Effective countersign.Status
}

// WaitOptions bound a status read.
type WaitOptions struct {
	// Wait holds the read until the status leaves pending, up to MaxWait.
	Wait time.Duration
	// Poll is the first pause between reads; 0 means 100 ms. It grows to a second.
	Poll time.Duration
	// Stop, when closed, answers at once with the current status (a server
	// shutting down is not held by a wait).
	Stop <-chan struct{}
}

// Confirmation returns a confirmation for the credential that created it;
// any other credential gets unknown_confirmation, as if it did not exist.
func (s *Service) Confirmation(ctx context.Context, cred *countersign.Credential, id string, o WaitOptions) (Status, error) {
	c, err := s.Store.GetConfirmation(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && c.Credential != cred.ID {
		return Status{}, fault.New(fault.UnknownConfirmation, "no confirmation "+id)
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "confirmation not read", "confirmation", id, "error", err)
		return Status{}, fault.Wrap(err, "the confirmation could not be read; try again")
	}
	if wait := min(o.Wait, MaxWait); wait > 0 && confirm.Effective(c, s.now()) == countersign.StatusPending {
		c = s.waitAnswered(ctx, c, wait, o)
	}
	s.withRules(c)
	return Status{Confirmation: c, Effective: confirm.Effective(c, s.now())}, nil
}

// waitAnswered re-reads the record until its effective status leaves
// pending, the time passes, or the request goes away.
func (s *Service) waitAnswered(ctx context.Context, c *countersign.Confirmation, d time.Duration, o WaitOptions) *countersign.Confirmation {
	interval := o.Poll
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	// The record expires by the clock even if nothing writes to it.
	if until := c.ExpiresAt.Sub(s.now()); until < d {
		deadline.Reset(max(until, 0))
	}
	// The interval grows to maxPoll: an answer is seen within a second,
	// and a 25 s wait costs a few dozen reads, not hundreds.
	tick := time.NewTimer(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return c
		case <-o.Stop:
			return c
		case <-deadline.C:
			if fresh, err := s.Store.GetConfirmation(ctx, c.ID); err == nil {
				return fresh
			}
			return c
		case <-tick.C:
			if fresh, err := s.Store.GetConfirmation(ctx, c.ID); err == nil {
				c = fresh
				if confirm.Effective(c, s.now()) != countersign.StatusPending {
					return c
				}
			}
			interval = min(interval*3/2, maxPoll)
			tick.Reset(interval)
		}
	}
}
