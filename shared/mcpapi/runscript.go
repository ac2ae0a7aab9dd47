package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/views"
)

// ToolRunScript is code mode's tool (docs/scripts.md and docs/mcp.md).
const ToolRunScript = "run_script"

// Scripts is code mode (shared/script) as the MCP surface uses it.
// gatewayapp attaches it, so that only the functions that run scripts link
// the JavaScript engine.
type Scripts interface {
	// RunScript runs a script for cred or, with a confirmation id, returns
	// what became of that script's batch and runs nothing. A script that
	// failed is a *views.ScriptFailure (script_error,
	// script_limit_exceeded, script_diverged, outcome_unknown); other
	// errors carry a fault code.
	RunScript(ctx context.Context, cred *countersign.Credential, r ScriptRequest) (*views.ScriptResult, error)
	// DescribeScript returns a script batch's script: the calls of its
	// last run and, once its run after approval ended, its result
	// (Status views.ScriptDone) or failure (Error).
	DescribeScript(ctx context.Context, c *countersign.Confirmation) (*views.ScriptResult, error)
	// RerunScript runs an approved script batch's script again and
	// records its end: journaled calls replay, approved calls run once,
	// cleared calls return {rejected: true}. A concurrent or later call
	// (the workflow's Execute task runs it too) waits for the first or
	// replays it, and runs nothing twice.
	RerunScript(ctx context.Context, id string) (*countersign.Confirmation, error)
}

// ScriptRequest is a run_script call.
type ScriptRequest struct {
	Source         string
	ConfirmationID string
	// CannotAsk, when set, is why nobody can be asked through this client:
	// calls that need confirmation are denied to the script instead of
	// collected (except on out_of_band_only connections, whose approvers
	// are asked).
	CannotAsk string
	// Client is the calling client as it described itself (nil without
	// a name): a batch records it for the approval page.
	Client *calls.Client
}

// scriptArgs are run_script's arguments.
type scriptArgs struct {
	Script         string `json:"script"`
	ConfirmationID string `json:"confirmation_id"`
}

// scriptView is the structured content of a run_script result.
type scriptView struct {
	// Status: completed, confirmation_required, approved (the script is
	// still running again), denied or error.
	Status         string            `json:"status"`
	Code           string            `json:"code,omitempty"`
	Reason         string            `json:"reason,omitempty"`
	Line           int               `json:"line,omitempty"`
	Column         int               `json:"column,omitempty"`
	Result         json.RawMessage   `json:"result,omitempty"`
	ConfirmationID string            `json:"confirmation_id,omitempty"`
	ExpiresAt      *time.Time        `json:"expires_at,omitempty"`
	Next           string            `json:"next,omitempty"`
	Calls          []views.ShownCall `json:"calls"`
	Logs           []string          `json:"logs"`
	// askURL marks a batch the person decides on its approval page, which
	// the client opens (URL-mode elicitation); never serialized.
	askURL bool
}

// addScriptTool adds run_script when code mode is attached.
func (h *Handler) addScriptTool(s *mcp.Server, cred *countersign.Credential) {
	if h.o.Scripts == nil {
		return
	}
	s.AddTool(h.scriptTool(cred), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		client := h.clientOf(cred, req)
		res := h.runScript(ctx, cred, client, req.Params)
		if client.URL {
			if err := h.urlElicitation(res); err != nil {
				return nil, err
			}
		}
		return res, nil
	})
}

