package confirm

import (
	"context"
	"encoding/json"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/upstream"
)

// Upstream sends an approved operation to its upstream as it was approved
// (its body, query and forwarded headers), with the Idempotency-Key given.
// The lifecycle calls it between the claim and the stored outcome; the
// call pipeline provides it (calls.Service.Upstream).
type Upstream interface {
	Send(ctx context.Context, op countersign.Operation, idempotencyKey string) (*upstream.Response, error)
}

// Ran is what running one approved operation gave: the record after its
// outcome was stored, and the upstream's whole answer, or why it could not
// be reached (an error with a fault code).
type Ran struct {
	Confirmation *countersign.Confirmation
	Response     *upstream.Response
	Err          error
	// Stopped is the stored outcome of an operation the recheck stopped
	// before its write (resource_changed, or a read that failed): nothing
	// was sent, and Err says so with a code.
	Stopped *countersign.Outcome
}

// OutcomeOf turns an upstream response or error into a stored outcome.
func OutcomeOf(resp *upstream.Response, err error) countersign.Outcome {
	if err != nil {
		return countersign.Outcome{Error: fault.ReasonOf(err)}
	}
	out := countersign.Outcome{Status: resp.Status, Headers: make(map[string]string, len(resp.Header))}
	for k, vs := range resp.Header {
		if len(vs) > 0 {
			out.Headers[k] = vs[0]
		}
	}
	if raw, ok := resp.RawJSON(); ok {
		out.Body = raw
	} else if v, ok := resp.JSONBody(); ok {
		out.Body, _ = json.Marshal(v)
	} else if len(resp.Body) > 0 {
		out.Body, _ = json.Marshal(string(resp.Body))
	}
	return out
}

// run runs operation index of c, which the caller claimed, once, and
// stores its outcome (bounded; the caller gets the whole answer). The
// outcome is stored even when the call could not be made: the approval is
// spent either way, and nothing runs it again. A store that fails after
// the call leaves the operation claimed: it never runs again, and the
// caller still gets the answer.
func (s *Service) run(ctx context.Context, c *countersign.Confirmation, index int, up Upstream) (ran Ran, stored bool) {
	ran.Confirmation = c
	sent := false
	done, err := s.RunClaimed(ctx, c, index, func(ctx context.Context, op countersign.Operation, key string) countersign.Outcome {
		sent = true
		ran.Response, ran.Err = up.Send(ctx, op, key)
		if ran.Err != nil {
			ran.Response = nil
		}
		return OutcomeOf(ran.Response, ran.Err)
	})
	if err != nil {
		s.logger().ErrorContext(ctx, "outcome not stored", "confirmation", c.ID, "operation", index, "error", err)
		if !sent {
			ran.Err = fault.New(fault.Internal, "the resource was read again before the write and nothing was sent, but why could not be stored; ask the person again")
		}
		return ran, false
	}
	ran.Confirmation = done
	if !sent {
		stopped := countersign.Outcome{Error: ResourceChanged}
		if o := done.Operations[index].Outcome; o != nil {
			stopped = *o
		}
		ran.Stopped, ran.Err = &stopped, stopError(stopped)
	}
	return ran, true
}

// executed announces that c's operation ran (its status after).
func (s *Service) executed(ctx context.Context, c *countersign.Confirmation) {
	s.emit(ctx, notify.Event{Type: notify.TypeExecuted, Confirmation: notify.ConfirmationOf(c), Status: string(c.Status)})
}

// Redemption is an agent's call that redeems an approval.
type Redemption struct {
	ID         string
	Credential string
	// Bind returns the redeeming call's binding given the approved
	// operation (the approved forwarded headers stand in for the
	// redeeming request's, which are ignored: the approved ones are replayed).
	Bind func(approved *countersign.Operation) (string, error)
	// Upstream runs the approved operation.
	Upstream Upstream
	// Record is the redeeming call's audit record (chain, actor, the
	// decision's tier, rule and reason, hook): the redemption is recorded
	// with it, completed with the confirmation and its outcome.
	Record countersign.AuditRecord
}

// RedeemCall consumes an approval for the call r and runs its operation once:
// the claim (RedeemAs), the upstream call, the stored outcome, the audit
// record ("confirmation.redeemed") and the confirmation.executed event. An
// error is a refusal: nothing ran. Ran.Err is an upstream that could not
// be reached: the approval is spent.
func (s *Service) RedeemCall(ctx context.Context, r Redemption) (Ran, error) {
	c, index, err := s.RedeemAs(ctx, r.ID, r.Credential, r.Bind)
	if err != nil {
		return Ran{Confirmation: c}, err
	}
	// The redemption's record is written with its outcome where the store
	// can (one commit), when the operation ran; else below.
	octx, along := s.along(ctx, func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		op := c.Operations[index]
		if op.State != countersign.OpDone || op.Outcome == nil || op.Outcome.Error != "" {
			return countersign.AuditRecord{}, false
		}
		return callRecordOf(r.Record, "confirmation.redeemed", r.ID, Ran{Confirmation: c}), true
	})
	ran, stored := s.run(octx, c, index, r.Upstream)
	if stored {
		s.executed(ctx, ran.Confirmation)
	}
	if !along.Done() {
		s.recordCall(ctx, r.Record, "confirmation.redeemed", r.ID, ran)
	}
	return ran, nil
}

// recordCall completes the record of the call that ran an approval with
// the confirmation and the outcome, and writes it.
func (s *Service) recordCall(ctx context.Context, rec countersign.AuditRecord, action, id string, ran Ran) {
	s.write(ctx, callRecordOf(rec, action, id, ran))
}

