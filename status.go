package countersign

import "slices"

// Status is the stored status of a confirmation. The effective status also
// depends on the clock (see confirm.Effective).
type Status string

// Confirmation statuses (docs/api.md, Confirmation status).
const (
	StatusPending           Status = "pending"
	StatusApproved          Status = "approved"
	StatusRejected          Status = "rejected"
	StatusExpired           Status = "expired"
	StatusRedeemed          Status = "redeemed"
	StatusExecuted          Status = "executed"
	StatusPartiallyExecuted Status = "partially_executed"
	StatusFailed            Status = "failed"
)

// AllStatuses lists every status, in order.
var AllStatuses = []Status{StatusPending, StatusApproved, StatusRejected,
	StatusExpired, StatusRedeemed, StatusExecuted, StatusPartiallyExecuted,
	StatusFailed}

// Valid reports whether s is one of the statuses (AllStatuses).
func (s Status) Valid() bool { return slices.Contains(AllStatuses, s) }

// Terminal reports whether a confirmation in status s is done: rejected,
// expired, or run to its outcomes (executed, partially executed, failed).
// No event moves it to another status (the lifecycle's table,
// shared/confirm).
func (s Status) Terminal() bool {
	switch s {
	case StatusRejected, StatusExpired, StatusExecuted, StatusPartiallyExecuted, StatusFailed:
		return true
	}
	return false
}

// statusTexts say what became of a decided confirmation, by its effective
// status, in the words every surface uses (the approval page, the MCP card
// and task): the verb, then the rest, with who decided between them. An
// approval the gateway runs itself (a script's batch, or GatewayRuns) has
// no agent to wait for, and reads as gateway says.
var statusTexts = map[Status]struct{ verb, rest, gateway string }{
	StatusRejected:          {"Rejected", "; nothing ran.", "; nothing ran."},
	StatusApproved:          {"Approved", "; waiting for the agent to run it.", "; running."},
	StatusRedeemed:          {"Approved", "; running.", "; running."},
	StatusExecuted:          {"Approved", " and executed.", " and executed."},
	StatusPartiallyExecuted: {"Approved", "; some operations failed.", "; some operations failed."},
	StatusFailed:            {"Approved", "; the operation failed.", "; the operation failed."},
	StatusExpired:           {"Approved", ", but the agent did not run it in time.", ", but it was not run in time."},
}

// DecidedText says what became of c, decided, in its effective status st
// (confirm.Effective): "Approved by ana@example.com and executed.". by is
// who decided as the surface shows them, with its leading space (" by
// ana@example.com"), or empty. An approval an agent may still redeem says
// until when. A status no decision leads to (pending, or expired
// undecided) reads as its name.
func (c *Confirmation) DecidedText(st Status, by string) string {
	t, ok := statusTexts[st]
	if !ok || c.Lapsed(st) {
		return string(st)
	}
	rest := t.rest
	switch {
	case c.GatewayExecutes():
		rest = t.gateway
	case st == StatusApproved && c.RedeemBy != nil:
		rest = "; the agent can run it until " + c.RedeemBy.UTC().Format("2 Jan 2006, 15:04:05 UTC") + " (redeem by)."
	}
	return t.verb + by + rest
}

// GatewayExecutes reports whether the gateway runs c's approved operations
// itself (a script's batch, or GatewayRuns) instead of waiting for the
// agent to redeem them.
func (c *Confirmation) GatewayExecutes() bool { return c.GatewayRuns || c.Kind == KindScript }

// Lapsed reports whether c, in its effective status st, expired before
// anyone decided it: nothing was approved, and nothing ran.
func (c *Confirmation) Lapsed(st Status) bool { return st == StatusExpired && c.DecidedAt == nil }

// Decider names who decided c as the surfaces show it: the person signed
// in (Person.Label), else the channel whose link was used; empty while
// nobody has.
func (c *Confirmation) Decider() string {
	if c.DecidedByPerson != nil {
		return c.DecidedByPerson.Label()
	}
	return c.DecidedBy
}