// scriptTool describes run_script with the connections the credential may
// use and the limits of settings.json.
func (h *Handler) scriptTool(cred *countersign.Credential) *mcp.Tool {
	settings := h.o.Calls.Current().Settings
	l := settings.Scripts
	desc := fmt.Sprintf("Run a JavaScript program (code mode) against %s's APIs. "+
		"call(connection, method, path, {query, body}) makes one call through countersign, decided like a tool call: "+
		"a call that needs no confirmation runs at once and returns {status, body}; "+
		"one that requires confirmation is not run but collected and returns {pending: true}; "+
		"a denied call returns {denied: true, code, reason}. "+
		"When the script ends, the person is asked once about every collected call with its arguments and may clear some; "+
		"after approval countersign runs the script again: calls that ran return their stored results, approved calls run once, cleared ones return {rejected: true}. "+
		"The script's last expression is its result; console.log lines come back as logs. "+
		"Connections: %s. Plain JavaScript only: no timers, network, file system, require or eval. "+
		"Limits per run: %d ms, %d calls, scripts up to %d bytes, results up to %d bytes, %d MiB of memory. "+
		"With confirmation_id (cf_...) and the same script it returns what became of that script's batch and runs nothing.",
		settings.Workspace.Name, strings.Join(h.o.Calls.Connections(cred), ", "),
		l.TimeLimitMS, l.MaxCalls, l.MaxScriptBytes, l.MaxResultBytes, l.MemoryMiB)
	return &mcp.Tool{Name: ToolRunScript, Description: desc,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true)},
		InputSchema: map[string]any{"type": "object", "required": []string{"script"}, "additionalProperties": false,
			"properties": map[string]any{
				"script":          map[string]any{"type": "string", "description": "the JavaScript program"},
				"confirmation_id": map[string]any{"type": "string", "description": "the confirmation id of this script's batch, to read what became of it"},
			}}}
}

// runScript is a run_script call: a first run, a resubmission with the
// batch's confirmation id, or the retried call carrying the person's answer.
func (h *Handler) runScript(ctx context.Context, cred *countersign.Credential, client Client, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	var a scriptArgs
	if err := decode(p.Arguments, &a); err != nil {
		return errorResult(err)
	}
	if p.RequestState != "" {
		return h.scriptAnswered(ctx, cred, client, a, p)
	}
	r := ScriptRequest{Source: a.Script, ConfirmationID: a.ConfirmationID}
	if client.Name != "" {
		r.Client = &calls.Client{Name: client.Name, Version: client.Version, CanAsk: client.CanAsk()}
	}
	if !client.CanAsk() {
		// The path is chosen before the script runs: a client that can
		// show neither a dialog nor a card is refused what needs a person
		// (docs/mcp.md), call by call inside the script, and no
		// batch is made that nobody could answer, so nothing is left
		// pending. Out-of-band-only connections still pause for their
		// approvers, as their operation tools do.
		r.CannotAsk = client.cannotAsk()
	}
	run, err := h.o.Scripts.RunScript(ctx, cred, r)
	if err != nil {
		return scriptErrorResult(err, "")
	}
	if run.Status == views.ScriptDone {
		return scriptCompleted(run, r.CannotAsk)
	}
	return h.scriptPaused(ctx, cred, client, run, r.CannotAsk)
}

// scriptErrorResult renders a failed script (its code, reason, line and
// column, and what it did first) or any other error.
func scriptErrorResult(err error, confirmationID string) *mcp.CallToolResult {
	var sf *views.ScriptFailure
	if !errors.As(err, &sf) {
		return errorResult(err)
	}
	out := faultResult(sf.Code, sf.Reason)
	out.StructuredContent = scriptView{Status: "error", Code: string(sf.Code), Reason: sf.Reason, Line: sf.Line, Column: sf.Column,
		ConfirmationID: confirmationID, Calls: orNoCalls(sf.Calls), Logs: orNoLogs(sf.Logs)}
	return out
}

// scriptCompleted returns the script's result as text and the whole run
// as structured content. Calls denied because nobody could be asked make
// it a denial the model can relay, with the result after it.
func scriptCompleted(run *views.ScriptResult, cannotAsk string) *mcp.CallToolResult {
	result := run.Value
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	v := scriptView{Status: "completed", Result: result, Calls: orNoCalls(run.Calls), Logs: orNoLogs(run.Logs)}
	if run.Confirmation != nil {
		v.ConfirmationID = run.Confirmation.ID
	}
	out := &mcp.CallToolResult{StructuredContent: v}
	text := string(result)
	if run.Unasked > 0 {
		v.Code, v.Reason = string(fault.RequiresConfirmation), cannotAsk
		out.StructuredContent, out.IsError = v, true
		text = fmt.Sprintf("%s\nThe script ran to its end without its %s: they were denied to it and did not run, and nothing is left pending; "+
			"calls that need no confirmation ran. Its result:\n%s", faultText(fault.RequiresConfirmation, cannotAsk),
			count(run.Unasked, "call that requires confirmation", "calls that require confirmation"), result)
	}
	out.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	if len(run.Logs) > 0 {
		out.Content = append(out.Content, &mcp.TextContent{Text: "Logs:\n" + strings.Join(run.Logs, "\n")})
	}
	return out
}

