package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/views"
)

// Event types (docs/api.md, Webhooks).
const (
	TypeRequested = "confirmation.requested"
	TypeDecided   = "confirmation.decided"
	TypeExpired   = "confirmation.expired"
	TypeExecuted  = "confirmation.executed"
	// TypeApprovalCounted: a person's approval was counted toward a quorum
	// (approval.required) that it does not complete; the confirmation
	// stays pending. The approval that completes it is a decided event.
	TypeApprovalCounted = "confirmation.approval_counted"
)

// Event is what approver channels receive. Its JSON form is the webhook body
// of the json format.
type Event struct {
	// Type is one of TypeRequested, TypeApprovalCounted, TypeDecided,
	// TypeExpired, TypeExecuted.
	Type         string            `json:"type"`
	Confirmation EventConfirmation `json:"confirmation"`
	// Links are set on requested events only. A channel sends only the links
	// whose Approver is its own Name.
	Links []EventLink `json:"links,omitempty"`
	// Decision is "approved" or "rejected" on decided events.
	Decision string `json:"decision,omitempty"`
	// Status is the confirmation's status on executed, expired and
	// approval_counted (pending) events.
	Status string `json:"status,omitempty"`
}

// EventConfirmation describes the confirmation an event is about.
type EventConfirmation struct {
	ID         string           `json:"id"`
	Kind       string           `json:"kind"` // "call" or "script"
	ExpiresAt  time.Time        `json:"expires_at"`
	Credential string           `json:"credential"` // the credential id, never a key
	Reason     string           `json:"reason"`
	Operations []EventOperation `json:"operations"`
	// DecidedBy is who decided, once someone has (decided and executed events).
	DecidedBy *views.Decider `json:"decided_by,omitempty"`
	// Approvals is the count of a quorum (approval.required), as
	// GET /v1/confirmations/<id> shows it; nil when one approval decides.
	Approvals *views.Approvals `json:"approvals,omitempty"`
	// OmittedOperations counts the operations left out of a webhook payload
	// (beyond MaxEventOperations).
	OmittedOperations int `json:"omitted_operations,omitempty"`
}

// ConfirmationOf is the event view of a stored confirmation.
func ConfirmationOf(c *countersign.Confirmation) EventConfirmation {
	ec := EventConfirmation{ID: c.ID, Kind: string(c.Kind), ExpiresAt: c.ExpiresAt, Credential: c.Credential, Reason: c.Reason,
		DecidedBy: views.DecidedBy(c), Approvals: views.ApprovalsOf(c)}
	for _, op := range c.Operations {
		args, _ := json.Marshal(op.Runs().Args)
		eo := EventOperation{Connection: op.Connection, Method: op.Method, Path: op.Path, Endpoint: op.Endpoint, Args: args}
		if op.Outcome != nil {
			eo.Outcome, _ = json.Marshal(op.Outcome)
		}
		if op.Current != nil {
			eo.Current, _ = json.Marshal(op.Current.Shown())
			eo.Summary = op.Sentence()
		}
		if len(op.Changes) > 0 {
			eo.Changes, _ = json.Marshal(op.Changes)
		}
		if len(op.Edited) > 0 {
			eo.Edited, _ = json.Marshal(op.Edited)
		}
		ec.Operations = append(ec.Operations, eo)
	}
	return ec
}

// progress says a quorum's count as people read it, "1 of 2 approvals
// (by ana@example.com)"; each person by their label (personLabel), shown
// through show (the channel's escaping).
func progress(a *views.Approvals, show func(string) string) string {
	if a == nil {
		return ""
	}
	s := fmt.Sprintf("%d of %d approvals", a.Received, a.Required)
	if len(a.By) == 0 {
		return s
	}
	names := make([]string, len(a.By))
	for i, d := range a.By {
		names[i] = show(clipJSON(personLabel(d), maxFieldCost))
	}
	return s + " (by " + strings.Join(names, ", ") + ")"
}

// personLabel names a person in a message: their e-mail, else their name,
// else their subject at the issuer.
func personLabel(d views.Decider) string {
	switch {
	case d.Email != "":
		return d.Email
	case d.Name != "":
		return d.Name
	}
	return d.Subject + " at " + d.Issuer
}

// EventOperation is one operation of a confirmation.
type EventOperation struct {
	Connection string          `json:"connection"`
	Method     string          `json:"method"`
	Path       string          `json:"path"`
	Endpoint   string          `json:"endpoint"`
	Args       json.RawMessage `json:"args"`
	// Outcome is set on executed events.
	Outcome json.RawMessage `json:"outcome,omitempty"`
	// Current is the resource as the person is shown it (the endpoint's
	// show read: status, body, read_at, or error), Changes what a PUT or
	// PATCH changes in it; Summary says in words what will happen
	// ("Delete contact 12, John McCarthy <john@example.com>").
	Current json.RawMessage `json:"current,omitempty"`
	Changes json.RawMessage `json:"changes,omitempty"`
	Summary string          `json:"summary,omitempty"`
	// Edited is what the approver changed before approving
	// (approval.editable): {"body.amount": {"from": 900, "to": 500}}; Args
	// are then the edited call's, the one that runs.
	Edited json.RawMessage `json:"edited,omitempty"`
	// Truncated is set when a webhook payload shows this operation cut to
	// fit MaxPayloadBytes (its strings and JSON then hold "truncated"
	// markers).
	Truncated bool `json:"truncated,omitempty"`
}

// EventLink is a signed approval link for one approver.
type EventLink struct {
	Approver string `json:"approver"`
	URL      string `json:"url"`
}

// ownLinks returns a copy of ev whose Links are only those addressed to
// approver, so a channel never forwards another approver's link. ev's slice
// is not modified.
func ownLinks(ev Event, approver string) Event {
	var links []EventLink
	for _, l := range ev.Links {
		if l.Approver == approver {
			links = append(links, l)
		}
	}
	ev.Links = links
	return ev
}
