package calls

import (
	"context"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// Grant is a person's answer to a question the client showed (an MCP input
// request), carried back by the client with the call. The surface has
// verified where it came from (a signed request state); the pipeline
// checks that it answers this very call and uses it once.
type Grant struct {
	// ID names the question; the answer is recorded as the confirmation
	// with this id, so it can be used once (confirm.Service.Grant).
	ID string
	// Binding is the binding of the operation the person was asked about
	// (canon.Binding); the call must bind to the same.
	Binding string
	// Approve is the person's answer.
	Approve bool
	// By names who answered, e.g. "client:Claude Code".
	By string
	// Person is who answered, when the credential is a person's.
	Person *countersign.Person
	// ExpiresAt is when the question expires.
	ExpiresAt time.Time
	// Current is what the person was shown of the resource (the
	// endpoint's show read) when asked; the write runs only if it is
	// unchanged (the recheck). Nil when nothing was read.
	Current *countersign.Current
}

// granted runs a call the person approved in the client, once, or records
// that the person declined it. The policy decided the call again first: a call
// the policy now denies stays denied and the answer is not spent.
func (s *Service) granted(ctx context.Context, cred *countersign.Credential, p *prepared, res *Result, g *Grant) (*Result, error) {
	op, err := p.operation(cred, &res.Decision.Match)
	if err != nil {
		return nil, err
	}
	if op.Binding != g.Binding {
		return nil, fault.New(fault.ConfirmationMismatch,
			"the answer was given for another call: the credential, method, path, query and body must be the same; nothing ran")
	}
	var rules policy.Rules
	if m := res.Decision.Match; m.Connection != nil {
		rules = m.Connection.RulesFor(m.Endpoint)
	}
	if op.Show != nil {
		op.Current = g.Current
	}
	ran, err := s.Confirm.GrantCall(ctx, confirm.GrantRequest{ID: g.ID, Credential: cred.ID, Reason: res.Decision.Reason,
		Operations: []countersign.Operation{op}, Approve: g.Approve, By: g.By, Person: g.Person, ExpiresAt: g.ExpiresAt,
		Required: rules.Required, SeparateApprover: rules.SeparateApprover, Rules: confirm.RulesOf(p.cfg.Policy, []countersign.Operation{op})},
		s.replayer(), s.callRecord(cred, p, res.Decision))
	if err != nil {
		return nil, lifecycleError(ctx, s, err)
	}
	res.Confirmation, res.Operation = ran.Confirmation, op
	if !g.Approve {
		res.Outcome, res.Code = Denied, fault.ConfirmationRejected
		res.Reason = "the person declined " + p.Method + " " + p.Path + "; nothing was sent"
		return res, nil
	}
	if ran.Err != nil {
		return nil, ran.Err
	}
	res.Outcome, res.Response = Executed, ran.Response
	return res, nil
}
