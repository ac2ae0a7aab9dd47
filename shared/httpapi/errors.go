package httpapi

import (
	"errors"
	"net/http"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/tier"
)

// statusOf is the one table from error codes to HTTP statuses (API.md section 2).
var statusOf = map[string]int{
	"invalid_request":                     http.StatusBadRequest,
	"unauthenticated":                     http.StatusUnauthorized,
	"forbidden":                           http.StatusForbidden,
	"bad_signature":                       http.StatusForbidden,
	string(tier.CodeRequiresConfirmation): http.StatusForbidden,
	string(tier.CodeReviewRequired):       http.StatusForbidden,
	string(tier.CodeBlocked):              http.StatusForbidden,
	string(tier.CodeReadOnly):             http.StatusForbidden,
	string(tier.CodeWriteIntentRequired):  http.StatusForbidden,
	string(tier.CodeHookDenied):           http.StatusForbidden,
	string(confirm.CodeRejected):          http.StatusForbidden,
	string(confirm.CodeMismatch):          http.StatusForbidden,
	string(tier.CodeUnknownOperation):     http.StatusNotFound,
	string(confirm.CodeUnknown):           http.StatusNotFound,
	"not_found":                           http.StatusNotFound,
	"method_not_allowed":                  http.StatusMethodNotAllowed,
	string(confirm.CodePending):           http.StatusConflict,
	string(confirm.CodeUsed):              http.StatusConflict,
	string(confirm.CodeDecided):           http.StatusConflict,
	"idempotency_in_progress":             http.StatusConflict,
	string(confirm.CodeExpired):           http.StatusGone,
	"payload_too_large":                   http.StatusRequestEntityTooLarge,
	"idempotency_key_reused":              http.StatusUnprocessableEntity,
	"upstream_unreachable":                http.StatusBadGateway,
	"internal":                            http.StatusInternalServerError,
}

// kindOf says whether a code is a denial ("denied") or an error ("error").
func kindOf(code string) string {
	if statusOf[code] == http.StatusForbidden {
		return "denied"
	}
	return "error"
}

// errorBody is the JSON body of every non-2xx response.
type errorBody struct {
	Status    string  `json:"status"`
	Code      string  `json:"code"`
	Reason    string  `json:"reason"`
	Tier      *string `json:"tier,omitempty"`
	Escalated *bool   `json:"escalated,omitempty"`
	Rule      string  `json:"rule,omitempty"`
	Review    *struct {
		ID string `json:"id"`
	} `json:"review,omitempty"`
}

func errorResponse(status int, kind, code, reason string) Response {
	return jsonResponse(status, errorBody{Status: kind, Code: code, Reason: reason})
}

// codeError answers with the status the table gives the code.
func codeError(code, reason string) Response {
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return errorResponse(status, kindOf(code), code, reason)
}

// lifecycleError answers a confirm.Error with its code, anything else with 500.
func lifecycleError(err error) Response {
	var ce *confirm.Error
	if errors.As(err, &ce) {
		return codeError(string(ce.Code), ce.Reason)
	}
	return codeError("internal", "internal error")
}

// denied answers a denial decision with its tier, reason and escalation.
func denied(d tier.Decision) Response {
	t := d.Tier.String()
	esc := d.Escalated
	status := statusOf[string(d.Code)]
	return jsonResponse(status, errorBody{Status: kindOf(string(d.Code)), Code: string(d.Code), Reason: d.Reason, Tier: &t, Escalated: &esc, Rule: d.Rule})
}
