package httpapi

import (
	"net/http"
	"strconv"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
)

// statusOf is the one table from codes to HTTP statuses (docs/api.md, Agent calls);
// a test fails when a code of package fault has no entry.
var statusOf = map[fault.Code]int{
	fault.InvalidRequest:        http.StatusBadRequest,
	fault.Unauthenticated:       http.StatusUnauthorized,
	fault.Forbidden:             http.StatusForbidden,
	fault.BadSignature:          http.StatusForbidden,
	fault.RequiresConfirmation:  http.StatusForbidden,
	fault.ReviewRequired:        http.StatusForbidden,
	fault.Blocked:               http.StatusForbidden,
	fault.ReadOnly:              http.StatusForbidden,
	fault.WriteIntentRequired:   http.StatusForbidden,
	fault.HookDenied:            http.StatusForbidden,
	fault.ConfirmationRejected:  http.StatusForbidden,
	fault.ConfirmationMismatch:  http.StatusForbidden,
	fault.UnknownOperation:      http.StatusNotFound,
	fault.UnknownConfirmation:   http.StatusNotFound,
	fault.NotFound:              http.StatusNotFound,
	fault.MethodNotAllowed:      http.StatusMethodNotAllowed,
	fault.ConfirmationPending:   http.StatusConflict,
	fault.ConfirmationUsed:      http.StatusConflict,
	fault.ConfirmationDecided:   http.StatusConflict,
	fault.ResourceChanged:       http.StatusConflict,
	fault.IdempotencyInProgress: http.StatusConflict,
	fault.ConfirmationExpired:   http.StatusGone,
	fault.PayloadTooLarge:       http.StatusRequestEntityTooLarge,
	fault.IdempotencyKeyReused:  http.StatusUnprocessableEntity,
	fault.RateLimited:           http.StatusTooManyRequests,
	fault.InvalidRemember:       http.StatusBadRequest,
	fault.InvalidEdit:           http.StatusBadRequest,
	fault.EditEscalated:         http.StatusUnprocessableEntity,
	fault.CredentialExists:      http.StatusConflict,
	fault.ScriptError:           http.StatusUnprocessableEntity,
	fault.ScriptLimit:           http.StatusUnprocessableEntity,
	fault.ScriptDiverged:        http.StatusUnprocessableEntity,
	fault.UpstreamUnreachable:   http.StatusBadGateway,
	fault.OutcomeUnknown:        http.StatusConflict,
	fault.Internal:              http.StatusInternalServerError,
}

// httpStatus is the status of a code; an unknown code is a bug, answered 500.
func httpStatus(code fault.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// kindOf is the "status" field of an error body: "denied" for a denial,
// "error" otherwise.
func kindOf(code fault.Code) string {
	if code.Denial() {
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

// codeError answers with the status the table gives the code.
func codeError(code fault.Code, reason string) reply {
	return jsonReply(httpStatus(code), errorBody{Status: kindOf(code), Code: string(code), Reason: reason})
}

// errorOf answers an error from the pipeline: its code and reason, never
// its cause (a store error may name internals; it is logged where it
// happened).
func errorOf(err error) reply {
	code := fault.CodeOf(err)
	resp := codeError(code, fault.ReasonOf(err))
	if fe := fault.As(err); fe != nil && fe.RetryAfter > 0 {
		resp.set("Retry-After", strconv.Itoa(fe.RetryAfter))
	}
	return resp
}

// denied answers a denial with its tier, reason, escalation and rule, and
// the review item queued for review_required.
func denied(res *calls.Result) reply {
	d := &res.Decision
	t, esc := d.Tier.String(), d.Escalated
	body := errorBody{Status: kindOf(res.Code), Code: string(res.Code), Reason: res.Reason, Tier: &t, Escalated: &esc, Rule: d.Rule}
	if res.ReviewID != "" {
		body.Review = &struct {
			ID string `json:"id"`
		}{ID: res.ReviewID}
	}
	return jsonReply(httpStatus(res.Code), body)
}
