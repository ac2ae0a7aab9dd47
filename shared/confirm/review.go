package confirm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// A review item is a confirmation of kind review: the call the agent made
// at the review tier, held for the operators. It has the lifecycle of a
// confirmation (conditional writes on its version, the effective status
// from the clock, the one claim before the upstream call and the stored
// outcome after it) and no workflow: nobody is sent a link, an operator
// picks it from the queue, and it expires with the review retention.
// The agent reads it with GET /v1/confirmations/<id>.

// ReviewRequest is what CreateReview needs.
type ReviewRequest struct {
	// ID is the item's id ("rv_..."); empty means a new one.
	ID         string
	Credential string
	Reason     string
	Operation  countersign.Operation
	// Retention is how long the item waits for an operator.
	Retention time.Duration
	// SeparateApprover is approval.separate_approver in force when the
	// call was made: the operator who runs the item must not be the
	// person (or the credential) that made it (MayRunReview).
	SeparateApprover bool
}

// NewReviewID returns a random review id: "rv_" and 26 base32 characters.
func NewReviewID() string { return "rv_" + NewID()[len("cf_"):] }

// CreateReview stores a pending review item.
func (s *Service) CreateReview(ctx context.Context, r ReviewRequest) (*countersign.Confirmation, error) {
	if r.Retention <= 0 {
		return nil, errors.New("create review: no retention")
	}
	now := s.now()
	id := r.ID
	if id == "" {
		id = NewReviewID()
	}
	op := r.Operation
	op.Selected, op.State, op.Outcome = true, countersign.OpWaiting, nil
	c := &countersign.Confirmation{
		ID: id, Kind: countersign.KindReview, Credential: r.Credential, Status: countersign.StatusPending, Reason: r.Reason,
		CreatedAt: now, ExpiresAt: now.Add(r.Retention), Operations: []countersign.Operation{op},
		TTL: now.Add(r.Retention + retention).Unix(), SeparateApprover: r.SeparateApprover,
	}
	if err := s.Store.CreateConfirmation(ctx, c); err != nil {
		return nil, fmt.Errorf("create review %s: %w", id, err)
	}
	return c, nil
}

// reviewEvent is the table's answer to an operator's event on a review
// item; anything but a review item is unknown.
func reviewEvent(c *countersign.Confirmation, ev Event, now time.Time) (Transition, error) {
	if c.Kind != countersign.KindReview {
		return Transition{}, fault.Errorf(fault.UnknownConfirmation, "no review item %s", c.ID)
	}
	t := On(c, ev, now)
	return t, t.Err(c)
}

// GetReview returns a review item, or unknown_confirmation.
func (s *Service) GetReview(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Kind != countersign.KindReview {
		return nil, fault.Errorf(fault.UnknownConfirmation, "no review item %s", id)
	}
	return c, nil
}

// ClaimReview decides to run a pending review item for operator by, and
// claims its operation in the same conditional write: of any number of
// operators running it at once exactly one gets the claim, and the caller
// then runs it once (RunClaimed). The others get confirmation_decided.
func (s *Service) ClaimReview(ctx context.Context, id, by string) (*countersign.Confirmation, int, error) {
	c, err := s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		t, err := reviewEvent(c, EventRunReview, now)
		if err != nil {
			return err
		}
		at := now
		c.Status, c.DecidedAt, c.DecidedBy, c.RedeemedAt = t.To, &at, by, &at
		c.Operations[0].State = countersign.OpClaimed
		return nil
	})
	if err != nil {
		return c, -1, fmt.Errorf("run review %s: %w", id, err)
	}
	s.logger().InfoContext(ctx, "review item claimed", "review", id, "operator", by)
	return c, 0, nil
}

// DismissReview closes a pending review item without running it, and
// records it ("review.dismissed"); reason is shown to the agent. A
// dismissed item never runs.
func (s *Service) DismissReview(ctx context.Context, id, by, reason string) (*countersign.Confirmation, error) {
	c, err := s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		t, err := reviewEvent(c, EventDismissReview, now)
		if err != nil {
			return err
		}
		at := now
		c.Status, c.DecidedAt, c.DecidedBy, c.DecisionReason = t.To, &at, by, reason
		c.Operations[0].Selected = false
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("dismiss review %s: %w", id, err)
	}
	s.logger().InfoContext(ctx, "review item dismissed", "review", id, "operator", by)
	s.record(ctx, by, "review.dismissed", c, reason)
	return c, nil
}