// scriptPaused answers a script whose batch waits for a person, the way
// this client can ask (docs/design.md, The pause): the client's dialog, the card,
// or the approvers out of band.
func (h *Handler) scriptPaused(ctx context.Context, cred *countersign.Credential, client Client, run *views.ScriptResult, cannotAsk string) *mcp.CallToolResult {
	conf := run.Confirmation
	switch {
	case h.outOfBand(conf) || !client.Elicit && !client.Apps && !client.URL:
		// The approvers decide: the connection wants them, or the client
		// can be asked only out of band (Client.OutOfBand), or not at all
		// (the batch then holds only out_of_band_only calls).
		return scriptWaiting(run, h.outOfBand(conf), cannotAsk)
	case client.Elicit:
		// One question for the whole batch, bound to it: the request
		// state carries the batch's id, so the answer decides that batch
		// (once) and nothing else.
		st := requestState{ID: conf.ID, Cred: cred.ID, Tool: ToolRunScript, Kind: countersign.KindScript}
		// Each operation with what it acts on, as the batch stores it
		// for the recheck before the write: read once and stored before
		// the question shows it (a read of the question's own could
		// differ from the one the workflow stores later).
		seen, err := h.o.Calls.Observe(ctx, conf.ID)
		if err != nil {
			return errorResult(err)
		}
		return h.question(st, operation{name: ToolRunScript}, seen.Operations, conf.Reason, conf.ExpiresAt)
	case client.URL:
		// The person decides the batch on its approval page, signed in
		// (the tool's handler answers with the URL elicitation); the
		// approvers' links stay a way to decide it, as for a card. The
		// page shows the stored reads: they are stored before the link.
		if _, err := h.o.Calls.Observe(ctx, conf.ID); err != nil {
			return errorResult(err)
		}
		out := scriptWaiting(run, false, cannotAsk)
		v := out.StructuredContent.(scriptView)
		v.askURL = true
		out.StructuredContent = v
		return out
	}
	id := conf.ID
	next := fmt.Sprintf(`call review_pending with {"confirmation_id": %q} to show the person the confirmation card`, id)
	return textResult(fmt.Sprintf("Paused (confirmation_required): the script ran to its end, and its %s did not run:\n%s\n"+
		"Now %s; when the person approves, countersign runs the script again (what ran is not repeated; approved calls run once) and the card and review_pending report its result.",
		count(len(conf.Operations), "call that requires confirmation", "calls that require confirmation"), listOps(conf.Operations), next),
		pausedScriptView(run, next))
}

// scriptWaiting tells the model the approvers were asked and how to read
// the script's result.
func scriptWaiting(run *views.ScriptResult, outOfBand bool, cannotAsk string) *mcp.CallToolResult {
	id := run.Confirmation.ID
	next := fmt.Sprintf(`call run_script with the same script and {"confirmation_id": %q} (or confirmation_status with {"confirmation_id": %q, "wait_seconds": 25}) to read the script's result once it is approved and run`, id, id)
	why := "The approvers were sent a link"
	if outOfBand {
		why = "These connections take approvals only from their approvers, who were sent a link"
	}
	text := fmt.Sprintf("Paused (confirmation_required): the script ran to its end, and its %s did not run:\n%s\n%s; nothing of it ran yet. Tell the person, then %s.",
		count(len(run.Confirmation.Operations), "call that requires confirmation", "calls that require confirmation"), listOps(run.Confirmation.Operations), why, next)
	if run.Unasked > 0 {
		text += fmt.Sprintf("\n%s: %s denied to the script.", faultText(fault.RequiresConfirmation, cannotAsk),
			count(run.Unasked, "other call was", "other calls were"))
	}
	return textResult(text, pausedScriptView(run, next))
}

func pausedScriptView(run *views.ScriptResult, next string) scriptView {
	exp := run.Confirmation.ExpiresAt
	return scriptView{Status: "confirmation_required", ConfirmationID: run.Confirmation.ID, ExpiresAt: &exp, Reason: run.Confirmation.Reason,
		Next: next, Calls: orNoCalls(run.Calls), Logs: orNoLogs(run.Logs)}
}

