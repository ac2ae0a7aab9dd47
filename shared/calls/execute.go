package calls

import (
	"context"
	"errors"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
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

// Replayer is the upstream the lifecycle runs approved operations with
// (confirm.Upstream): a stored operation is replayed as it was approved
// (its original body bytes with their content type, its query as it was
// sent, its forwarded headers as they were approved) against the
// connection the configuration in force names, with the key given.
type Replayer struct {
	// Config returns the configuration in force.
	Config func() *config.Config
	// Sender calls the upstream.
	Sender Sender
}

var _ confirm.Upstream = Replayer{}

// Send replays op with idempotency key idemKey.
func (r Replayer) Send(ctx context.Context, op countersign.Operation, idemKey string) (*Response, error) {
	conn := r.Config().Connections[op.Connection]
	if conn == nil {
		return nil, fault.Errorf(fault.UpstreamUnreachable, "connection %q is no longer configured", op.Connection)
	}
	req := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: op.Method, Path: op.Path,
		Query: confirm.QueryValues(op.Args.Query), RawQuery: op.RawQuery,
		Body: op.Body(), ContentType: op.ContentType,
		IdempotencyKey: idemKey, Forward: forwarded(op.Args.Headers, op.Negotiation),
		Connection: op.Connection,
	}
	if op.Show != nil && op.Show.Recheck && op.Current.Read() {
		// The recheck found the ETag the person saw (confirm's runClaimed).
		req.IfMatch = op.Current.ETag
	}
	resp, err := r.Sender.Do(ctx, req)
	return resp, upstreamError(err)
}

// replayer is the lifecycle's upstream over this pipeline's configuration and sender.
func (s *Service) replayer() confirm.Upstream {
	return Replayer{Config: s.Current, Sender: s.upstream()}
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

// MaxStoredBody bounds what a confirmation keeps of a value (an outcome's
// body is cut to its share of it by confirm.Complete, a script's result is
// kept in the journal beyond it): the record stays within DynamoDB's item
// size, and whoever ran the operation still gets all of it.
const MaxStoredBody = 64 << 10

// Execute runs the approved operations of a confirmation the gateway runs
// itself (the card; the workflow's execute task), each exactly once
// (confirm.Service.Execute, which records and announces the outcome). A
// retry (a Lambda retry, a duplicate click) replays stored outcomes and
// calls nothing again.
func (s *Service) Execute(ctx context.Context, id string) (*countersign.Confirmation, error) {
	return s.Confirm.Execute(ctx, id, s.replayer())
}

// ExecuteOne runs operation index of an approved script batch, exactly
// once, and returns its whole outcome (confirm.Service.RunOne): code mode
// runs a script batch's approved operations one at a time, where the
// script reaches them. A later attempt calls nothing and returns the
// stored outcome with replayed set; an operation claimed by an attempt
// that stopped before storing its outcome is outcome_unknown; a cleared
// one confirmation_rejected.
func (s *Service) ExecuteOne(ctx context.Context, id string, index int) (out countersign.Outcome, replayed bool, err error) {
	out, replayed, err = s.Confirm.RunOne(ctx, id, index, s.replayer())
	if err != nil {
		return out, false, lifecycleError(ctx, s, err)
	}
	return out, replayed, nil
}
