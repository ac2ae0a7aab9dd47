package confirm

import (
	"fmt"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// Event is something that happens to a confirmation or review item. Every
// change of status the lifecycle writes is the answer of the table below
// to one event in one status; every refusal is its fault code.
type Event uint8

// The events.
const (
	// EventApprove: an approver approves (Service.Answer).
	EventApprove Event = iota + 1
	// EventReject: an approver rejects (Service.Answer).
	EventReject
	// EventTimeOut: the workflow's timer fired (Finalize expired).
	EventTimeOut
	// EventWorkflowRejected: the workflow saw the rejection (Finalize rejected).
	EventWorkflowRejected
	// EventWorkflowFailed: the workflow broke (Finalize failed).
	EventWorkflowFailed
	// EventRedeem: the agent redeems an approved call (Redeem).
	EventRedeem
	// EventExecute: the gateway runs an approval it executes itself: a
	// batch, the card, a script's run after approval (Execute, Rerun).
	// A finished one replays what is stored.
	EventExecute
	// EventClaim: the gateway claims one operation of such an approval
	// (ClaimOne, and each operation Execute runs).
	EventClaim
	// EventFinish: the outcomes are in; the final status follows from
	// them (Complete, FinishScript).
	EventFinish
	// EventRunReview: an operator runs a review item (ClaimReview).
	EventRunReview
	// EventDismissReview: an operator dismisses a review item (DismissReview).
	EventDismissReview
	// EventCountApproval: a person's approval is counted toward a quorum
	// (approval.required) that it does not yet complete (Service.Answer);
	// the one that completes it is EventApprove.
	EventCountApproval
)

// AllEvents lists every event, in order.
var AllEvents = []Event{EventApprove, EventReject, EventTimeOut, EventWorkflowRejected, EventWorkflowFailed,
	EventRedeem, EventExecute, EventClaim, EventFinish, EventRunReview, EventDismissReview, EventCountApproval}

var eventNames = [...]string{"", "approve", "reject", "time_out", "workflow_rejected", "workflow_failed",
	"redeem", "execute", "claim", "finish", "run_review", "dismiss_review", "count_approval"}

// String returns the event's name.
func (e Event) String() string {
	if int(e) < len(eventNames) && e != 0 {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// Transition is the table's answer to an event in a status: the status
// after it, or the code it is refused with.
type Transition struct {
	// To is the status after the event; the status before when the event
	// changes nothing (a late timer, a replay).
	To countersign.Status
	// ByOutcomes: the status after follows from the selected operations'
	// outcomes (executed, partially_executed or failed), once every one
	// is done; until then it is To.
	ByOutcomes bool
	// Refused is the code the event is refused with; empty when allowed.
	Refused fault.Code
}

// Allowed reports whether the event may happen.
func (t Transition) Allowed() bool { return t.Refused == "" }

// String returns the transition as the table test lists it.
func (t Transition) String() string {
	switch {
	case !t.Allowed():
		return "refused " + string(t.Refused)
	case t.ByOutcomes:
		return "-> " + string(t.To) + " until the outcomes decide"
	}
	return "-> " + string(t.To)
}

func to(s countersign.Status) Transition { return Transition{To: s} }
func no(c fault.Code) Transition         { return Transition{Refused: c} }

// The table's answers, besides to(status).
var (
	// same leaves the record in the status it is in (Next fills it in).
	same = Transition{}
	// outcomes lets the operations' outcomes pick the final status.
	outcomes = Transition{ByOutcomes: true}
	waiting  = no(fault.ConfirmationPending)
	decided  = no(fault.ConfirmationDecided)
	refused  = no(fault.ConfirmationRejected)
	lapsed   = no(fault.ConfirmationExpired)
	used     = no(fault.ConfirmationUsed)
)

// table is the lifecycle: for each (effective) status, what each event
// does, in the order of AllEvents. It is the one place a status is
// switched on; a refusal's fault is built from it (Transition.Err).
// approved × workflow_failed applies only to an approval the gateway runs
// itself, before any of it ran (Finalize): an agent's approval keeps its
// window, and stays.
var table = map[countersign.Status][]Transition{
	// approve, reject, time_out, workflow_rejected, workflow_failed, redeem, execute, claim, finish, run_review, dismiss_review, count_approval
	countersign.StatusPending: {to(countersign.StatusApproved), to(countersign.StatusRejected), to(countersign.StatusExpired),
		to(countersign.StatusRejected), to(countersign.StatusFailed), waiting, waiting, waiting, waiting,
		to(countersign.StatusRedeemed), to(countersign.StatusRejected), same},
	countersign.StatusApproved: {decided, decided, same, same, to(countersign.StatusFailed),
		to(countersign.StatusRedeemed), to(countersign.StatusRedeemed), to(countersign.StatusRedeemed), outcomes, decided, decided, decided},
	countersign.StatusRejected:          {decided, decided, same, same, same, refused, refused, refused, waiting, decided, decided, decided},
	countersign.StatusExpired:           {lapsed, lapsed, same, same, same, lapsed, lapsed, lapsed, waiting, lapsed, lapsed, lapsed},
	countersign.StatusRedeemed:          {decided, decided, same, same, same, used, same, same, outcomes, decided, decided, decided},
	countersign.StatusExecuted:          {decided, decided, same, same, same, used, same, used, same, decided, decided, decided},
	countersign.StatusPartiallyExecuted: {decided, decided, same, same, same, used, same, used, same, decided, decided, decided},
	countersign.StatusFailed:            {decided, decided, same, same, same, used, same, used, same, decided, decided, decided},
}

// Next is the table's answer to ev in status from. A status or event the
// table does not know is refused as internal: nothing moves on a pair
// nobody wrote down.
func Next(from countersign.Status, ev Event) Transition {
	row, ok := table[from]
	if !ok || ev == 0 || int(ev) > len(row) {
		return no(fault.Internal)
	}
	t := row[ev-1]
	if t.Allowed() && t.To == "" {
		t.To = from
	}
	return t
}

// On is the table's answer to ev for c as the clock has it now (Effective).
func On(c *countersign.Confirmation, ev Event, now time.Time) Transition {
	return Next(Effective(c, now), ev)
}

// Err is the fault of a refused transition for c, nil when it is allowed:
// the one place a lifecycle code gets its reason.
func (t Transition) Err(c *countersign.Confirmation) error {
	if t.Allowed() {
		return nil
	}
	noun := "confirmation"
	if c.Kind == countersign.KindReview {
		noun = "review item"
	}
	switch t.Refused {
	case fault.ConfirmationPending:
		if c.Status != countersign.StatusPending {
			return fault.Errorf(t.Refused, "%s %s is %s, not approved", noun, c.ID, c.Status)
		}
		return fault.Errorf(t.Refused, "%s %s is waiting for a person", noun, c.ID)
	case fault.ConfirmationExpired:
		at := c.ExpiresAt
		if c.Status == countersign.StatusApproved && c.RedeemBy != nil {
			at = *c.RedeemBy
		}
		return fault.Errorf(t.Refused, "%s %s expired at %s", noun, c.ID, at.Format(time.RFC3339))
	case fault.ConfirmationRejected:
		return fault.Errorf(t.Refused, "%s %s was rejected", noun, c.ID)
	case fault.ConfirmationUsed:
		return fault.Errorf(t.Refused, "%s %s was already used", noun, c.ID)
	case fault.ConfirmationDecided:
		if c.DecidedBy != "" {
			return fault.Errorf(t.Refused, "%s %s was already decided by %s (%s)", noun, c.ID, c.DecidedBy, c.Status)
		}
		return fault.Errorf(t.Refused, "%s %s was already decided (%s)", noun, c.ID, c.Status)
	}
	return fault.Errorf(t.Refused, "%s %s is %s: nothing may happen to it now", noun, c.ID, c.Status)
}
