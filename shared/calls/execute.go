package calls

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/upstream"
)

// send calls the connection's upstream with a live call as it is.
func (s *Service) send(ctx context.Context, p *prepared, idemKey string) (*Response, error) {
	conn := s.Config.Connections[p.Connection]
	r := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: p.Method, Path: p.Path,
		Query: p.Query, RawQuery: p.RawQuery,
		Body: p.Body, ContentType: p.ContentType,
		IdempotencyKey: idemKey, Forward: p.Forward,
	}
	resp, err := s.upstream().Do(ctx, r)
	return resp, upstreamError(err)
}

// sendStored replays a stored operation: its original body bytes with
// their content type, its query as it was sent, and the key given.
func (s *Service) sendStored(ctx context.Context, op store.Operation, idemKey string, forward http.Header) (*Response, error) {
	conn := s.Config.Connections[op.Connection]
	if conn == nil {
		return nil, fault.Errorf(fault.UpstreamUnreachable, "connection %q is no longer configured", op.Connection)
	}
	r := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: op.Method, Path: op.Path,
		Query: confirm.QueryValues(op.Args.Query), RawQuery: op.RawQuery,
		Body: op.Body(), ContentType: op.ContentType,
		IdempotencyKey: idemKey, Forward: forward,
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
// operation with a conditional write. forward adds the live request's
// headers to a redemption over REST.
func (s *Service) runner(forward http.Header, last **Response, lastErr *error) confirm.Runner {
	return func(ctx context.Context, op store.Operation, key string) store.Outcome {
		resp, err := s.sendStored(ctx, op, key, forward)
		if last != nil {
			*last, *lastErr = resp, err
		}
		return OutcomeOf(resp, err)
	}
}

// runClaimed runs a claimed operation once and stores its outcome. The
// outcome is stored even when the call could not be made: the approval is
// spent either way, and nothing runs it again.
func (s *Service) runClaimed(ctx context.Context, conf *store.Confirmation, index int, forward http.Header) (*store.Confirmation, *Response, error) {
	var resp *Response
	var callErr error
	done, err := s.Confirm.RunClaimed(ctx, conf, index, s.runner(forward, &resp, &callErr))
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
func (s *Service) Execute(ctx context.Context, id string) (*store.Confirmation, error) {
	before, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	c, err := s.Confirm.ExecuteApproved(ctx, id, s.runner(nil, nil, nil))
	if err != nil {
		return c, err
	}
	if c.Status != before.Status {
		s.emit(ctx, notify.Event{Type: notify.TypeExecuted, Confirmation: notify.ConfirmationOf(c), Status: string(c.Status)})
	}
	return c, nil
}

// OutcomeOf turns an upstream response or error into a stored outcome.
func OutcomeOf(resp *Response, err error) store.Outcome {
	if err != nil {
		return store.Outcome{Error: fault.ReasonOf(err)}
	}
	out := store.Outcome{Status: resp.Status, Headers: make(map[string]string, len(resp.Header))}
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
