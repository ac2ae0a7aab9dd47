package calls

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
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

// callRecord is the audit record of a decided call before its outcome:
// who made it, what it was, and the decision (tier, rule, reason, hook).
func (s *Service) callRecord(cred *countersign.Credential, p *prepared, d policy.Decision) countersign.AuditRecord {
	r := countersign.AuditRecord{Chain: audit.ChainOf(cred.ID), Actor: cred.ID, Credential: cred.ID,
		Connection: p.Connection, Method: p.Method, Path: p.Path, Tier: d.Tier.String(), Rule: d.Rule,
		Reason: d.Reason, Subject: p.ConfirmationID}
	if p.hook != nil && p.hook.Decision != policy.HookNone {
		r.Hook = &countersign.AuditHook{Decision: p.hook.Decision.String(), Reason: p.hook.Reason}
	}
	return r
}

// auditCall records a decided call: every denial, pause and execution.
// Denials and auto-tier calls go to the credential's expiring chain
// (audit.CallsChainOf), the rest to its chain that stays. An auto-tier
// execution is recorded only when settings.json turns audit.auto_calls
// on, so the auto path writes nothing by default; code mode's collected
// calls are recorded with the batch they join. A call that ran an
// approval (a redemption, an answer given in the client) is recorded by
// the lifecycle's transition, with this call's record (callRecord).
func (s *Service) auditCall(ctx context.Context, cred *countersign.Credential, p *prepared, d policy.Decision, res *Result, err error) {
	if s.Audit == nil {
		return
	}
	r := s.callRecord(cred, p, d)
	if err != nil {
		code := fault.CodeOf(err)
		if !code.Denial() {
			// Not a decision (invalid input, a store outage, a limit), or
			// an approval spent on an upstream that failed, which the
			// lifecycle recorded.
			return
		}
		r.Action, r.Outcome, r.Reason = audit.ActionDenied, string(code), fault.ReasonOf(err)
		s.expiring(&r)
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
		if res.recorded {
			return // written with the confirmation (pausedAlong)
		}
		r.Action, r.Outcome, r.Subject = "call.paused", "confirmation_required", res.Confirmation.ID
	case Executed:
		if res.Confirmation != nil {
			return // the lifecycle recorded the approval it ran
		}
		if d.Tier == policy.Auto && p.ConfirmationID == "" {
			if !s.Current().Settings.Audit.AutoCalls {
				return
			}
			s.expiring(&r)
		}
		r.Action = "call.executed"
		if g := res.ApprovalGrant; g != nil {
			// Each use of a grant is on the trail that stays.
			r.Action, r.Subject = "grant.used", g.ID
			r.Reason = fmt.Sprintf("ran under grant %s (approved by %s; %d of %d calls left until %s)", g.ID, grantedBy(g), g.CallsLeft, g.MaxCalls,
				g.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if res.Response != nil {
			r.Outcome = strconv.Itoa(res.Response.Status) + " " + http.StatusText(res.Response.Status)
		}
	default:
		return
	}
	s.record(ctx, r)
}

// alongAuditor is an Auditor that can write a record in the same
// transaction as a confirmation write (audit.Trail.Along).
type alongAuditor interface {
	Along(ctx context.Context, build func(c *countersign.Confirmation) (countersign.AuditRecord, bool)) (context.Context, *store.Along)
}

// pausedAlong returns ctx carrying the call's call.paused record (as
// auditCall makes it), to be written with the confirmation the pause
// creates, in one transaction where the store can (audit.Trail.Along).
func (s *Service) pausedAlong(ctx context.Context, cred *countersign.Credential, p *prepared, d policy.Decision, op countersign.Operation) (context.Context, *store.Along) {
	a, ok := s.Audit.(alongAuditor)
	if !ok {
		return ctx, nil
	}
	return a.Along(ctx, func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		r := s.callRecord(cred, p, d)
		if op.Binding != "" {
			r.Binding = op.Binding
		}
		r.Action, r.Outcome, r.Subject, r.At = "call.paused", "confirmation_required", c.ID, s.now()
		return r, true
	})
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
