package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/views"
)

// confirmationView is the JSON of a confirmation (docs/api.md, Confirmation status).
type confirmationView struct {
	ID        string             `json:"id"`
	Status    countersign.Status `json:"status"`
	Kind      countersign.Kind   `json:"kind"`
	CreatedAt time.Time          `json:"created_at"`
	ExpiresAt time.Time          `json:"expires_at"`
	DecidedAt *time.Time         `json:"decided_at"`
	// DecidedBy is who decided: the person signed in, or the channel
	// whose link was used (docs/api.md, Confirmation status).
	DecidedBy *views.Decider `json:"decided_by,omitempty"`
	// Approvals is a quorum's count (approval.required), once the first
	// approval is counted.
	Approvals *approvalsView `json:"approvals,omitempty"`
	// DecisionReason is why an approver rejected it or an operator
	// dismissed it, when they said (an extension of docs/api.md, Confirmation status).
	DecisionReason string          `json:"decision_reason,omitempty"`
	RedeemBy       *time.Time      `json:"redeem_by,omitempty"`
	Operations     []operationView `json:"operations"`
	Result         json.RawMessage `json:"result,omitempty"`
	// A script batch's script (code mode): its calls, its logs, and why
	// its run after approval failed. Calls holds a []views.ShownCall
	// for a script batch (always shown) and nothing for other kinds.
	Calls any                      `json:"calls,omitempty"`
	Logs  []string                 `json:"logs,omitempty"`
	Error *countersign.ScriptError `json:"error,omitempty"`
}

type operationView struct {
	Connection string               `json:"connection"`
	Method     string               `json:"method"`
	Path       string               `json:"path"`
	Endpoint   string               `json:"endpoint"`
	Selected   bool                 `json:"selected"`
	Outcome    *countersign.Outcome `json:"outcome"`
	// Current and Changes are what the person was shown of the resource
	// (the endpoint's show read), without what only the recheck reads.
	Current *countersign.Current `json:"current,omitempty"`
	Changes []countersign.Change `json:"changes,omitempty"`
	// Edited is what the approver changed before approving (the
	// operation then runs the edited call).
	Edited map[string]countersign.EditedField `json:"edited,omitempty"`
}

// viewConfirmation shows a confirmation with its effective status, never
// a stale stored one. An approval waiting to be redeemed expires at its
// redemption deadline, so that is its expires_at (and redeem_by).
func viewConfirmation(c *countersign.Confirmation, effective countersign.Status) confirmationView {
	v := confirmationView{ID: c.ID, Status: effective, Kind: c.Kind, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt,
		DecidedAt: c.DecidedAt, DecidedBy: views.DecidedBy(c), Approvals: approvalsOf(c), DecisionReason: c.DecisionReason, RedeemBy: c.RedeemBy, Result: c.Result, Operations: make([]operationView, 0, len(c.Operations))}
	if c.RedeemBy != nil && c.Status == countersign.StatusApproved {
		v.ExpiresAt = *c.RedeemBy
	}
	for _, op := range c.Operations {
		v.Operations = append(v.Operations, operationView{Connection: op.Connection, Method: op.Method, Path: op.Path,
			Endpoint: op.Endpoint, Selected: op.Selected, Outcome: op.Outcome, Current: op.Current.Shown(), Changes: op.Changes, Edited: op.Edited})
	}
	return v
}

// status handles GET /v1/confirmations/<id>[?wait=<seconds>]. Only the
// credential that created a confirmation may read it; others get 404.
func (g *Gateway) status(ctx context.Context, r *http.Request, cred *countersign.Credential, id string) reply {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return codeError(fault.InvalidRequest, "malformed query string")
	}
	wait := 0
	if s := q.Get("wait"); s != "" {
		if wait, err = strconv.Atoi(s); err != nil || wait < 0 {
			return codeError(fault.InvalidRequest, "wait must be a whole number of seconds from 0 to 25")
		}
		wait = min(wait, int(calls.MaxWait/time.Second))
	}
	st, err := g.Calls.Confirmation(ctx, cred, id, calls.WaitOptions{Wait: time.Duration(wait) * time.Second, Poll: g.PollInterval, Stop: g.Stopping})
	if err != nil {
		return errorOf(err)
	}
	v := viewConfirmation(st.Confirmation, st.Effective)
	if st.Kind == countersign.KindScript && g.Scripts != nil {
		ans, err := g.Scripts.DescribeScript(ctx, st.Confirmation)
		if err != nil {
			return errorOf(err)
		}
		v.Calls, v.Logs, v.Error = ans.Calls, ans.Logs, ans.Error
		if len(ans.Value) > 0 {
			v.Result = ans.Value
		}
	}
	return jsonReply(http.StatusOK, v)
}

// approvalsView is a quorum's count: "1 of 2 approvals", and by whom;
// the webhooks carry the same (views.Approvals).
type approvalsView = views.Approvals

func approvalsOf(c *countersign.Confirmation) *approvalsView { return views.ApprovalsOf(c) }
