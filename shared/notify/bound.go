package notify

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/jsonview"
	"github.com/countersign/countersign/shared/views"
)

// MaxPayloadBytes bounds the body of every webhook request: an agent
// controls the arguments an event carries, so no call may make a payload
// grow with its size.
const MaxPayloadBytes = 256 << 10

// MaxEventOperations is how many operations an event lists; the number
// left out is in EventConfirmation.OmittedOperations.
const MaxEventOperations = 50

// How the payload's room is shared: eventReserve covers the envelope, the
// links and the per-operation keys; the rest is split evenly between the
// operations.
const (
	eventReserve   = 16 << 10
	maxFieldCost   = 256  // ids, kind, credential, connection, method, decision, status
	maxReasonCost  = 2048 // the reason
	truncatedMark  = "… (truncated)"
	notShownMarker = `"(truncated: too large for the payload)"`
)

// boundEvent returns ev with every value an agent controls cut to its share
// of MaxPayloadBytes at scale 1/div: at most MaxEventOperations operations,
// arguments and outcomes through jsonview.Compact (valid JSON, with
// "truncated" markers), strings clipped by their escaped size. ev is not
// modified.
func boundEvent(ev Event, div int) Event {
	c := &ev.Confirmation
	c.ID = clipJSON(c.ID, maxFieldCost)
	c.Kind = clipJSON(c.Kind, maxFieldCost)
	c.Credential = clipJSON(c.Credential, maxFieldCost)
	c.Reason = clipJSON(c.Reason, maxReasonCost/div)
	ev.Type = clipJSON(ev.Type, maxFieldCost)
	if d := c.DecidedBy; d != nil {
		c.DecidedBy = clipDecider(*d)
	}
	if a := c.Approvals; a != nil {
		by := make([]views.Decider, len(a.By))
		for i, d := range a.By {
			by[i] = *clipDecider(d)
		}
		c.Approvals = &views.Approvals{Required: a.Required, Received: a.Received, By: by}
	}
	ev.Decision = clipJSON(ev.Decision, maxFieldCost)
	ev.Status = clipJSON(ev.Status, maxFieldCost)
	ops := c.Operations
	if len(ops) > MaxEventOperations {
		c.OmittedOperations += len(ops) - MaxEventOperations
		ops = ops[:MaxEventOperations]
	}
	perOp := (MaxPayloadBytes - eventReserve) / max(len(ops), 1) / div
	c.Operations = make([]EventOperation, len(ops))
	for i, op := range ops {
		before := op
		op.Connection = clipJSON(op.Connection, maxFieldCost)
		op.Method = clipJSON(op.Method, maxFieldCost/4)
		op.Path = clipJSON(op.Path, perOp/8)
		op.Endpoint = clipJSON(op.Endpoint, perOp/8)
		var cutArgs, cutOutcome, cutCurrent, cutChanges, cutEdited bool
		share := 4
		if op.Current != nil || op.Changes != nil || op.Edited != nil {
			share = 8 // the args a quarter, the outcome, current and changes an eighth each
		}
		if op.Args != nil {
			op.Args, cutArgs = jsonview.Compact(op.Args, &jsonview.Limits{MaxBytes: perOp * 2 / share})
		}
		if op.Outcome != nil {
			op.Outcome, cutOutcome = jsonview.Compact(op.Outcome, &jsonview.Limits{MaxBytes: perOp / share})
		}
		if op.Current != nil {
			op.Current, cutCurrent = jsonview.Compact(op.Current, &jsonview.Limits{MaxBytes: perOp / share})
		}
		if op.Changes != nil {
			op.Changes, cutChanges = jsonview.Compact(op.Changes, &jsonview.Limits{MaxBytes: perOp / share})
		}
		if op.Edited != nil {
			op.Edited, cutEdited = jsonview.Compact(op.Edited, &jsonview.Limits{MaxBytes: perOp / share})
		}
		op.Summary = clipJSON(op.Summary, perOp/16)
		op.Truncated = op.Truncated || cutArgs || cutOutcome || cutCurrent || cutChanges || cutEdited || op.Path != before.Path || op.Endpoint != before.Endpoint ||
			op.Connection != before.Connection || op.Method != before.Method || op.Summary != before.Summary
		c.Operations[i] = op
	}
	return ev
}

// clipDecider returns a copy of d with each field clipped: what an
// identity provider says of a person is not the agent's, but no value
// grows a payload without bound.
func clipDecider(d views.Decider) *views.Decider {
	d.Kind, d.Channel = clipJSON(d.Kind, maxFieldCost), clipJSON(d.Channel, maxFieldCost)
	d.Issuer, d.Subject = clipJSON(d.Issuer, maxFieldCost), clipJSON(d.Subject, maxFieldCost)
	d.Email, d.Name = clipJSON(d.Email, maxFieldCost), clipJSON(d.Name, maxFieldCost)
	return &d
}

// encodeBounded encodes ev with encode, within MaxPayloadBytes. With
// marshal (no HTML escaping) the first try fits; should an encoder escape
// more (encoding/json's default escapes <, > and & six times over, in raw
// messages too), the operations' shares are shrunk until the body fits, and
// as a last resort the arguments and outcomes are replaced by a marker.
func encodeBounded(ev Event, encode func(Event) ([]byte, error)) ([]byte, error) {
	for _, div := range []int{1, 6, 64} {
		b, err := encode(boundEvent(ev, div))
		if err != nil || len(b) <= MaxPayloadBytes {
			return b, err
		}
	}
	e := boundEvent(ev, 64)
	for i := range e.Confirmation.Operations {
		op := &e.Confirmation.Operations[i]
		op.Args, op.Truncated = json.RawMessage(notShownMarker), true
		if op.Outcome != nil {
			op.Outcome = json.RawMessage(notShownMarker)
		}
		if op.Current != nil {
			op.Current = json.RawMessage(notShownMarker)
		}
		if op.Changes != nil {
			op.Changes = json.RawMessage(notShownMarker)
		}
		if op.Edited != nil {
			op.Edited = json.RawMessage(notShownMarker)
		}
	}
	return encode(e)
}

// jsonCost is what marshal writes for r inside a string: six bytes for
// what it escapes as \u00XX (controls), U+2028, U+2029 and invalid UTF-8
// (\ufffd), two for " and \.
func jsonCost(r rune) int {
	switch {
	case r == '"' || r == '\\':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 6
	}
	return utf8.RuneLen(r)
}

// clipJSON shortens s so that, encoded as a JSON string, its content takes
// at most budget bytes, truncatedMark included. It reads at most budget
// characters of s.
func clipJSON(s string, budget int) string {
	room := budget - len(truncatedMark)
	cost, cut := 0, -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		cost += jsonCost(r)
		if cost > room && cut < 0 {
			cut = i
		}
		if cost > budget {
			return strings.ToValidUTF8(s[:cut], "\uFFFD") + truncatedMark
		}
		i += size
	}
	return s
}