// scriptAnswered is the retried run_script call carrying the person's
// answer about the script's batch. The answer decides the batch through
// the lifecycle (calls.Service.Decide: the first decision wins, whoever
// makes it), so a second use of the same state decides nothing and runs
// nothing: it is refused (confirmation_used), and points to the stored
// result. After an approval the script runs again here (and in the
// workflow's Execute task; only one of them runs it) and its result is
// returned.
func (h *Handler) scriptAnswered(ctx context.Context, cred *countersign.Credential, client Client, a scriptArgs, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	ans, err := h.Answer(cred, client, ToolRunScript, p)
	if err != nil {
		return errorResult(err)
	}
	if ans.Kind != countersign.KindScript || a.ConfirmationID != "" && a.ConfirmationID != ans.ID {
		return faultResult(fault.ConfirmationMismatch, "the requestState is not for this script's batch; nothing ran")
	}
	st, err := h.o.Calls.Confirmation(ctx, cred, ans.ID, calls.WaitOptions{})
	if err != nil {
		return errorResult(err)
	}
	conf := st.Confirmation
	if conf.Kind != countersign.KindScript || !sameBindings(conf.Operations, ans.Bindings) {
		return faultResult(fault.ConfirmationMismatch, "the answer was given for another batch; nothing ran")
	}
	if !sameSeen(conf.Operations, ans.Seen) {
		// The recheck before each write compares with the batch's stored
		// reads: an answer given on other reads is not about what would run.
		return faultResult(fault.ResourceChanged, "the person was not shown the resources as the batch holds them; nothing ran. Ask the person again with a new run_script call")
	}
	if h.outOfBand(conf) {
		// Before the script runs again; the lifecycle refuses the answer too.
		return faultResult(fault.Forbidden, conf.ID+" is decided by its approvers only; nothing ran")
	}
	if st.Effective != countersign.StatusPending {
		return spentAnswer(conf, st.Effective, ans)
	}
	// The retried call must be the same script: the answer is about the
	// batch that script made.
	if _, err := h.o.Scripts.RunScript(ctx, cred, ScriptRequest{Source: a.Script, ConfirmationID: conf.ID}); err != nil {
		// Another use of the same answer may have decided the batch since
		// it was read (the gateway is then running it again): this use is
		// spent, whatever the resubmission says of the batch's state.
		if now, gerr := h.o.Calls.Confirmation(ctx, cred, conf.ID, calls.WaitOptions{}); gerr == nil && now.Effective != countersign.StatusPending {
			return spentAnswer(now.Confirmation, now.Effective, ans)
		}
		return scriptErrorResult(err, conf.ID)
	}
	d := confirm.Answer{Approve: !ans.Declined, Approver: ans.By, Person: cred.Person(), Credential: cred.ID}
	if ans.Declined {
		d.Reason = "declined in " + client.label()
	} else {
		for i, ok := range ans.Approved {
			if ok {
				d.Keep = append(d.Keep, i)
			}
		}
	}
	c, err := h.o.Calls.AnswerAndRun(ctx, conf.ID, d, h.rerunner())
	if fault.CodeOf(err) == fault.ConfirmationDecided || fault.CodeOf(err) == fault.ConfirmationExpired {
		if now, gerr := h.o.Calls.Confirmation(ctx, cred, conf.ID, calls.WaitOptions{}); gerr == nil {
			return spentAnswer(now.Confirmation, now.Effective, ans)
		}
	}
	if err != nil {
		return errorResult(err)
	}
	h.logger().InfoContext(ctx, "script batch answered in the client", "confirmation", c.ID, "credential", cred.ID,
		"approved", d.Approve, "kept", len(d.Keep), "operations", len(c.Operations))
	if !d.Approve {
		out := faultResult(fault.ConfirmationRejected, fmt.Sprintf("the person declined the script's %s:\n%s\nNone of them ran and the script was not run again; calls that need no confirmation ran in its first run.",
			count(len(c.Operations), "call that requires confirmation", "calls that require confirmation"), listOps(c.Operations)))
		v := scriptView{Status: "denied", Code: string(fault.ConfirmationRejected), Reason: "the person declined", ConfirmationID: c.ID}
		if run, err := h.o.Scripts.DescribeScript(ctx, c); err == nil {
			v.Calls, v.Logs = run.Calls, run.Logs
		}
		v.Calls, v.Logs = orNoCalls(v.Calls), orNoLogs(v.Logs)
		out.StructuredContent = v
		return out
	}
	run, err := h.o.Scripts.DescribeScript(ctx, c)
	if err != nil {
		return errorResult(err)
	}
	return scriptOutcome(c, run)
}

