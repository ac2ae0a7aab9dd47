package mcpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/policy"
)

// addOperationTools adds one tool per operation the credential may see.
func (h *Handler) addOperationTools(s *mcp.Server, cred *countersign.Credential) {
	cfg := h.o.Calls.Current()
	for _, op := range visibleOperations(cfg, cred) {
		op := op
		s.AddTool(toolOf(op, cfg), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			client := h.clientOf(cred, req)
			res := h.callOperation(ctx, cred, client, op, req.Params)
			if client.URL {
				if err := h.urlElicitation(res); err != nil {
					return nil, err
				}
			}
			return res, nil
		})
	}
}

// callOperation runs one operation tool call through the pipeline, with
// the same Idempotency-Key handling as /v1/calls.
func (h *Handler) callOperation(ctx context.Context, cred *countersign.Credential, client Client, op operation, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	c, err := callOf(op, p.Arguments, p.Meta)
	if err != nil {
		return errorResult(err)
	}
	run := func() *mcp.CallToolResult {
		if p.RequestState != "" {
			return h.answered(ctx, cred, client, op, c, p)
		}
		return h.first(ctx, cred, client, op, c)
	}
	if c.IdempotencyKey == "" {
		return run()
	}
	var first *mcp.CallToolResult
	a, replayed, err := h.o.Calls.Idempotent(ctx, cred, c.IdempotencyKey, calls.RequestHash("mcp", c), func() calls.Reply {
		first = run()
		b, err := json.Marshal(first)
		if err != nil {
			return calls.Reply{Status: http.StatusInternalServerError}
		}
		// An input request is not kept: its retry carries the answer.
		return calls.Reply{Status: http.StatusOK, Body: b, Retryable: first.InputRequests != nil}
	})
	switch {
	case err != nil:
		return errorResult(err)
	case !replayed:
		return first
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(a.Body, &res); err != nil {
		return faultResult(fault.Internal, "the kept answer could not be read")
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta["countersign/idempotentReplayed"] = true
	return &res
}

// first is a call without an answer: the pipeline decides it, and a call
// that needs a person is asked for the way this client can ask.
func (h *Handler) first(ctx context.Context, cred *countersign.Credential, client Client, op operation, c *calls.Call) *mcp.CallToolResult {
	o := calls.Options{}
	if client.Name != "" {
		o.Client = &calls.Client{Name: client.Name, Version: client.Version, CanAsk: client.CanAsk()}
	}
	oob := op.conn.RulesFor(op.ep).OutOfBandOnly // the endpoint's rules, else the connection's
	// A passkey alone leaves the decision to whoever may approve, on the
	// page, where they sign: a person's client in URL mode is sent there
	// (the dialog and the card, which cannot sign, are never offered).
	passkeyPage := oob && client.URL && op.conn.PasskeyAlone(op.ep)
	switch {
	case oob:
		// Only the approvers decide; the gateway runs what they approve.
		o.Pause = calls.PauseGatewayRuns
	case client.Elicit:
		o.Pause = calls.PauseCollect
	case client.Apps, client.OutOfBand, client.URL:
		// The card decides it, or the approvers' links do; the gateway
		// runs it once either way.
		o.Pause = calls.PauseGatewayRuns
	default:
		o.Pause = calls.PauseRefuse
	}
	res, err := h.o.Calls.Do(ctx, cred, c, o)
	if err != nil {
		return errorResult(err)
	}
	switch res.Outcome {
	case calls.Executed:
		return executedResult(res)
	case calls.Collected:
		// The person is asked here and now: what they are to see of the
		// resource is read first (bounded), and the question carries what
		// was read, for the recheck before the write.
		ops := []countersign.Operation{res.Operation}
		h.o.Calls.ReadCurrent(ctx, ops)
		return h.ask(cred, op, countersign.KindCall, ops, res.Decision.Reason)
	case calls.Paused:
		if passkeyPage || client.URL && !oob {
			// The page the link opens shows the stored reads: stored
			// before the link is given.
			if _, err := h.o.Calls.Observe(ctx, res.Confirmation.ID); err != nil {
				return errorResult(err)
			}
		}
		switch {
		case passkeyPage:
			out := approversNotice(res, client)
			v := out.StructuredContent.(pausedView)
			v.askURL = true
			out.StructuredContent = v
			return out
		case oob:
			return outOfBandNotice(res)
		case client.Apps:
			return cardNotice(res)
		case client.URL:
			// The tool's handler answers it with the URL elicitation.
			out := approversNotice(res, client)
			v := out.StructuredContent.(pausedView)
			v.askURL = true
			out.StructuredContent = v
			return out
		}
		return approversNotice(res, client)
	}
	if o.Pause == calls.PauseRefuse && res.Decision.Outcome == policy.Pause {
		// The call needs a person and this client cannot ask one.
		return deniedResult(res, client.cannotAsk())
	}
	return deniedResult(res, res.Reason)
}

// urlElicitation is the URL-mode elicitation that asks the person about
// a call or a run_script batch paused for them (first and scriptPaused
// mark it: never on an out_of_band_only connection), nil for any other
// result: URLElicitationRequiredError (-32042) with one elicitation whose
// elicitationId is the confirmation id and whose url is its approval page,
// signed for links.PrincipalApprover, so it decides only for the person
// of the calling credential, signed in (never the link alone). The
// gateway runs what they approve, once; confirmation_status, or the same
// call again with the confirmation id, returns its answer.
func (h *Handler) urlElicitation(res *mcp.CallToolResult) error {
	var id, reason, then string
	var exp time.Time
	switch v := res.StructuredContent.(type) {
	case pausedView:
		if !v.askURL {
			return nil
		}
		id, reason, exp = v.ConfirmationID, v.Reason, v.ExpiresAt
		then = fmt.Sprintf("call confirmation_status with {\"confirmation_id\": %q} for the outcome", id)
	case scriptView: // a run_script batch
		if !v.askURL || v.ExpiresAt == nil {
			return nil
		}
		id, reason, exp = v.ConfirmationID, v.Reason, *v.ExpiresAt
		then = fmt.Sprintf("call run_script with the same script and {\"confirmation_id\": %q} for its result", id)
	default:
		return nil
	}
	if id == "" {
		return nil
	}
	link := h.o.Signer.Sign(id, links.PrincipalApprover, exp)
	msg := fmt.Sprintf("%s. Open the page, sign in as yourself and approve or reject; nothing runs before. Then %s.", display.Text(reason), then)
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: id,
		URL: link.URL(h.o.Calls.Current().Settings.PublicURL), Message: msg}})
}

