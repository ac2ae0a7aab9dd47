package calls

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/telemetry"
)

// Outcome is what happened to a call.
type Outcome uint8

// Outcomes of Do.
const (
	// Executed: the call ran (now, or by redeeming its approval).
	Executed Outcome = iota
	// Denied: nothing ran; Result.Code and Reason say why.
	Denied
	// Paused: a confirmation was created and waits for a person.
	Paused
	// Collected: the call needs confirmation and, as Options asked,
	// nothing was created (code mode collects it into a batch).
	Collected
)

var outcomeNames = [...]string{"executed", "denied", "confirmation_required", "collected"}

// String returns the outcome's log name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome?"
}

// PauseMode says what a surface does with a call that must wait for a person.
type PauseMode uint8

// Pause modes.
const (
	// PauseAsk creates a confirmation that the agent redeems after a person
	// approves it (/v1/calls, REST with Prefer: respond-async).
	PauseAsk PauseMode = iota
	// PauseRefuse denies the call with requires_confirmation: the surface
	// cannot ask a person (plain REST). Options.RefuseReason says why.
	PauseRefuse
	// PauseCollect creates nothing and returns Collected with the bound
	// operation (code mode collects it into one batch).
	PauseCollect
	// PauseGatewayRuns creates a confirmation that the gateway runs itself,
	// once, when a person approves it (the MCP card).
	PauseGatewayRuns
)

// Options are a surface's choices; the zero value pauses with PauseAsk.
type Options struct {
	Pause PauseMode
	// RefuseReason completes the reason of a PauseRefuse denial, e.g.
	// "plain REST cannot ask a person".
	RefuseReason string
	// Grant, when set, is the person's answer to this call given in the
	// client (MCP input requests): a call the policy does not deny runs
	// once if the person approved it, and nothing runs if not; the answer
	// is spent either way. Pause is then not used.
	Grant *Grant
	// Client is what the calling client said of itself, if anything: a
	// confirmation the call creates records it (bounded) as its asker.
	Client *Client
	// Bind sets Result.Operation for every outcome, not only Paused and
	// Collected: code mode journals each call with its binding. It costs a
	// canonical hash per call, so the other surfaces leave it off.
	Bind bool
}

// Result is what Do decided and did. Failures that are not decisions
// (invalid input, an upstream that cannot be reached, a spent approval, a
// store outage) are returned as errors carrying a fault.Code.
type Result struct {
	Outcome  Outcome
	Decision policy.Decision
	// Code and Reason explain a denial (Denied).
	Code   fault.Code
	Reason string
	// ReviewID names the review item queued for a review_required denial.
	ReviewID string
	// Response is the upstream's answer (Executed).
	Response *Response
	// Notice is set when the call ran although it requires confirmation
	// (ask_agent): the surface tells the agent so.
	Notice bool
	// Confirmation is the new confirmation (Paused) or the redeemed one
	// (Executed through a redemption).
	Confirmation *countersign.Confirmation
	// Operation is the bound operation (Paused, Collected; every outcome
	// with Options.Bind).
	Operation countersign.Operation
	// PreviewURL is the exact URL the call will reach (Paused).
	PreviewURL string
	// ApprovalGrant is the grant the call ran under (Executed without
	// asking, as a person allowed for a while), as it is after this use.
	ApprovalGrant *countersign.ApprovalGrant
	// At is when the call was decided.
	At time.Time

	// recorded: the call's audit record was written with the pause.
	recorded bool
}

// Do runs one call through the pipeline for an authenticated credential.
func (s *Service) Do(ctx context.Context, cred *countersign.Credential, c *Call, o Options) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := s.rateLimit(cred); err != nil {
		return nil, err
	}
	p, err := prepare(c, s.Current())
	if err != nil {
		return nil, err
	}
	ctx, sp := telemetry.StartCall(ctx, p.Connection, p.Method)
	d, err := s.evaluate(ctx, cred, p, o)
	if err != nil {
		// The call could not be counted against its rate rules: nothing
		// runs (every limit fails closed).
		endCall(sp, nil, err)
		return nil, err
	}
	telemetry.Decided(sp, d.Tier.String(), d.Outcome.String(), d.Rule, d.Escalated)
	res, err := s.outcome(ctx, cred, p, d, o)
	s.logCall(ctx, cred, p, d, res, err)
	s.auditCall(ctx, cred, p, d, res, err)
	endCall(sp, res, err)
	return res, err
}