// spentAnswer refuses an answer whose batch is no longer pending: decided
// by this answer before (a replayed state), by someone else, or expired.
func spentAnswer(c *countersign.Confirmation, effective countersign.Status, ans *Answer) *mcp.CallToolResult {
	next := fmt.Sprintf(`call run_script with the same script and {"confirmation_id": %q} to read what became of it`, c.ID)
	switch {
	case c.Lapsed(effective):
		return faultResult(fault.ConfirmationExpired, fmt.Sprintf("the script's batch %s expired before it was decided; nothing ran. Run the script again to ask again", c.ID))
	case c.DecidedBy == ans.By:
		return faultResult(fault.ConfirmationUsed, fmt.Sprintf("the answer to %s was already used; nothing was decided or run again: %s", c.ID, next))
	}
	return faultResult(fault.ConfirmationDecided, fmt.Sprintf("%s was already decided (%s); this answer decided nothing and nothing ran again: %s", c.ID, effective, next))
}

// sameBindings reports whether a batch's operations are the ones a
// question was about, in order.
func sameBindings(ops []countersign.Operation, binds []string) bool {
	if len(ops) != len(binds) {
		return false
	}
	for i, op := range ops {
		if op.Binding != binds[i] {
			return false
		}
	}
	return true
}

// sameSeen reports whether what a question showed of each operation's
// resource (seen, nil where nothing was read; empty when nothing was) is
// what the batch stores for its recheck.
func sameSeen(ops []countersign.Operation, seen []*countersign.Current) bool {
	for i, op := range ops {
		var sn *countersign.Current
		if i < len(seen) {
			sn = seen[i]
		}
		cur := op.Current
		if !cur.Read() {
			cur = nil
		}
		switch {
		case sn == nil || cur == nil:
			if sn != cur {
				return false
			}
		case sn.Status != cur.Status || sn.SHA256 != cur.SHA256 || sn.ETag != cur.ETag:
			return false
		}
	}
	return len(seen) == 0 || len(seen) == len(ops)
}

// rerunner is code mode's rerun of an approved batch's script, nil
// without code mode.
func (h *Handler) rerunner() calls.Rerunner {
	if h.o.Scripts == nil {
		return nil
	}
	return h.o.Scripts
}

// scriptOutcome is what became of an approved script batch: the script's
// result, its failure, or that it is still running.
func scriptOutcome(c *countersign.Confirmation, run *views.ScriptResult) *mcp.CallToolResult {
	switch {
	case run.Error != nil:
		return scriptErrorResult(run.Failure(), c.ID)
	case run.Status == views.ScriptDone:
		run.Confirmation = c
		return scriptCompleted(run, "")
	}
	next := fmt.Sprintf(`call run_script with the same script and {"confirmation_id": %q} to read its result`, c.ID)
	return textResult(fmt.Sprintf("Approved (%s): countersign is running the script again; %s.", c.ID, next),
		scriptView{Status: "approved", ConfirmationID: c.ID, Next: next, Calls: orNoCalls(run.Calls), Logs: orNoLogs(run.Logs)})
}

// withScript adds a script batch's result (or failure) to its card.
func (h *Handler) withScript(ctx context.Context, v *cardView, c *countersign.Confirmation) {
	if c.Kind != countersign.KindScript || h.o.Scripts == nil {
		return
	}
	run, err := h.o.Scripts.DescribeScript(ctx, c)
	if err != nil {
		h.logger().WarnContext(ctx, "script batch not described", "confirmation", c.ID, "error", err)
		return
	}
	switch {
	case run.Error != nil:
		v.ScriptError = faultText(fault.Code(run.Error.Code), run.Error.Reason)
	case run.Status == views.ScriptDone:
		v.Result = run.Value
		if len(v.Result) == 0 {
			v.Result = json.RawMessage("null")
		}
	}
}

// count is "1 call" or "3 calls".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orNoCalls(c []views.ShownCall) []views.ShownCall {
	if c == nil {
		return []views.ShownCall{}
	}
	return c
}

func orNoLogs(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
