package policy

import (
	"errors"
	"strconv"
)

// Rate escalates a credential's calls of one endpoint past a count within a
// window: {"rate": {"calls": 20, "per_seconds": 600}, "escalate": "review"}
// (docs/approvers.md, Velocity). The decision does not count: the pipeline
// counts the call in the store (across every instance) and passes the
// count in Input.Counts, so Decide stays pure.
type Rate struct {
	// Calls is how many calls a window allows; the next is escalated.
	Calls int64
	// PerSeconds is the window's length.
	PerSeconds int64
	// Escalate is Review or Never.
	Escalate Tier
	// Rule names the rule for explanations, e.g.
	// `connections/crm/policy.json endpoints[1].escalate[0] rate 20 calls per 600 s: review`.
	Rule string
}

// Bounds of a rate rule, so that a count and its window stay small.
const (
	MaxRateCalls      = 1_000_000
	MaxRatePerSeconds = 86400
	// MaxRates is how many rate rules one endpoint may have (its own and
	// its connection's): each is one store write per call.
	MaxRates = 4
)

// Window is the fixed window a call at unix second now falls in: its
// number (now / PerSeconds) and when it ends (unix seconds).
func (r *Rate) Window(now int64) (n, end int64) {
	if r.PerSeconds <= 0 {
		return 0, now
	}
	n = now / r.PerSeconds
	return n, (n + 1) * r.PerSeconds
}

func checkRate(r *Rate) error {
	switch {
	case r.Escalate != Review && r.Escalate != Never:
		return errors.New("escalate must be review or never, not " + r.Escalate.String())
	case r.Calls < 1 || r.Calls > MaxRateCalls:
		return errors.New("calls must be from 1 to " + strconv.Itoa(MaxRateCalls))
	case r.PerSeconds < 1 || r.PerSeconds > MaxRatePerSeconds:
		return errors.New("per_seconds must be from 1 to " + strconv.Itoa(MaxRatePerSeconds))
	}
	return nil
}

func rateText(r *Rate) string {
	return strconv.FormatInt(r.Calls, 10) + " calls per " + strconv.FormatInt(r.PerSeconds, 10) + " s"
}

// Remember is approval.remember: an approver may also allow the same
// credential's later calls of the endpoint for up to MaxMinutes and
// MaxCalls calls (a grant; docs/approvers.md, Approve and remember).
type Remember struct {
	MaxMinutes int
	MaxCalls   int
}

// Bounds of approval.remember.
const (
	MaxRememberMinutes = 24 * 60
	MaxRememberCalls   = 1000
)

// RememberFor is the remember rule for calls to ep (its own, else its
// connection's), or nil where a grant may not be offered: no rule, or the
// endpoint's approval rules ask for more than one person's answer to each
// call (a quorum or four eyes). Passkey endpoints will refuse it too.
func (c *Connection) RememberFor(ep *Endpoint) *Remember {
	r := c.Remember
	if ep != nil && ep.Remember != nil {
		r = ep.Remember
	}
	if r == nil {
		return nil
	}
	// A grant stands in for one person's answer: never where more than
	// one person answers each call, nor where each approval is a passkey's
	// (a grant cannot carry an assertion).
	if rules := c.RulesFor(ep); rules.Required > 1 || rules.SeparateApprover || rules.Passkey {
		return nil
	}
	return r
}
