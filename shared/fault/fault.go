package fault

import (
	"errors"
	"fmt"
)

// Code is the machine-readable code of an error or a denial.
type Code string

// The codes. A denial (Denial reports true) is a refusal by policy or by the
// confirmation lifecycle; every other code is an error.
const (
	// InvalidRequest: malformed JSON, a missing or wrong field; the reason names it.
	InvalidRequest Code = "invalid_request"
	// Unauthenticated: a missing or unknown key.
	Unauthenticated Code = "unauthenticated"
	// Forbidden: the credential may not use this surface (the operator routes).
	Forbidden Code = "forbidden"
	// BadSignature: an approval link or a signed request state that does not verify.
	BadSignature Code = "bad_signature"

	// The decision's denials (policy.Code).
	RequiresConfirmation Code = "requires_confirmation"
	ReviewRequired       Code = "review_required"
	Blocked              Code = "blocked"
	ReadOnly             Code = "read_only"
	WriteIntentRequired  Code = "write_intent_required"
	HookDenied           Code = "hook_denied"
	UnknownOperation     Code = "unknown_operation"

	// The confirmation lifecycle.
	UnknownConfirmation  Code = "unknown_confirmation"
	ConfirmationPending  Code = "confirmation_pending"
	ConfirmationUsed     Code = "confirmation_used"
	ConfirmationExpired  Code = "confirmation_expired"
	ConfirmationRejected Code = "confirmation_rejected"
	ConfirmationMismatch Code = "confirmation_mismatch"
	ConfirmationDecided  Code = "confirmation_decided"
	// ResourceChanged: the resource an approved operation acts on changed
	// between what the person saw and the write; nothing was sent.
	ResourceChanged Code = "resource_changed"

	// Routes.
	NotFound         Code = "not_found"
	MethodNotAllowed Code = "method_not_allowed"

	// Requests and their limits.
	PayloadTooLarge       Code = "payload_too_large"
	IdempotencyKeyReused  Code = "idempotency_key_reused"
	IdempotencyInProgress Code = "idempotency_in_progress"
	RateLimited           Code = "rate_limited"
	// InvalidRemember: an approval's remember (approve and allow for N
	// minutes) out of its bounds, or where the endpoint offers none.
	InvalidRemember Code = "invalid_remember"
	// InvalidEdit: an approval's edits (approval.editable) name a field
	// not listed, change a value's JSON type, repeat a field, pass the
	// body limits, or come where no edit may (a decided confirmation, a
	// quorum); nothing was decided.
	InvalidEdit Code = "invalid_edit"
	// EditEscalated: the edited call, decided again, would no longer
	// pause at the confirm tier (a threshold escalates it, or it is
	// denied); the approval is refused and nothing changed.
	EditEscalated Code = "edit_escalated"
	// CredentialExists: a key asked for with an id a credential has.
	CredentialExists Code = "credential_exists"

	// Code mode (POST /v1/scripts): a script that failed; the reason says
	// where (line and column) and why.
	// ScriptError: a syntax error, or an exception the script did not catch.
	ScriptError Code = "script_error"
	// ScriptLimit: the script broke a limit (time, calls, memory, result size).
	ScriptLimit Code = "script_limit_exceeded"
	// ScriptDiverged: on replay the script made a call other than the
	// journaled one at that position; nothing further ran.
	ScriptDiverged Code = "script_diverged"

	// Failures.
	UpstreamUnreachable Code = "upstream_unreachable"
	// OutcomeUnknown: an approved operation was claimed by a run that
	// stopped before it recorded the outcome; it is never run again.
	OutcomeUnknown Code = "outcome_unknown"
	Internal       Code = "internal"
)

// all lists every code, in the order of the constants.
var all = []Code{
	InvalidRequest, Unauthenticated, Forbidden, BadSignature,
	RequiresConfirmation, ReviewRequired, Blocked, ReadOnly, WriteIntentRequired, HookDenied, UnknownOperation,
	UnknownConfirmation, ConfirmationPending, ConfirmationUsed, ConfirmationExpired, ConfirmationRejected,
	ConfirmationMismatch, ConfirmationDecided, ResourceChanged,
	NotFound, MethodNotAllowed,
	PayloadTooLarge, IdempotencyKeyReused, IdempotencyInProgress, RateLimited,
	InvalidRemember, InvalidEdit, EditEscalated, CredentialExists,
	ScriptError, ScriptLimit, ScriptDiverged,
	UpstreamUnreachable, OutcomeUnknown, Internal,
}

// All returns every code (a new slice), for the transports' table tests.
func All() []Code { return append([]Code(nil), all...) }

// Known reports whether c is one of the codes.
func (c Code) Known() bool {
	for _, k := range all {
		if k == c {
			return true
		}
	}
	return false
}

// Denial reports whether the code refuses a call (HTTP 403, "status":
// "denied") rather than reporting an error.
func (c Code) Denial() bool {
	switch c {
	case Forbidden, BadSignature, RequiresConfirmation, ReviewRequired, Blocked, ReadOnly,
		WriteIntentRequired, HookDenied, ConfirmationRejected, ConfirmationMismatch:
		return true
	}
	return false
}

// String returns the code's wire name.
func (c Code) String() string { return string(c) }

// Error is an error with a code and a reason fit to show the caller. Err,
// when set, is the cause: it is logged, never shown.
type Error struct {
	Code   Code
	Reason string
	Err    error
	// RetryAfter, in seconds, tells a rate-limited caller when to try again.
	RetryAfter int
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Reason)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an error with a code and a reason.
func New(code Code, reason string) *Error { return &Error{Code: code, Reason: reason} }

// Errorf returns an error with a code and a formatted reason.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// Wrap returns an internal error that keeps err as its cause and shows
// reason: a store or workflow failure the caller cannot fix.
func Wrap(err error, reason string) *Error {
	return &Error{Code: Internal, Reason: reason, Err: err}
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the code of the *Error in err's chain: "" for nil, and
// Internal for an error that carries no code (a store outage, a bug).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if e := As(err); e != nil {
		return e.Code
	}
	return Internal
}

// ReasonOf returns what the caller may be shown of err: the reason of its
// *Error, or a generic sentence for anything else (never the cause, which
// may name internals).
func ReasonOf(err error) string {
	if e := As(err); e != nil && e.Reason != "" {
		return e.Reason
	}
	return "internal error"
}
