package calls

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
)

// Remembered approvals (approval.remember): an approver who approves a
// call may also allow the same credential's later calls of the same
// endpoint for a while, a bounded number of times. That is a grant
// (countersign.ApprovalGrant, "gr_..."); the pipeline consults it only once
// the policy has decided that a call pauses, so every surface that pauses
// (/v1/calls, REST, MCP) runs a covered call at once, and no grant ever
// covers a call the policy denies or escalates.

// MaxGrantsPerCredential bounds the live grants of one credential: past
// it, an approval with remember is refused (nothing decided).
const MaxGrantsPerCredential = 20

// NewGrantID returns a new grant id, "gr_" and 26 random characters.
func NewGrantID() string { return "gr_" + confirm.NewID()[len("cf_"):] }

// underGrant runs a paused call at once if a grant of its credential
// covers it, using one of the grant's calls (one conditional write), and
// returns nil when none does (the call pauses as decided). A grant covers
// only a call of the confirm tier that paused by the credential's choice:
// never one a hook asked about, and never where the endpoint's rules ask
// for more than one person (RememberFor is nil there, whatever the grant).
func (s *Service) underGrant(ctx context.Context, cred *countersign.Credential, p *prepared, res *Result) (*Result, error) {
	d := &res.Decision
	m := d.Match
	if d.Outcome != policy.Pause || d.Escalated || d.Tier != policy.Confirm || m.Connection == nil || m.Endpoint == nil ||
		p.hook != nil && p.hook.Decision == policy.HookAsk || m.Connection.RememberFor(m.Endpoint) == nil {
		return nil, nil
	}
	g, err := s.Store.UseApprovalGrant(ctx, cred.ID, m.Connection.Name, m.Endpoint.Method, m.Endpoint.Path, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "grants not read", "credential", cred.ID, "error", err)
		return nil, fault.Wrap(err, "the grants could not be read; nothing ran, try again")
	}
	resp, err := s.send(ctx, p, s.agentKey(cred, p))
	if err != nil {
		return nil, err
	}
	res.Outcome, res.Response, res.ApprovalGrant = Executed, resp, g
	return res, nil
}

// grantedBy names who gave a grant.
func grantedBy(g *countersign.ApprovalGrant) string {
	if g.GrantedByPerson != nil {
		return g.GrantedByPerson.Label()
	}
	if g.GrantedBy != "" {
		return "approver " + g.GrantedBy
	}
	return "an approver"
}

// rememberPlan is a grant checked before the answer that gives it.
type rememberPlan struct {
	conf    *countersign.Confirmation
	op      countersign.Operation
	conn    *policy.Connection
	ep      *policy.Endpoint
	minutes int
	calls   int
}

// planRemember checks an answer's Remember against confirmation id and
// the policy in force: the answer approves one call of an endpoint whose
// approval.remember allows that many minutes, which no quorum, four eyes
// or passkey governs (as recorded when it paused), and the credential has room for another grant. Every
// refusal is invalid_remember, before anything is decided.
func (s *Service) planRemember(ctx context.Context, id string, a confirm.Answer) (*rememberPlan, error) {
	refuse := func(why string) error { return fault.New(fault.InvalidRemember, why+"; nothing was decided") }
	if !a.Approve {
		return nil, refuse("remember goes with approve, not reject")
	}
	if a.Remember < 0 {
		return nil, refuse("remember is a number of minutes from 1")
	}
	c, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return nil, lifecycleError(ctx, s, err)
	}
	if c.Kind != countersign.KindCall || len(c.Operations) != 1 {
		return nil, refuse("only the approval of a single call can be remembered")
	}
	if c.Required > 1 || c.SeparateApprover {
		return nil, refuse("this call needs more than one person's approval (approval.required or separate_approver), so it cannot be remembered")
	}
	if confirm.NeedsPasskey(c, nil) {
		return nil, refuse("this call is approved with a passkey (approval.passkey), which a grant cannot carry, so it cannot be remembered")
	}
	op := c.Operations[0]
	m, ok := s.Current().Policy.Resolve(op.Connection, op.Method, op.Path)
	if !ok || m.Endpoint == nil {
		return nil, refuse("the endpoint of this call is no longer configured")
	}
	r := m.Connection.RememberFor(m.Endpoint)
	switch {
	case r == nil:
		return nil, refuse(op.Method + " " + m.Endpoint.Path + " offers no remember (approval.remember)")
	case a.Remember > r.MaxMinutes:
		return nil, refuse("remember is " + strconv.Itoa(a.Remember) + " minutes, past the " + strconv.Itoa(r.MaxMinutes) + " that " + op.Method + " " + m.Endpoint.Path + " allows")
	}
	gs, err := s.Store.ApprovalGrantsOf(ctx, c.Credential)
	if err != nil {
		s.logger().ErrorContext(ctx, "grants not read", "credential", c.Credential, "error", err)
		return nil, fault.Wrap(err, "the grants could not be read; nothing was decided, try again")
	}
	live, now := 0, s.now()
	for _, g := range gs {
		if g.Live(now) {
			live++
		}
	}
	if live >= MaxGrantsPerCredential {
		return nil, refuse(fmt.Sprintf("%s already has %d grants in force, the most it may have; approve without remember, or revoke one", c.Credential, live))
	}
	return &rememberPlan{conf: c, op: op, conn: m.Connection, ep: m.Endpoint, minutes: a.Remember, calls: r.MaxCalls}, nil
}

