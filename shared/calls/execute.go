package calls

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/upstream"
)

// send calls the connection's upstream with a live call as it is.
func (s *Service) send(ctx context.Context, p *prepared, idemKey string) (*Response, error) {
	conn := p.cfg.Connections[p.Connection]
	r := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: p.Method, Path: p.Path,
		Query: p.Query, RawQuery: p.RawQuery,
		Body: p.Body, ContentType: p.ContentType,
		IdempotencyKey: idemKey, Forward: forwarded(p.headers, p.negotiation),
		Connection: p.Connection,
	}
	resp, err := s.upstream().Do(ctx, r)
	return resp, upstreamError(err)
}

// sendStored replays a stored operation: its original body bytes with
// their content type, its query as it was sent, its forwarded headers as
// they were approved, and the key given.
func (s *Service) sendStored(ctx context.Context, op countersign.Operation, idemKey string) (*Response, error) {
	conn := s.Current().Connections[op.Connection]
	if conn == nil {
		return nil, fault.Errorf(fault.UpstreamUnreachable, "connection %q is no longer configured", op.Connection)
	}
	r := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: op.Method, Path: op.Path,
		Query: confirm.QueryValues(op.Args.Query), RawQuery: op.RawQuery,
		Body: op.Body(), ContentType: op.ContentType,
		IdempotencyKey: idemKey, Forward: forwarded(op.Args.Headers, op.Negotiation),
		Connection: op.Connection,
	}
	resp, err := s.upstream().Do(ctx, r)
	return resp, upstreamError(err)
}

// upstreamError gives an upstream failure its code.
func upstreamError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, upstream.ErrUnreachable) {
		return &fault.Error{Code: fault.UpstreamUnreachable, Reason: err.Error(), Err: err}
	}
	return &fault.Error{Code: fault.UpstreamUnreachable, Reason: "upstream call failed: " + err.Error(), Err: err}
}

// runner is the one way a stored operation is executed: redemption, batch
// execution and the card all run it, after the lifecycle claimed the
// operation with a conditional write. Each runs the operation as it was
// approved (sendStored). The outcome kept on the confirmation
// is bounded (confirm.Complete); the caller gets the whole answer.
func (s *Service) runner(last **Response, lastErr *error) confirm.Runner {
	return func(ctx context.Context, op countersign.Operation, key string) countersign.Outcome {
		resp, err := s.sendStored(ctx, op, key)
		if last != nil {
			*last, *lastErr = resp, err
		}
		return OutcomeOf(resp, err)
	}
}

// MaxStoredBody bounds what a confirmation keeps of a value (an outcome's
// body is cut to its share of it by confirm.Complete, a script's result is
// kept in the journal beyond it): the record stays within DynamoDB's item
// size, and whoever ran the operation still gets all of it.
const MaxStoredBody = 64 << 10

// runClaimed runs a claimed operation once and stores its outcome. The
// outcome is stored even when the call could not be made: the approval is
// spent either way, and nothing runs it again.
func (s *Service) runClaimed(ctx context.Context, conf *countersign.Confirmation, index int) (*countersign.Confirmation, *Response, error) {
	var resp *Response
	var callErr error
	done, err := s.Confirm.RunClaimed(ctx, conf, index, s.runner(&resp, &callErr))
	if err != nil {
		s.logger().ErrorContext(ctx, "outcome not stored", "confirmation", conf.ID, "error", err)
	} else {
		conf = done
		s.emit(ctx, notify.Event{Type: notify.TypeExecuted, Confirmation: notify.ConfirmationOf(conf), Status: string(conf.Status)})
	}
	if callErr != nil {
		return conf, nil, callErr
	}
	return conf, resp, nil
}

// Execute runs the approved operations of a confirmation the gateway runs
// itself (a script batch, the card), each exactly once, and announces the
// outcome when this run changed it. A retry (a Lambda retry, a duplicate
// click) replays stored outcomes and calls nothing again.
func (s *Service) Execute(ctx context.Context, id string) (*countersign.Confirmation, error) {
	before, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if before.Kind == countersign.KindScript {
		// A script's approved operations run only inside the script, in
		// its order, when it runs again (code mode).
		return before, fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is a script batch: its operations run when the script runs again", id)
	}
	c, err := s.Confirm.ExecuteApproved(ctx, id, s.runner(nil, nil))
	if err != nil {
		return c, err
	}
	if c.Status != before.Status {
		s.auditConfirmation(ctx, "system", "confirmation.executed", c, "")
		s.emit(ctx, notify.Event{Type: notify.TypeExecuted, Confirmation: notify.ConfirmationOf(c), Status: string(c.Status)})
	}
	return c, nil
}

// ExecuteOne runs operation index of an approved confirmation that the
// gateway runs itself, exactly once, and returns its outcome: code mode
// runs a script batch's approved operations one at a time, where the
// script reaches them. The first attempt claims the operation with a
// conditional write, calls the upstream (Idempotency-Key
// <confirmation>:<index>) and stores the outcome (bounded by
// confirm.Complete); it returns the whole outcome. Every later attempt calls
// nothing and returns the stored outcome with replayed set. An operation
// claimed by an attempt that stopped before storing its outcome is never
// run again: outcome_unknown. A cleared operation is confirmation_rejected.
// ExecuteOne announces nothing: the caller announces the batch's end.
func (s *Service) ExecuteOne(ctx context.Context, id string, index int) (out countersign.Outcome, replayed bool, err error) {
	c, claimed, err := s.Confirm.ClaimOne(ctx, id, index)
	if err != nil {
		return out, false, lifecycleError(ctx, s, err)
	}
	if !claimed {
		if op := c.Operations[index]; op.State == countersign.OpDone && op.Outcome != nil {
			return *op.Outcome, true, nil
		}
		return out, false, fault.Errorf(fault.OutcomeUnknown,
			"operation %d of confirmation %s was started by a run that stopped before it recorded the outcome; it is not run again", index, id)
	}
	var whole countersign.Outcome
	_, err = s.Confirm.RunClaimed(ctx, c, index, func(ctx context.Context, op countersign.Operation, key string) countersign.Outcome {
		resp, err := s.sendStored(ctx, op, key)
		whole = OutcomeOf(resp, err)
		return whole
	})
	if err != nil {
		// The call was made: its caller records what it returned; the
		// operation stays claimed and never runs again.
		s.logger().ErrorContext(ctx, "outcome not stored", "confirmation", id, "operation", index, "error", err)
	}
	return whole, false, nil
}

// Emit sends an approver event as the pipeline sends its own: in the
// background, or before returning (bounded) when events are synchronous
// (Lambda). Code mode announces a script batch's end with it.
func (s *Service) Emit(ctx context.Context, ev notify.Event) { s.emit(ctx, ev) }

// OutcomeOf turns an upstream response or error into a stored outcome.
func OutcomeOf(resp *Response, err error) countersign.Outcome {
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
