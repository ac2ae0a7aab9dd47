package calls

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/telemetry"
)

// readyWait bounds how long an answer waits for a new confirmation's
// workflow to hand over its task token.
const readyWait = 10 * time.Second

// Lookup returns a confirmation for an approver, whose signed link is the
// check (the approval page); unknown_confirmation when there is none.
func (s *Service) Lookup(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return nil, lifecycleError(ctx, s, err)
	}
	s.withRules(c)
	return c, nil
}

// withRules gives a record made before its approval rules were recorded
// the rules in force, for this read (the record is not changed).
func (s *Service) withRules(c *countersign.Confirmation) {
	if c != nil && c.Rules == nil && c.Kind != countersign.KindReview {
		c.Rules = confirm.RulesOf(s.Current().Policy, c.Operations)
	}
}

// MayAnswer reports why a would be refused as c's answer (a forbidden
// fault, whose reason speaks to the person), or nil: the lifecycle's rules
// of who may answer (confirm.Service.MayAnswer), which Answer applies.
// The approval page shows it before anyone presses a button.
func (s *Service) MayAnswer(ctx context.Context, c *countersign.Confirmation, a confirm.Answer) error {
	s.withRules(c)
	return s.Confirm.MayAnswer(ctx, c, a)
}

// Answer records an approver's answer, exactly once
// (confirm.Service.Answer, which tells the workflow, records it and
// announces it to the approver channels). The error carries the
// lifecycle's code: confirmation_decided, confirmation_expired,
// confirmation_pending (not ready), invalid_request (a selection that is
// not part of it), unknown_confirmation; anything else is internal.
//
// A confirmation only just created is not ready until its workflow has
// handed over its task token (the notify task): the answer waits for that,
// up to readyWait, on every surface (the approval page, the card).
func (s *Service) Answer(ctx context.Context, id string, a confirm.Answer) (*countersign.Confirmation, error) {
	c, _, err := s.AnswerRemember(ctx, id, a)
	return c, err
}

// AnswerRemember is Answer that also returns the grant an approval with
// Remember created (approval.remember), nil without one. A Remember that
// cannot be granted (invalid_remember) is refused before anything is
// decided; a grant that cannot be stored once the approval is leaves the
// approval standing and returns the error.
func (s *Service) AnswerRemember(ctx context.Context, id string, a confirm.Answer) (*countersign.Confirmation, *countersign.ApprovalGrant, error) {
	if len(a.Edits) > 0 {
		if err := s.planEdits(ctx, id, &a); err != nil {
			return nil, nil, err
		}
	}
	var plan *rememberPlan
	if a.Remember != 0 {
		var err error
		if plan, err = s.planRemember(ctx, id, a); err != nil {
			return nil, nil, err
		}
	}
	began := time.Now()
	c, err := s.Confirm.Answer(ctx, id, a)
	for pause, deadline := 20*time.Millisecond, began.Add(readyWait); errors.Is(err, confirm.ErrNotReady) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return c, nil, lifecycleError(ctx, s, err)
		case <-time.After(pause):
		}
		pause = min(pause*2, 500*time.Millisecond)
		a.Read = nil // the record is read again as it is now
		c, err = s.Confirm.Answer(ctx, id, a)
	}
	if err != nil {
		return c, nil, lifecycleError(ctx, s, err)
	}
	telemetry.Approved(ctx, began, c.Trace, c.ID, c.Status != countersign.StatusRejected, c.CreatedAt)
	if plan == nil || c.DecidedAt == nil || c.Status == countersign.StatusRejected {
		return c, nil, nil
	}
	g, err := s.remember(ctx, c, plan, a)
	return c, g, err
}
