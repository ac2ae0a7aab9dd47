package calls

import (
	"context"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/telemetry"
)

// Trying a policy before enforcing it (settings.json candidate_config,
// docs/operators.md): every call the live policy decides is decided by the
// candidate too, with the same input (the live decision's hook answer and
// rate counts: no I/O is added, only a second pure evaluation), and never
// enforced. A call whose outcome, tier or rule differs is counted
// (countersign_policy_shadow_differs_total) and recorded on its
// credential's audit chain as policy.shadow_differs, bounded and counted
// like denials: identical differences within a minute are one record and
// a summary. A difference's Subject is the candidate's digest
// (config.Config.Digest): the summary counts the candidate in force's
// alone, and two candidates' identical differences are never counted
// into one record.

// shadow decides the call with the candidate policy and records a
// difference from the live decision d.
func (s *Service) shadow(ctx context.Context, cred *countersign.Credential, p *prepared, in policy.Input, d policy.Decision) {
	cand := p.cfg.Candidate
	if cand == nil || cand.Policy == nil {
		return
	}
	m, ok := cand.Policy.Resolve(p.Connection, p.Method, p.Path)
	c := policy.Decide(m, ok, in)
	if !ShadowDiffers(d, c) {
		return
	}
	telemetry.ShadowDiffered(p.Connection)
	endpoint := p.Path
	if d.Match.Endpoint != nil {
		endpoint = d.Match.Endpoint.Path
	} else if ok && m.Endpoint != nil {
		endpoint = m.Endpoint.Path
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(cred.ID), Actor: "system", Action: audit.ActionShadowDiffers,
		Subject: cand.Digest, Credential: cred.ID, Connection: p.Connection, Method: p.Method, Path: endpoint,
		Tier: d.Tier.String(), Rule: d.Rule, Outcome: "live " + DecisionText(d) + "; candidate " + DecisionText(c),
		Reason: audit.ShadowReason(c.Rule)})
}

// ShadowDiffers reports whether the candidate's decision c of a call
// differs from the live one d: in outcome, tier or rule.
func ShadowDiffers(d, c policy.Decision) bool {
	return c.Outcome != d.Outcome || c.Tier != d.Tier || c.Rule != d.Rule
}

// DecisionText is a decision as a difference shows it: "pause (confirm)",
// "deny blocked (never)".
func DecisionText(d policy.Decision) string {
	s := d.Outcome.String()
	if d.Outcome == policy.Deny && d.Code != "" {
		s += " " + string(d.Code)
	}
	return s + " (" + d.Tier.String() + ")"
}
