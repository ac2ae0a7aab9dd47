package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/views"
)

// Scripts is code mode (shared/script). gatewayapp attaches it, so that
// only the functions that run scripts link the JavaScript engine.
type Scripts interface {
	// RunScript runs a script for cred, or, with a confirmation id,
	// returns what became of it and runs nothing. A script that failed is
	// a *views.ScriptFailure (422 with the code, the reason, the
	// line and column, and what it did first); other errors carry a fault
	// code.
	RunScript(ctx context.Context, cred *countersign.Credential, source, confirmationID string) (*views.ScriptResult, error)
	// DescribeScript returns the calls and outcome of a script batch's
	// script, for its status.
	DescribeScript(ctx context.Context, c *countersign.Confirmation) (*views.ScriptResult, error)
}

// scriptRequest is the body of POST /v1/scripts (docs/scripts.md).
type scriptRequest struct {
	Script         *string `json:"script"`
	ConfirmationID *string `json:"confirmation_id"`
}

// scriptBody is the 200 and 202 answer of POST /v1/scripts.
type scriptBody struct {
	Status       string            `json:"status"`
	Result       json.RawMessage   `json:"result,omitempty"`
	Confirmation *confirmationView `json:"confirmation,omitempty"`
	Calls        []views.ShownCall `json:"calls"`
	Logs         []string          `json:"logs"`
}

// scriptFailureBody is the 422 answer.
type scriptFailureBody struct {
	Status string            `json:"status"`
	Code   string            `json:"code"`
	Reason string            `json:"reason"`
	Line   int               `json:"line,omitempty"`
	Column int               `json:"column,omitempty"`
	Calls  []views.ShownCall `json:"calls"`
	Logs   []string          `json:"logs"`
}

// scripts handles POST /v1/scripts.
func (g *Gateway) scripts(ctx context.Context, _ *http.Request, b []byte, cred *countersign.Credential) reply {
	var r scriptRequest
	// The same strict reading as /v1/calls: unknown, wrong-case and
	// duplicate fields are refused.
	if err := callbody.DecodeStrict(b, &r, nil); err != nil {
		return codeError(fault.InvalidRequest, fmt.Sprintf("malformed JSON body: %v", err))
	}
	if r.Script == nil {
		return codeError(fault.InvalidRequest, "script is required")
	}
	id := ""
	if r.ConfirmationID != nil {
		id = *r.ConfirmationID
	}
	ans, err := g.Scripts.RunScript(ctx, cred, *r.Script, id)
	var sf *views.ScriptFailure
	if errors.As(err, &sf) {
		return jsonReply(httpStatus(sf.Code), scriptFailureBody{Status: "error", Code: string(sf.Code), Reason: sf.Reason,
			Line: sf.Line, Column: sf.Column, Calls: sf.Calls, Logs: orNone(sf.Logs)})
	}
	if err != nil {
		return errorOf(err)
	}
	out := scriptBody{Status: "completed", Calls: ans.Calls, Logs: orNone(ans.Logs)}
	if ans.Confirmation != nil {
		v := viewConfirmation(ans.Confirmation, ans.Effective)
		out.Confirmation = &v
	}
	if ans.Status != views.ScriptDone {
		out.Status = "confirmation_required"
		return jsonReply(http.StatusAccepted, out)
	}
	out.Result = ans.Value
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return jsonReply(http.StatusOK, out)
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
