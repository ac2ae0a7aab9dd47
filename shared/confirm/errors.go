package confirm

import (
	"errors"
	"fmt"
)

// Code is the machine-readable code of a lifecycle error (API.md section 2).
type Code string

// Lifecycle error codes.
const (
	CodeUnknown  Code = "unknown_confirmation"
	CodePending  Code = "confirmation_pending"
	CodeUsed     Code = "confirmation_used"
	CodeExpired  Code = "confirmation_expired"
	CodeRejected Code = "confirmation_rejected"
	CodeMismatch Code = "confirmation_mismatch"
	CodeDecided  Code = "confirmation_decided"
)

// Error is a lifecycle error that carries its code; httpapi maps codes to
// HTTP statuses in one table.
type Error struct {
	Code   Code
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Reason) }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of a lifecycle error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