func (s *Service) outcome(ctx context.Context, cred *countersign.Credential, p *prepared, d policy.Decision, o Options) (*Result, error) {
	res := &Result{Decision: d, At: s.now()}
	if o.Bind {
		op, err := p.operation(cred, &d.Match)
		if err != nil {
			return nil, err
		}
		res.Operation = op
	}
	if d.Outcome == policy.Deny {
		return s.deny(ctx, cred, p, res)
	}
	// A call that names an approval redeems it, whatever the credential's
	// choice: an approval is bound to the credential and the call, and a
	// foreign or mismatched one is refused rather than ignored.
	if p.ConfirmationID != "" {
		return s.redeem(ctx, cred, p, res)
	}
	if o.Grant != nil {
		return s.granted(ctx, cred, p, res, o.Grant)
	}
	if d.Outcome == policy.Execute {
		resp, err := s.send(ctx, p, s.agentKey(cred, p))
		if err != nil {
			return nil, err
		}
		res.Outcome, res.Response, res.Notice = Executed, resp, d.Notice
		return res, nil
	}
	if p.Intent == policy.IntentConfirmedWrite {
		return nil, fault.New(fault.InvalidRequest, "confirmation_id is required with intent confirmed_write")
	}
	if o.Pause != PauseCollect {
		// A person may have allowed such calls for a while (a grant):
		// consulted only now that the decision says pause.
		if ran, err := s.underGrant(ctx, cred, p, res); ran != nil || err != nil {
			return ran, err
		}
	}
	switch o.Pause {
	case PauseRefuse:
		res.Outcome, res.Code = Denied, fault.RequiresConfirmation
		res.Reason = p.Method + " " + d.Match.Endpoint.Path + " requires confirmation"
		if o.RefuseReason != "" {
			res.Reason += ", and " + o.RefuseReason
		}
		return res, nil
	case PauseCollect:
		if err := s.holdable(p); err != nil {
			return nil, err
		}
		if !o.Bind {
			op, err := p.operation(cred, &d.Match)
			if err != nil {
				return nil, err
			}
			res.Operation = op
		}
		res.Outcome = Collected
		return res, nil
	}
	return s.pause(ctx, cred, p, res, o)
}

// evaluate resolves the call, asks the connection's hooks, and takes the
// policy decision (policy.Decide); an approver's answer is another thing
// (Service.Answer).
func (s *Service) evaluate(ctx context.Context, cred *countersign.Credential, p *prepared, o Options) (policy.Decision, error) {
	m, ok := p.cfg.Policy.Resolve(p.Connection, p.Method, p.Path)
	in := policy.Input{Call: &p.tier, Credential: tierCredential(cred)}
	if ok && len(m.Endpoint.Rates) > 0 && p.ConfirmationID == "" && o.Grant == nil {
		// Counted once, when the call is made: its redemption (or the
		// client's answer carrying it again) is the same call.
		counts, err := s.countRates(ctx, cred, &m)
		if err != nil {
			return policy.Decision{}, err
		}
		in.Counts = counts
	}
	if ok && m.Connection.Hooked && !m.Endpoint.Hidden {
		in.Hook = s.askHooks(ctx, cred, p, &m)
		p.hook = &in.Hook
	}
	d := policy.Decide(m, ok, in)
	s.shadow(ctx, cred, p, in, d)
	return d, nil
}

// tierCredential is the decision's view of a stored credential.
func tierCredential(c *countersign.Credential) *policy.Credential {
	return &policy.Credential{ID: c.ID, Choice: c.Choice, ReadOnly: c.ReadOnly, Connections: c.Connections}
}

