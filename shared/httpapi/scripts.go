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
)

// Scripts is code mode (shared/script). gatewayapp attaches it, so that
// only the functions that run scripts link the JavaScript engine.
type Scripts interface {
	// RunScript runs a script for cred, or, with a confirmation id,
	// returns what became of it and runs nothing. A script that failed is
	// a *ScriptFailure; other errors carry a fault code.
	RunScript(ctx context.Context, cred *countersign.Credential, source, confirmationID string) (*ScriptAnswer, error)
	// DescribeScript returns the calls and outcome of a script batch's
	// script, for its status.
	DescribeScript(ctx context.Context, c *countersign.Confirmation) (*ScriptAnswer, error)
}

// ScriptAnswer is a script run as the HTTP surface renders it.
type ScriptAnswer struct {
	// Completed: the script ended (200); otherwise its calls wait for a
	// person (202).
	Completed bool
	// Result is the script's value as JSON.
	Result json.RawMessage
	// Calls are the calls as docs/scripts.md lists them (JSON-ready).
	Calls any
	Logs  []string
	// Confirmation is the batch, with its status by the clock.
	Confirmation *countersign.Confirmation
	Effective    countersign.Status
	// Error is why the run after approval failed (DescribeScript).
	Error *countersign.ScriptError
}

// ScriptFailure is a script that failed: 422 with the code, the reason,
// the line and column, and what it did first.
type ScriptFailure struct {
	Code         fault.Code
	Reason       string
	Line, Column int
	Calls        any
	Logs         []string
}

func (e *ScriptFailure) Error() string { return string(e.Code) + ": " + e.Reason }

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
	Calls        any               `json:"calls"`
	Logs         []string          `json:"logs"`
}

// scriptFailureBody is the 422 answer.
type scriptFailureBody struct {
	Status string   `json:"status"`
	Code   string   `json:"code"`
	Reason string   `json:"reason"`
	Line   int      `json:"line,omitempty"`
	Column int      `json:"column,omitempty"`
	Calls  any      `json:"calls"`
	Logs   []string `json:"logs"`
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
	var sf *ScriptFailure
	if errors.As(err, &sf) {
		return jsonReply(httpStatus(sf.Code), scriptFailureBody{Status: "error", Code: string(sf.Code), Reason: sf.Reason,
			Line: sf.Line, Column: sf.Column, Calls: orEmpty(sf.Calls), Logs: orNone(sf.Logs)})
	}
	if err != nil {
		return errorOf(err)
	}
	out := scriptBody{Status: "completed", Calls: orEmpty(ans.Calls), Logs: orNone(ans.Logs)}
	if ans.Confirmation != nil {
		v := viewConfirmation(ans.Confirmation, ans.Effective)
		out.Confirmation = &v
	}
	if !ans.Completed {
		out.Status = "confirmation_required"
		return jsonReply(http.StatusAccepted, out)
	}
	out.Result = ans.Result
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return jsonReply(http.StatusOK, out)
}

func orEmpty(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
