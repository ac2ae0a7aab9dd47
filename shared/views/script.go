package views

import (
	"encoding/json"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// ScriptOutcome is how a script run ended, as code mode answers it.
type ScriptOutcome string

// Script outcomes.
const (
	// ScriptDone: the script ran to its end with nothing to confirm, or
	// its run after approval ended (a resubmission).
	ScriptDone ScriptOutcome = "completed"
	// ScriptConfirmationRequired: calls were collected into a batch confirmation.
	ScriptConfirmationRequired ScriptOutcome = "confirmation_required"
)

// ShownCallState is what became of a call() in a run, as the agent is shown it.
type ShownCallState string

// Shown call states.
const (
	// ShownRan: the call ran in this run (or an approved one ran after approval).
	ShownRan ShownCallState = "ran"
	// ShownReplayed: after approval, the call returned what it returned
	// in the first run, without running again.
	ShownReplayed ShownCallState = "replayed"
	// ShownPending: the call needs confirmation; it was collected.
	ShownPending ShownCallState = "pending"
	// ShownRejected: the approver cleared the call.
	ShownRejected ShownCallState = "rejected"
	// ShownDenied: policy refused the call; nothing ran.
	ShownDenied ShownCallState = "denied"
)

// ShownCall is one call() of a script run, as the agent is shown it.
type ShownCall struct {
	Connection string         `json:"connection"`
	Method     string         `json:"method"`
	Path       string         `json:"path"`
	State      ShownCallState `json:"state"`
	// Operation is the index of the batch's operation a collected call
	// became (the approval page's checkbox); nil for other calls.
	Operation *int `json:"operation,omitempty"`
	// Response is what call() returned; one over 32 KiB is shown as
	// {"truncated": true, "bytes": n} (the script itself got all of it).
	Response json.RawMessage `json:"response"`
}

// ScriptResult is a script run that did not fail, or a script batch's
// script as its owner reads it: the one result type of code mode. It is
// here, apart from the JavaScript engine (shared/script), so that every
// surface can use it without linking the engine.
type ScriptResult struct {
	// Status is how the run ended. A batch's script is ScriptDone once its
	// run after approval completed, and has no Status until then.
	Status ScriptOutcome
	// Value is the script's value as JSON (ScriptDone; null for undefined).
	Value json.RawMessage
	// Calls are the run's calls in order.
	Calls []ShownCall
	// Logs are its console.log lines.
	Logs []string
	// Confirmation is the batch (ScriptConfirmationRequired, or the
	// finished batch of a resubmission); Effective its status by the clock.
	Confirmation *countersign.Confirmation
	Effective    countersign.Status
	// Unasked counts the calls denied to the script because the surface
	// could ask nobody.
	Unasked int
	// Error is why the run after approval failed (a batch's script).
	Error *countersign.ScriptError
}

// Failure is a batch's script whose run after approval failed, as the
// failure a run returns: nil unless Error is set.
func (r *ScriptResult) Failure() *ScriptFailure {
	if r.Error == nil {
		return nil
	}
	e := r.Error
	return &ScriptFailure{Code: fault.Code(e.Code), Reason: e.Reason, Line: e.Line, Column: e.Column, Calls: r.Calls, Logs: r.Logs}
}

// ScriptFailure is a script that failed: why (a fault code and a reason
// that names the line and column when known), and what it did first.
// Nothing it collected is pending.
type ScriptFailure struct {
	Code         fault.Code
	Reason       string
	Line, Column int
	Calls        []ShownCall
	Logs         []string
}

func (e *ScriptFailure) Error() string { return string(e.Code) + ": " + e.Reason }

// Unwrap gives the code to fault.As.
func (e *ScriptFailure) Unwrap() error { return &fault.Error{Code: e.Code, Reason: e.Reason} }