// deniedResult renders a denial with its tier, escalation and rule.
func deniedResult(res *calls.Result, reason string) *mcp.CallToolResult {
	out := faultResult(res.Code, reason)
	v := out.StructuredContent.(faultView)
	v.Tier, v.Escalated, v.Rule, v.ReviewID = res.Decision.Tier.String(), res.Decision.Escalated, res.Decision.Rule, res.ReviewID
	out.StructuredContent = v
	return out
}

// upstreamView is the structured content of an executed call.
type upstreamView struct {
	Status int `json:"status"`
	Body   any `json:"body"`
	// Notice is set when the call ran although it requires confirmation
	// (ask_agent): the agent decides whether to tell the person.
	Notice *noticeView `json:"notice,omitempty"`
	// ConfirmationID names the confirmation the call ran under, if any.
	ConfirmationID string `json:"confirmation_id,omitempty"`
	// Grant names the grant a person gave that the call ran under
	// (approval.remember), if any.
	Grant string `json:"grant,omitempty"`
	// Edited is set when a person edited the call before approving it
	// (approval.editable): Arguments are what ran, Edits what changed.
	Edited    bool                               `json:"edited,omitempty"`
	Arguments *countersign.Args                  `json:"arguments,omitempty"`
	Edits     map[string]countersign.EditedField `json:"edits,omitempty"`
}

type noticeView struct {
	RequiresConfirmation bool   `json:"requires_confirmation"`
	Reason               string `json:"reason"`
}

// executedResult returns the upstream's answer as text and as
// {"status", "body"}; an upstream error status sets isError.
func executedResult(res *calls.Result) *mcp.CallToolResult {
	r := res.Response
	v := upstreamView{Status: r.Status}
	text := ""
	if parsed, ok := r.JSONBody(); ok {
		v.Body = parsed
		b, _ := json.Marshal(parsed)
		text = string(b)
	} else if len(r.Body) > 0 {
		if utf8.Valid(r.Body) {
			v.Body, text = string(r.Body), string(r.Body)
		} else {
			v.Body = base64.StdEncoding.EncodeToString(r.Body)
			text = fmt.Sprintf("(%d bytes of binary data, base64 in the structured content)", len(r.Body))
		}
	}
	status := fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status))
	if text == "" {
		text = status
	} else {
		text = status + "\n" + text
	}
	if res.Confirmation != nil {
		v.ConfirmationID = res.Confirmation.ID
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: r.Status >= 400}
	if res.Confirmation != nil {
		tellEdited(out, &v, res.Confirmation)
	}
	if res.Notice {
		v.Notice = &noticeView{RequiresConfirmation: true, Reason: res.Decision.Reason}
		out.Content = append(out.Content, &mcp.TextContent{Text: "Notice (requires_confirmation): " + res.Decision.Reason +
			". It ran without asking; tell the person what was done."})
	}
	if g := res.ApprovalGrant; g != nil {
		v.Grant = g.ID
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("It ran without asking again, under grant %s: a person allowed such calls until %s (%d of %d calls left).",
			g.ID, g.ExpiresAt.UTC().Format(time.RFC3339), g.CallsLeft, g.MaxCalls)})
	}
	out.StructuredContent = v
	return out
}