// callRecordOf is the record recordCall writes.
func callRecordOf(rec countersign.AuditRecord, action, id string, ran Ran) countersign.AuditRecord {
	rec.Action, rec.Subject = action, id
	if ran.Err != nil {
		rec.Outcome, rec.Reason = string(fault.CodeOf(ran.Err)), fault.ReasonOf(ran.Err)
	} else if c := ran.Confirmation; c != nil {
		rec.Outcome = string(c.Status)
		if len(c.Operations) == 1 {
			rec.Binding = c.Operations[0].Binding
		}
	}
	return rec
}

// GrantCall records a person's answer given in the client once (Grant)
// and, when they approved, runs the operation once, records the call that
// ran it ("confirmation.granted", with rec, the call's record) and
// announces confirmation.executed. A rejection runs nothing; the call's
// denial is the caller's to record.
func (s *Service) GrantCall(ctx context.Context, r GrantRequest, up Upstream, rec countersign.AuditRecord) (Ran, error) {
	c, err := s.Grant(ctx, r)
	if err != nil {
		return Ran{}, err
	}
	if !r.Approve {
		return Ran{Confirmation: c}, nil
	}
	ran, stored := s.run(ctx, c, 0, up)
	if stored {
		s.executed(ctx, ran.Confirmation)
	}
	s.recordCall(ctx, rec, "confirmation.granted", c.ID, ran)
	return ran, nil
}

// RunReview runs a pending review item's call for operator by, exactly
// once (ClaimReview, then the upstream call and the stored outcome), and
// records ("review.run") and announces it. An error is a refusal: nothing ran.
func (s *Service) RunReview(ctx context.Context, id, by string, up Upstream) (Ran, error) {
	c, index, err := s.ClaimReview(ctx, id, by)
	if err != nil {
		return Ran{Confirmation: c}, err
	}
	ran, stored := s.run(ctx, c, index, up)
	if stored {
		s.executed(ctx, ran.Confirmation)
	}
	s.record(ctx, by, "review.run", ran.Confirmation, "")
	return ran, nil
}

// Execute runs the approved operations of a confirmation the gateway runs
// itself (the card, a batch), each exactly once (ExecuteApproved), and
// records and announces the outcome when this run ended it (of concurrent
// runs, exactly one does). A retry replays stored outcomes and calls
// nothing again. A script batch's
// operations run only inside its script (RunOne): confirmation_mismatch.
func (s *Service) Execute(ctx context.Context, id string, up Upstream) (*countersign.Confirmation, error) {
	before, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if before.Kind == countersign.KindScript {
		return before, fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is a script batch: its operations run when the script runs again", id)
	}
	c, ended, err := s.executeApproved(ctx, id, func(ctx context.Context, op countersign.Operation, key string) countersign.Outcome {
		return OutcomeOf(up.Send(ctx, op, key))
	})
	if err != nil {
		return c, err
	}
	if ended {
		s.record(ctx, "system", "confirmation.executed", c, "")
		s.executed(ctx, c)
	}
	return c, nil
}

// RunOne runs operation index of an approved confirmation that the
// gateway runs itself, exactly once, and returns its outcome: code mode
// runs a script batch's approved operations one at a time, where the
// script reaches them. The first attempt claims the operation (ClaimOne),
// calls the upstream (Idempotency-Key <confirmation>:<index>), stores the
// outcome (bounded by Complete), records it ("script.operation") and
// returns the whole outcome. Every later attempt calls nothing and returns
// the stored outcome with replayed set. An operation claimed by an attempt
// that stopped before storing its outcome is never run again:
// outcome_unknown. A cleared operation is confirmation_rejected. RunOne
// announces nothing: the batch's end is announced by EndScript.
func (s *Service) RunOne(ctx context.Context, id string, index int, up Upstream) (out countersign.Outcome, replayed bool, err error) {
	c, claimed, err := s.ClaimOne(ctx, id, index)
	if err != nil {
		return out, false, err
	}
	if !claimed {
		if op := c.Operations[index]; op.State == countersign.OpDone && op.Outcome != nil {
			return *op.Outcome, true, nil
		}
		return out, false, fault.Errorf(fault.OutcomeUnknown,
			"operation %d of confirmation %s was started by a run that stopped before it recorded the outcome; it is not run again", index, id)
	}
	ran, _ := s.run(ctx, c, index, up)
	out = OutcomeOf(ran.Response, ran.Err)
	if ran.Stopped != nil {
		out = *ran.Stopped
	}
	// The call was made: it is recorded whether or not its outcome was stored.
	s.recordOperation(ctx, c, index, out)
	return out, false, nil
}

// EndScript records the end of a script batch's run after approval
// (FinishScript; failure is nil when the script completed) and, when this
// call recorded it (of concurrent calls, exactly one does), records
// ("script.finished", with why it failed) and announces it.
func (s *Service) EndScript(ctx context.Context, id string, result json.RawMessage, failure *countersign.ScriptError) (*countersign.Confirmation, error) {
	c, ended, err := s.finishScript(ctx, id, result, failure != nil)
	if err != nil {
		return c, err
	}
	if ended {
		reason := ""
		if failure != nil && failure.Code != "" {
			reason = failure.Code + ": " + failure.Reason
		}
		s.record(ctx, "system", "script.finished", c, reason)
		s.executed(ctx, c)
	}
	return c, nil
}