// deny records a denial; review_required also queues a review item for the
// operator surface.
func (s *Service) deny(ctx context.Context, cred *countersign.Credential, p *prepared, res *Result) (*Result, error) {
	d := &res.Decision
	res.Outcome, res.Code, res.Reason = Denied, fault.Code(d.Code), d.Reason
	if d.Code != policy.CodeReviewRequired {
		return res, nil
	}
	if err := s.holdable(p); err != nil {
		return nil, err
	}
	op, err := p.operation(cred, &d.Match)
	if err != nil {
		return nil, err
	}
	l := s.limits()
	if err := s.takeSlot(ctx, "reviews:"+cred.ID, l.ReviewRetention(), l.PendingReviews, "review items queued by "+cred.ID); err != nil {
		return nil, err
	}
	// Four eyes holds at the review tier too: the operator who runs the
	// item must not be who made the call (confirm.MayRunReview).
	var rules policy.Rules
	if m := d.Match; m.Connection != nil {
		rules = m.Connection.RulesFor(m.Endpoint)
	}
	rv, err := s.Confirm.CreateReview(ctx, confirm.ReviewRequest{Credential: cred.ID, Reason: d.Reason, Operation: op, Retention: l.ReviewRetention(),
		SeparateApprover: rules.SeparateApprover})
	if err != nil {
		s.logger().ErrorContext(ctx, "review item not stored", "credential", cred.ID, "error", err)
		return nil, fault.Wrap(err, "the review item could not be queued")
	}
	res.ReviewID = rv.ID
	return res, nil
}

// pause creates a pending confirmation. Nothing is sent upstream;
// approvers get their links from the workflow's notify task.
func (s *Service) pause(ctx context.Context, cred *countersign.Credential, p *prepared, res *Result, o Options) (*Result, error) {
	if err := s.holdable(p); err != nil {
		return nil, err
	}
	op, err := p.operation(cred, &res.Decision.Match)
	if err != nil {
		return nil, err
	}
	// The quota's use is counted with the confirmation (reserveAlong).
	qctx, reserved, err := s.reserveAlong(ctx, cred, countersign.KindCall)
	if err != nil {
		return nil, err
	}
	// The record keeps the approval rules in force now (the endpoint's,
	// else the connection's): who may decide does not change while it waits.
	var rules policy.Rules
	if m := res.Decision.Match; m.Connection != nil {
		rules = m.Connection.RulesFor(m.Endpoint)
	}
	pctx, psp := telemetry.Start(qctx, "countersign.pause")
	// The call's record (call.paused) is written with the confirmation
	// where the store can: one commit (else auditCall writes it).
	actx, along := s.pausedAlong(pctx, cred, p, res.Decision, op)
	conf, err := s.Confirm.Create(actx, confirm.Request{Kind: countersign.KindCall, Credential: cred.ID, Reason: res.Decision.Reason,
		Operations: []countersign.Operation{op}, GatewayRuns: o.Pause == PauseGatewayRuns, Asker: o.Client.Asker(),
		Required: rules.Required, SeparateApprover: rules.SeparateApprover, Rules: confirm.RulesOf(p.cfg.Policy, []countersign.Operation{op})})
	psp.End("", err)
	if rerr := reserved(ctx, err); rerr != nil {
		if err == nil {
			// Created, and the quota, counted on its own, is full: nobody
			// may be asked.
			if _, ferr := s.Confirm.Finalize(context.WithoutCancel(ctx), conf.ID, countersign.StatusFailed); ferr != nil {
				s.logger().ErrorContext(ctx, "finalize over the quota", "confirmation", conf.ID, "error", ferr)
			}
		}
		return nil, rerr
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "confirmation not created", "credential", cred.ID, "error", err)
		return nil, fault.Wrap(err, "the confirmation could not be created")
	}
	res.Outcome, res.Confirmation, res.Operation = Paused, conf, op
	res.recorded = along.Done()
	res.PreviewURL = s.upstreamURL(p)
	return res, nil
}