// pausedView is the structured content of a paused call.
type pausedView struct {
	Status         string    `json:"status"`
	ConfirmationID string    `json:"confirmation_id"`
	ExpiresAt      time.Time `json:"expires_at"`
	Reason         string    `json:"reason"`
	Next           string    `json:"next"`
	// askURL marks a pause the person decides on the approval page the
	// client opens (URL-mode elicitation): never serialized, so a kept
	// answer replayed is the approvers' notice, not a new link.
	askURL bool
}

// cardNotice tells the model the call waits and how to show the card.
func cardNotice(res *calls.Result) *mcp.CallToolResult {
	id := res.Confirmation.ID
	next := fmt.Sprintf(`call review_pending with {"confirmation_id": %q} to show the person the confirmation card`, id)
	return textResult(fmt.Sprintf("Paused (confirmation_required): %s. Nothing ran yet. Now %s; when the person approves, countersign runs the operation and the card and review_pending report the outcome.",
		res.Decision.Reason, next),
		pausedView{Status: "confirmation_required", ConfirmationID: id, ExpiresAt: res.Confirmation.ExpiresAt, Reason: res.Decision.Reason, Next: next})
}

// outOfBandNotice tells the model the approvers were asked and how to get
// the outcome.
func outOfBandNotice(res *calls.Result) *mcp.CallToolResult {
	id := res.Confirmation.ID
	next := fmt.Sprintf(`call confirmation_status with {"confirmation_id": %q} to wait for the outcome`, id)
	return textResult(fmt.Sprintf("Paused (confirmation_required): %s. This connection takes approvals only from its approvers, who were sent a link; nothing ran yet. Tell the person, then %s: once it is approved countersign runs the operation, and confirmation_status returns its answer.",
		res.Decision.Reason, next),
		pausedView{Status: "confirmation_required", ConfirmationID: id, ExpiresAt: res.Confirmation.ExpiresAt, Reason: res.Decision.Reason, Next: next})
}

// approversNotice tells the model that the approvers were sent a link,
// because this client can be asked only with a server request its
// revision sends on a stream a stateless server cannot wait on, and how
// to get the outcome.
func approversNotice(res *calls.Result, client Client) *mcp.CallToolResult {
	id := res.Confirmation.ID
	next := fmt.Sprintf(`call confirmation_status with {"confirmation_id": %q, "wait_seconds": 25} to wait for the outcome`, id)
	if client.NotPerson {
		return textResult(fmt.Sprintf("Paused (confirmation_required): %s. This credential is an API key, not a person signed in to this client, so it cannot approve its own call: the approvers were sent a link to approve or reject it; nothing ran yet. Tell the person, then %s: once it is approved countersign runs the operation, once, and confirmation_status returns its answer.",
			res.Decision.Reason, next),
			pausedView{Status: "confirmation_required", ConfirmationID: id, ExpiresAt: res.Confirmation.ExpiresAt, Reason: res.Decision.Reason, Next: next})
	}
	return textResult(fmt.Sprintf("Paused (confirmation_required): %s. %s on MCP %s cannot show this server's confirmation dialog, so the approvers were sent a link to approve or reject it; nothing ran yet. Tell the person, then %s: once it is approved countersign runs the operation, once, and confirmation_status returns its answer.",
		res.Decision.Reason, client.label(), client.protocol(), next),
		pausedView{Status: "confirmation_required", ConfirmationID: id, ExpiresAt: res.Confirmation.ExpiresAt, Reason: res.Decision.Reason, Next: next})
}

// opLine is "METHOD /path on connection" for messages.
func opLine(op countersign.Operation) string {
	return fmt.Sprintf("%s %s on %s", op.Method, op.Path, op.Connection)
}

// listOps lists operations for a message, one a line.
func listOps(ops []countersign.Operation) string {
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(opLine(op))
	}
	return b.String()
}

// tellEdited tells the model that a person edited the call before
// approving it, and what ran: the call it made did not run as it made it.
func tellEdited(out *mcp.CallToolResult, v *upstreamView, c *countersign.Confirmation) {
	if len(c.Operations) != 1 || c.Operations[0].EditedCall == nil {
		return
	}
	op := c.Operations[0].Runs()
	v.Edited, v.Arguments, v.Edits = true, &op.Args, op.Edited
	args, _ := json.Marshal(op.Args)
	out.Content = append(out.Content, &mcp.TextContent{Text: "A person edited this call before approving it (" +
		strings.TrimPrefix(confirm.EditSummary(c), "edited ") + "); what ran was the edited call, with arguments " + string(args) +
		". Tell the person what was done."})
}