// remember creates the grant an approval asked for, once the approval is
// recorded, and records it on the credential's audit trail.
func (s *Service) remember(ctx context.Context, c *countersign.Confirmation, plan *rememberPlan, a confirm.Answer) (*countersign.ApprovalGrant, error) {
	now := s.now()
	g := &countersign.ApprovalGrant{ID: NewGrantID(), Credential: c.Credential, Connection: plan.conn.Name, Method: plan.ep.Method,
		Endpoint: plan.ep.Path, Confirmation: c.ID, GrantedBy: a.Approver, GrantedByPerson: a.Person, CreatedAt: now,
		ExpiresAt: now.Add(time.Duration(plan.minutes) * time.Minute), MaxCalls: plan.calls, CallsLeft: plan.calls}
	if err := s.Store.CreateApprovalGrant(ctx, g); err != nil {
		s.logger().ErrorContext(ctx, "grant not stored", "confirmation", c.ID, "error", err)
		return nil, fault.Wrap(err, "the call is approved, but allowing the next ones could not be stored: they will be asked for again")
	}
	actor := "approver:" + a.Approver
	if a.Person != nil {
		actor = "person:" + a.Person.Label()
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(g.Credential), Actor: actor, Action: "grant.created", Subject: g.ID,
		Credential: g.Credential, Connection: g.Connection, Method: g.Method, Path: g.Endpoint, Outcome: c.ID,
		Reason: fmt.Sprintf("allowed for %d minutes, up to %d calls, until %s", plan.minutes, g.MaxCalls, g.ExpiresAt.UTC().Format(time.RFC3339))})
	return g, nil
}

// GrantState is how a listed grant stands now: "active", "spent" (no
// calls left) or "expired".
func GrantState(g *countersign.ApprovalGrant, now time.Time) string {
	switch {
	case !now.Before(g.ExpiresAt):
		return "expired"
	case g.CallsLeft <= 0:
		return "spent"
	}
	return "active"
}

// GrantsOf lists the grants of the caller's own credential.
func (s *Service) GrantsOf(ctx context.Context, cred *countersign.Credential) ([]*countersign.ApprovalGrant, error) {
	gs, err := s.Store.ApprovalGrantsOf(ctx, cred.ID)
	if err != nil {
		s.logger().ErrorContext(ctx, "grants not read", "credential", cred.ID, "error", err)
		return nil, fault.Wrap(err, "the grants could not be read; try again")
	}
	return gs, nil
}

// Grants lists a page of every credential's grants (operators).
func (s *Service) Grants(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]*countersign.ApprovalGrant, string, error) {
	if err := RequireOperator(op); err != nil {
		return nil, "", err
	}
	if err := checkPage(q); err != nil {
		return nil, "", err
	}
	page, err := s.Store.ListApprovalGrants(ctx, q)
	if err != nil {
		return nil, "", s.listError(ctx, "grants", err)
	}
	return page.Items, page.Next, nil
}

// RevokeGrant deletes a grant: from the next call on, on every instance,
// it covers nothing. not_found when there is no such grant.
func (s *Service) RevokeGrant(ctx context.Context, op *countersign.Credential, id string) (*countersign.ApprovalGrant, error) {
	if err := RequireOperator(op); err != nil {
		return nil, err
	}
	g, err := s.Store.DeleteApprovalGrant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.NotFound, "there is no grant "+strconv.Quote(id))
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "grant not revoked", "grant", id, "error", err)
		return nil, fault.Wrap(err, "the grant could not be revoked; try again")
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(g.Credential), Actor: operatorActor(op), Action: "grant.revoked", Subject: g.ID,
		Credential: g.Credential, Connection: g.Connection, Method: g.Method, Path: g.Endpoint,
		Reason: fmt.Sprintf("revoked with %d of %d calls left", max(g.CallsLeft, 0), g.MaxCalls)})
	return g, nil
}
