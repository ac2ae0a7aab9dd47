package calls

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// record appends r to the audit trail, if there is one.
func (s *Service) record(ctx context.Context, r countersign.AuditRecord) {
	if s.Audit == nil {
		return
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	s.Audit.Record(ctx, r)
}

// auditCall records a decided call: every denial, pause and execution,
// and every redemption. Denials and auto-tier calls go to the
// credential's expiring chain (audit.CallsChainOf), the rest to its
// chain that stays. An auto-tier execution is recorded only when
// settings.json turns audit.auto_calls on, so the auto path writes
// nothing by default; code mode's collected calls are recorded with the
// batch they join.
func (s *Service) auditCall(ctx context.Context, cred *countersign.Credential, p *prepared, d policy.Decision, res *Result, err error) {
	if s.Audit == nil {
		return
	}
	r := countersign.AuditRecord{Chain: audit.ChainOf(cred.ID), Actor: cred.ID, Credential: cred.ID,
		Connection: p.Connection, Method: p.Method, Path: p.Path, Tier: d.Tier.String(), Rule: d.Rule,
		Reason: d.Reason, Subject: p.ConfirmationID}
	if p.hook != nil && p.hook.Decision != policy.HookNone {
		r.Hook = &countersign.AuditHook{Decision: p.hook.Decision.String(), Reason: p.hook.Reason}
	}
	if err != nil {
		code := fault.CodeOf(err)
		switch {
		case code.Denial():
			r.Action = "call.denied"
		case p.ConfirmationID != "" && code == fault.UpstreamUnreachable:
			// The approval was spent: the call was made and failed.
			r.Action = "confirmation.redeemed"
		default:
			return // not a decision: invalid input, a store outage, a limit
		}
		r.Outcome, r.Reason = string(code), fault.ReasonOf(err)
		if r.Action == audit.ActionDenied {
			s.expiring(&r)
		}
		s.record(ctx, r)
		return
	}
	if res.Operation.Binding != "" {
		r.Binding = res.Operation.Binding
	}
	switch res.Outcome {
	case Denied:
		r.Action, r.Outcome, r.Reason = audit.ActionDenied, string(res.Code), res.Reason
		if res.ReviewID != "" {
			r.Action, r.Subject = "review.queued", res.ReviewID
		} else {
			s.expiring(&r)
		}
	case Paused:
		r.Action, r.Outcome, r.Subject = "call.paused", "confirmation_required", res.Confirmation.ID
	case Executed:
		if d.Tier == policy.Auto && p.ConfirmationID == "" {
			if !s.Current().Settings.Audit.AutoCalls {
				return
			}
			s.expiring(&r)
		}
		r.Action = "call.executed"
		if res.Response != nil {
			r.Outcome = strconv.Itoa(res.Response.Status) + " " + http.StatusText(res.Response.Status)
		}
		if c := res.Confirmation; c != nil {
			r.Subject, r.Outcome = c.ID, string(c.Status)
			r.Action = "confirmation.redeemed"
			if p.ConfirmationID == "" {
				r.Action = "confirmation.granted" // the person answered in the client
			}
			if len(c.Operations) == 1 {
				r.Binding = c.Operations[0].Binding
			}
		}
	default:
		return
	}
	s.record(ctx, r)
}

// expiring moves r to its credential's expiring chain, with a TTL of
// settings.json audit.retention_days from now: denials and auto-tier calls
// are kept that long, everything a confirmation involves for good.
func (s *Service) expiring(r *countersign.AuditRecord) {
	days := s.Current().Settings.Audit.RetentionDays
	if days <= 0 {
		days = config.DefaultAuditRetentionDays
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	r.Chain = audit.CallsChainOf(r.Credential)
	r.TTL = r.At.Add(time.Duration(days) * 24 * time.Hour).Unix()
}

// auditConfirmation records what an approver, an operator or a timer did
// to a confirmation or review item.
func (s *Service) auditConfirmation(ctx context.Context, actor, action string, c *countersign.Confirmation, reason string) {
	if s.Audit == nil || c == nil {
		return
	}
	r := countersign.AuditRecord{Chain: audit.ChainOf(c.Credential), Actor: actor, Action: action, Subject: c.ID,
		Credential: c.Credential, Outcome: string(c.Status), Reason: reason}
	if len(c.Operations) == 1 {
		op := c.Operations[0]
		r.Connection, r.Method, r.Path, r.Binding = op.Connection, op.Method, op.Path, op.Binding
		if op.Outcome != nil && op.Outcome.Error == "" && action != "confirmation.approved" {
			r.Outcome += " (" + strconv.Itoa(op.Outcome.Status) + ")"
		}
	}
	s.record(ctx, r)
}

// AuditExpired records that a wait ended without a decision (the
// workflow's timer): the finalize task calls it.
func (s *Service) AuditExpired(ctx context.Context, c *countersign.Confirmation) {
	s.auditConfirmation(ctx, "system", "confirmation."+string(c.Status), c, "")
}

// AuditScript records what happened to a code-mode batch as a whole, on
// its credential's chain like a single call's confirmation: its creation
// ("script.paused", by the credential) and its end ("script.finished",
// with the batch's status and, for a failure, why). The decision is
// recorded by the approval itself (confirmation.approved or .rejected).
func (s *Service) AuditScript(ctx context.Context, actor, action string, c *countersign.Confirmation, reason string) {
	s.auditConfirmation(ctx, actor, action, c, reason)
}

// AuditScriptOperation records that operation index of batch id ran after
// approval (once: a replay of an operation that already ran is not
// recorded again), with its outcome: the upstream status, or why the
// upstream could not be reached.
func (s *Service) AuditScriptOperation(ctx context.Context, credential, id string, index int, op countersign.Operation, out countersign.Outcome) {
	if s.Audit == nil {
		return
	}
	r := countersign.AuditRecord{Chain: audit.ChainOf(credential), Actor: "system", Action: "script.operation", Subject: id + "#" + strconv.Itoa(index),
		Credential: credential, Connection: op.Connection, Method: op.Method, Path: op.Path, Binding: op.Binding,
		Outcome: strconv.Itoa(out.Status) + " " + http.StatusText(out.Status)}
	if out.Error != "" {
		r.Outcome, r.Reason = string(fault.UpstreamUnreachable), out.Error
	}
	s.record(ctx, r)
}
