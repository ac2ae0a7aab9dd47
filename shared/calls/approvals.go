package calls

import (
	"context"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/telemetry"
)

// Lookup returns a confirmation for an approver, whose signed link is the
// check (the approval page); unknown_confirmation when there is none.
func (s *Service) Lookup(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return nil, lifecycleError(ctx, s, err)
	}
	return c, nil
}

// Decide records an approver's decision, exactly once, tells the workflow,
// and announces it to the approver channels. The error carries the
// lifecycle's code: confirmation_decided, confirmation_expired,
// confirmation_pending (not ready), confirmation_mismatch (a selection that
// is not part of it), unknown_confirmation; anything else is internal.
func (s *Service) Decide(ctx context.Context, id string, d confirm.Decision) (*countersign.Confirmation, error) {
	began := time.Now()
	c, err := s.Confirm.Decide(ctx, id, d)
	if err != nil {
		return c, lifecycleError(ctx, s, err)
	}
	telemetry.Approved(ctx, began, c.Trace, c.ID, c.Status != countersign.StatusRejected, c.CreatedAt)
	action := "confirmation.approved"
	if c.Status == countersign.StatusRejected {
		action = "confirmation.rejected"
	}
	s.auditConfirmation(ctx, "approver:"+d.Approver, action, c, d.Reason)
	s.emit(ctx, notify.Event{Type: notify.TypeDecided, Confirmation: notify.ConfirmationOf(c), Decision: string(c.Status), Status: string(c.Status)})
	return c, nil
}
