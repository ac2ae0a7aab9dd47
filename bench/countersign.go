package bench

import "github.com/countersign/countersign/shared/policy"

// Countersign decides with shared/policy as the gateway does: Evaluate
// resolves the path and decides in one call.
type Countersign struct {
	policy *policy.Set
}

// NewCountersign returns the countersign engine for a compiled policy.
func NewCountersign(p *policy.Set) *Countersign { return &Countersign{policy: p} }

// Name returns "countersign".
func (*Countersign) Name() string { return "countersign" }

// Decide evaluates the call; it never fails.
func (e *Countersign) Decide(c *policy.Call, cred *policy.Credential) (Result, error) {
	d := policy.Evaluate(e.policy, policy.Input{Call: c, Credential: cred})
	return Result{Outcome: d.Outcome, Code: d.Code, Tier: d.Tier, Escalated: d.Escalated, Notice: d.Notice}, nil
}