// redeem consumes the approval the call names and runs its operation once.
// The approved operation runs as it was approved, forwarded headers
// included: the redeeming request's own headers neither bind nor go
// upstream.
func (s *Service) redeem(ctx context.Context, cred *countersign.Credential, p *prepared, res *Result) (*Result, error) {
	m := &res.Decision.Match
	// With tracing on, the redemption continues the trace its pause
	// started (the record keeps its traceparent); off, nothing is read.
	rctx, rsp := ctx, telemetry.Span{}
	if telemetry.Tracing() {
		if c, err := s.Confirm.Get(ctx, p.ConfirmationID); err == nil {
			rctx, rsp = telemetry.StartRedeem(ctx, c.Trace, c.ID)
		}
	}
	ran, err := s.Confirm.RedeemCall(rctx, confirm.Redemption{
		ID: p.ConfirmationID, Credential: cred.ID,
		Bind: func(approved *countersign.Operation) (string, error) {
			op, err := p.operationWith(cred, m, approved.Args.Headers)
			return op.Binding, err
		},
		Upstream: s.replayer(),
		Record:   s.callRecord(cred, p, res.Decision),
	})
	if err != nil {
		err = lifecycleError(ctx, s, err)
		rsp.End(redeemOutcome(err), err) // nothing was redeemed
		return nil, err
	}
	rsp.Redeemed(redeemOutcome(ran.Err), ran.Err)
	if ran.Err != nil {
		return nil, ran.Err
	}
	res.Outcome, res.Response, res.Confirmation = Executed, ran.Response, ran.Confirmation
	return res, nil
}

// lifecycleError keeps a lifecycle error's code; anything else (a store
// outage) is logged and becomes internal.
func lifecycleError(ctx context.Context, s *Service, err error) error {
	if fe := fault.As(err); fe != nil {
		return fe
	}
	s.logger().ErrorContext(ctx, "confirmation lifecycle failed", "error", err)
	return fault.Wrap(err, "the confirmation could not be read or written; try again")
}

// agentKey is the Idempotency-Key sent upstream for an agent's own key,
// scoped to the credential so two agents' keys never collide upstream.
func (s *Service) agentKey(cred *countersign.Credential, p *prepared) string {
	if p.IdempotencyKey == "" {
		return ""
	}
	return cred.ID + ":" + p.IdempotencyKey
}

// upstreamURL is the URL a call reaches, for the preview.
func (s *Service) upstreamURL(p *prepared) string {
	conn := p.cfg.Connections[p.Connection]
	u := strings.TrimRight(conn.BaseURL, "/") + p.Path
	q := p.RawQuery
	if q == "" && len(p.Query) > 0 {
		q = p.Query.Encode()
	}
	if q != "" {
		u += "?" + q
	}
	return u
}

// logCall writes the one line of a call.
func (s *Service) logCall(ctx context.Context, cred *countersign.Credential, p *prepared, d policy.Decision, res *Result, err error) {
	outcome, code, confirmation := "error", fault.CodeOf(err), ""
	if res != nil {
		outcome, code = res.Outcome.String(), res.Code
		if res.Confirmation != nil {
			confirmation = res.Confirmation.ID
		}
	}
	if confirmation == "" {
		confirmation = p.ConfirmationID
	}
	l := s.logger()
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The record goes to the handler directly, built once: typed
	// attributes (no value boxed into an interface), no caller's PC (no
	// source is logged; finding it was runtime.Callers on every call) and
	// the request id among the attributes, where reqlog would copy the
	// record to add it. One allocation: the attributes past the fifth.
	attrs := [...]slog.Attr{
		slog.String("credential", cred.ID), slog.String("connection", p.Connection), slog.String("method", p.Method),
		slog.String("path", p.Path), slog.String("tier", d.Tier.String()), slog.String("outcome", outcome),
		slog.String("code", string(code)), slog.Bool("escalated", d.Escalated), slog.String("rule", d.Rule),
		slog.String("confirmation", confirmation), {},
	}
	n := len(attrs) - 1
	if id := reqlog.ID(ctx); id != "" {
		attrs[n] = slog.String(reqlog.Attr, id)
		n++
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "call", 0)
	r.AddAttrs(attrs[:n]...)
	_ = l.Handler().Handle(ctx, r)
}
