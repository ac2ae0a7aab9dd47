package mcpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/views"
)

// TasksExtension is the MCP tasks extension (2026-07-28): a tools/call may
// be answered with a task handle the client polls with tasks/get.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Task statuses of the extension.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// taskPurpose separates task ids from every other token sealed with the
// link key; the calling credential's digest follows it (taskPurposeOf).
const taskPurpose = "mcp-task"

// PollInterval is the poll interval a task suggests (pollIntervalMs): a
// person takes seconds to decide, and each poll costs one store read.
const PollInterval = 2 * time.Second

// maxTaskID bounds a task id read from a request: a longer one is not
// one this gateway made, and is refused before any work.
const maxTaskID = 512

// cancelledBy is the answerer a tasks/cancel records: the rejection names
// the caller that cancelled (never an approver channel, whose names have
// no colon), and tasks/get reads it back as cancelled.
func cancelledBy(cred *countersign.Credential) string { return "caller:" + cred.ID }

// taskView is a task as the extension writes it: the seed of a
// CreateTaskResult (resultType "task") and the answer of tasks/get
// (resultType "complete"), with the tool's result once completed or the
// JSON-RPC error once failed.
type taskView struct {
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
	Meta           mcp.Meta            `json:"_meta,omitempty"`
}

// taskResult answers a tools/call with a task (CreateTaskResult): it
// carries the call's own paused result only so that the SDK, which knows
// no tasks, handles it as a tool result; what is sent is the task.
type taskResult struct {
	*mcp.CallToolResult
	view taskView
}

func (t *taskResult) MarshalJSON() ([]byte, error) {
	v := t.view
	v.ResultType = "task"
	return json.Marshal(v)
}

// declaresTasks reports a request on 2026-07-28 or later whose client
// declared the tasks extension in the request's own capabilities.
func declaresTasks(req mcp.Request) bool {
	r, ok := req.(clientRequest)
	if !ok || r.ProtocolVersion() < ProtocolMRTR {
		return false
	}
	caps := r.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[TasksExtension]
	return ok
}

// taskMiddleware turns a tools/call answer that waits for people outside
// the client into a task, for a client that declared the extension: the
// client then polls tasks/get, and the result arrives when the people
// have decided (docs/mcp.md, Tasks).
func (h *Handler) taskMiddleware(cred *countersign.Credential) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "tools/call" || !declaresTasks(req) {
				return res, err
			}
			r, ok := res.(*mcp.CallToolResult)
			if !ok {
				return res, err
			}
			id := pausedID(r)
			if id == "" {
				return res, nil
			}
			if t := h.newTask(ctx, cred, h.clientOf(cred, req), r, id); t != nil {
				return t, nil
			}
			return res, nil
		}
	}
}

// pausedID is the confirmation a tool result paused for, "" for any other
// result: a paused call or script batch, except one the person decides on
// the approval page their client opens (URL mode).
func pausedID(r *mcp.CallToolResult) string {
	switch v := r.StructuredContent.(type) {
	case pausedView:
		if !v.askURL {
			return v.ConfirmationID
		}
	case scriptView:
		if !v.askURL && v.Status == "confirmation_required" {
			return v.ConfirmationID
		}
	case map[string]any:
		// A kept answer replayed (countersign/idempotencyKey): the
		// confirmation decides (newTask reads it back).
		if id, _ := v["confirmation_id"].(string); v["status"] == "confirmation_required" {
			return id
		}
	}
	return ""
}

// decidedOutside reports a confirmation that people decide outside the
// client: the approvers of an out_of_band_only connection, a quorum or
// four eyes (outOfBand), or any confirmation when the client can show
// neither its dialog nor a card nor the approval page to the person of
// the credential (a key without ask_in_client, an older revision).
func (h *Handler) decidedOutside(client Client, c *countersign.Confirmation) bool {
	return h.outOfBand(c) || !(client.Elicit || client.Apps || client.URL)
}

// newTask is the task of a call paused for confirmation id, or nil when
// the call does not wait for people outside the client. It reads the
// confirmation back, so the task is durable before the client is told
// of it (tasks/get on any instance finds it).
func (h *Handler) newTask(ctx context.Context, cred *countersign.Credential, client Client, paused *mcp.CallToolResult, id string) *taskResult {
	st, err := h.o.Calls.Confirmation(ctx, cred, id, calls.WaitOptions{})
	if err != nil {
		h.logger().WarnContext(ctx, "mcp: task not made; the paused notice answers", "confirmation", id, "error", err)
		return nil
	}
	c := st.Confirmation
	if st.Effective != countersign.StatusPending || !c.GatewayExecutes() || !h.decidedOutside(client, c) {
		return nil
	}
	v := h.taskOf(cred, c, st.Effective)
	h.logger().InfoContext(ctx, "mcp: call answered with a task", "confirmation", id, "credential", cred.ID)
	return &taskResult{CallToolResult: paused, view: v}
}

// taskPurposeOf is the sealing purpose of cred's task ids: a task id
// opens only for the credential that created the task, and any other
// reads it as no task at all. The credential id enters as its digest, so
// the purpose holds no control character whatever the id.
func taskPurposeOf(cred *countersign.Credential) string {
	sum := sha256.Sum256([]byte(cred.ID))
	return taskPurpose + "." + hex.EncodeToString(sum[:16])
}

// TaskID is the task id of confirmation c for cred: the confirmation's id
// sealed with the link key (HMAC-SHA256) for the credential, until the
// store may delete the record. It names nothing secret and cannot be
// guessed or moved to another credential; nothing is stored for it.
func (h *Handler) TaskID(cred *countersign.Credential, c *countersign.Confirmation) string {
	exp := time.Unix(c.TTL, 0)
	if c.TTL == 0 {
		exp = c.ExpiresAt.Add(time.Hour)
	}
	return h.o.Signer.Seal(taskPurposeOf(cred), []byte(c.ID), exp)
}

// Errors a task method answers, with the messages the extension shows.
var (
	errTaskNotFound = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	errTaskExpired  = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task has expired"}
)

// openTask returns the confirmation id a task id names, for cred: a
// malformed, altered or foreign id (another credential's) is not found,
// as an unknown one is.
func (h *Handler) openTask(cred *countersign.Credential, taskID string) (string, *jsonrpc.Error) {
	if taskID == "" || len(taskID) > maxTaskID {
		return "", errTaskNotFound
	}
	payload, err := h.o.Signer.Open(taskPurposeOf(cred), taskID, h.now())
	switch {
	case errors.Is(err, links.ErrExpired):
		return "", errTaskExpired
	case err != nil || len(payload) == 0:
		return "", errTaskNotFound
	}
	return string(payload), nil
}

// taskOf is the task view of confirmation c (effective status eff) as it
// stands, without its result: working while people decide or the
// approved call runs, and the status it ended in otherwise (taskState
// fills the result).
func (h *Handler) taskOf(cred *countersign.Credential, c *countersign.Confirmation, eff countersign.Status) taskView {
	v := taskView{ResultType: "complete", TaskID: h.TaskID(cred, c), Status: taskWorking,
		CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: lastUpdated(c).UTC().Format(time.RFC3339Nano),
		PollIntervalMs: PollInterval.Milliseconds(), Meta: mcp.Meta{"countersign/confirmation_id": c.ID}}
	// While people decide the task lives as long as the confirmation
	// waits; once decided, its result is kept as long as the record.
	v.TTLMs = c.ExpiresAt.Sub(c.CreatedAt).Milliseconds()
	if eff != countersign.StatusPending && c.TTL > 0 {
		v.TTLMs = time.Unix(c.TTL, 0).Sub(c.CreatedAt).Milliseconds()
	}
	switch eff {
	case countersign.StatusPending:
		v.StatusMessage = waitingFor(c)
	case countersign.StatusApproved, countersign.StatusRedeemed:
		v.StatusMessage = decidedBy(c, eff)
	}
	return v
}

// lastUpdated is when the confirmation last changed as far as its task
// shows: its decision, else its last counted approval, else its creation.
func lastUpdated(c *countersign.Confirmation) time.Time {
	t := c.CreatedAt
	if c.DecidedAt != nil && c.DecidedAt.After(t) {
		t = *c.DecidedAt
	}
	for _, a := range c.Approvals {
		if a.At.After(t) {
			t = a.At
		}
	}
	return t
}

// waitingFor is a pending task's status message: what it waits for.
func waitingFor(c *countersign.Confirmation) string {
	var b strings.Builder
	b.WriteString("waiting for approval")
	if c.Required > 1 {
		fmt.Fprintf(&b, ": %d of %d", len(c.Approvals), c.Required)
	}
	if c.SeparateApprover {
		b.WriteString(" by someone other than the person who made the call")
	}
	b.WriteString(" (the approvers were sent a link")
	if len(c.Operations) == 1 {
		b.WriteString("; " + display.Text(opLine(c.Operations[0])))
	} else {
		fmt.Fprintf(&b, "; %d operations", len(c.Operations))
	}
	fmt.Fprintf(&b, "; expires %s); nothing ran yet", c.ExpiresAt.UTC().Format(time.RFC3339))
	return b.String()
}

// decidedBy says what became of decided confirmation c in its effective
// status eff, in the domain's words (Confirmation.DecidedText), with who
// decided: "Approved by ana@example.com and executed.".
func decidedBy(c *countersign.Confirmation, eff countersign.Status) string {
	return c.DecidedText(eff, " by "+decider(c))
}

// decider names who decided a confirmation.
func decider(c *countersign.Confirmation) string {
	if d := c.Decider(); d != "" {
		return display.Text(d)
	}
	return "its approvers"
}

// taskState is the task of confirmation id as cred reads it now. An
// approved call the gateway has not run yet is run here, once (the same
// execute step the card and the workflow's execute task use: whichever
// claims it first runs it, the others find its outcome), so the task
// completes at the first poll after the approval.
func (h *Handler) taskState(ctx context.Context, cred *countersign.Credential, id string) (taskView, *jsonrpc.Error) {
	st, err := h.o.Calls.Confirmation(ctx, cred, id, calls.WaitOptions{})
	if fault.CodeOf(err) == fault.UnknownConfirmation {
		return taskView{}, errTaskNotFound
	}
	if err != nil {
		h.logger().ErrorContext(ctx, "mcp: task not read", "confirmation", id, "error", err)
		return taskView{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task could not be read; try again"}
	}
	c := st.Confirmation
	if !c.GatewayExecutes() {
		// Not a confirmation a task was made for (the agent redeems it).
		return taskView{}, errTaskNotFound
	}
	if st.Effective == countersign.StatusApproved {
		c = h.runApproved(ctx, c)
	}
	eff := confirm.Effective(c, h.now())
	v := h.taskOf(cred, c, eff)
	switch eff {
	case countersign.StatusPending, countersign.StatusApproved, countersign.StatusRedeemed:
		return v, nil
	case countersign.StatusRejected:
		if c.DecidedBy == cancelledBy(cred) {
			v.Status, v.StatusMessage = taskCancelled, "cancelled by the caller; nothing ran"
			return v, nil
		}
		reason := "rejected by " + decider(c)
		if c.DecisionReason != "" {
			reason += ": " + display.Text(c.DecisionReason)
		}
		v.Status, v.StatusMessage = taskCompleted, reason+"; nothing ran"
		v.Result = faultResult(fault.ConfirmationRejected, reason+"; nothing ran")
		return v, nil
	}
	if res := h.ranResult(ctx, c); res != nil {
		v.Status, v.Result = taskCompleted, res
		v.StatusMessage = decidedBy(c, eff)
		return v, nil
	}
	if c.Kind == countersign.KindScript && eff == countersign.StatusExecuted {
		// The script's run after approval has not recorded its end yet:
		// it is still running.
		v.StatusMessage = decidedBy(c, countersign.StatusRedeemed)
		return v, nil
	}
	msg := expiredText + "; nothing ran"
	if c.DecidedAt != nil {
		msg = decidedBy(c, eff) + " Nothing of it ran."
	}
	v.Status, v.StatusMessage = taskFailed, msg
	v.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	return v, nil
}

// runApproved runs an approved confirmation the gateway runs itself, as
// the card does (calls.Service.RunApproved): a call's operations, or a
// script batch's script again.
func (h *Handler) runApproved(ctx context.Context, c *countersign.Confirmation) *countersign.Confirmation {
	return h.o.Calls.RunApproved(ctx, c, h.rerunner())
}

// ranResult is the tool result of a confirmation that ran: the
// upstream's answer of a call, a script's result or failure; nil when
// nothing of it ran (or a script's run has not ended).
func (h *Handler) ranResult(ctx context.Context, c *countersign.Confirmation) *mcp.CallToolResult {
	if c.Kind == countersign.KindScript {
		if h.o.Scripts == nil {
			return nil
		}
		run, err := h.o.Scripts.DescribeScript(ctx, c)
		if err != nil {
			h.logger().WarnContext(ctx, "mcp: task: script batch not described", "confirmation", c.ID, "error", err)
			return nil
		}
		if run.Error == nil && run.Status != views.ScriptDone {
			return nil
		}
		return scriptOutcome(c, run)
	}
	if len(c.Operations) != 1 || c.Operations[0].Outcome == nil {
		return nil
	}
	out := outcomeResult(c.ID, c.Operations[0].Outcome)
	if v, ok := out.StructuredContent.(upstreamView); ok {
		tellEdited(out, &v, c)
		out.StructuredContent = v
	}
	return out
}

// outcomeResult is a stored outcome as the tool would have answered it
// had it run at once (executedResult): the upstream's status and body as
// text and as {"status", "body"}; an error status sets isError.
func outcomeResult(id string, o *countersign.Outcome) *mcp.CallToolResult {
	if o.Error != "" {
		return faultResult(fault.UpstreamUnreachable, o.Error)
	}
	v := upstreamView{Status: o.Status, ConfirmationID: id}
	status := fmt.Sprintf("%d %s", o.Status, http.StatusText(o.Status))
	text := status
	if len(o.Body) > 0 && string(o.Body) != "null" {
		v.Body = o.Body
		text += "\n" + string(o.Body)
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: v, IsError: o.Status >= 400}
	if o.Truncated {
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("(the answer was %d bytes; only its beginning is kept)", o.BodyBytes)})
	}
	return out
}

// taskParams are the parameters of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	TaskID string `json:"taskId"`
	Meta   struct {
		Capabilities *mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

// isTaskMethod reports a method of the tasks extension.
func isTaskMethod(m string) bool { return strings.HasPrefix(m, "tasks/") }

// serveTask answers a request of the tasks extension on 2026-07-28
// (screen hands it over; the SDK knows none of them): tasks/get, the
// task as it stands; tasks/cancel, the pending confirmation rejected as
// cancelled by the caller; tasks/update, acknowledged (no task of this
// gateway asks for input). tasks/result and tasks/list belong to the
// tasks of 2025-11-25, not to this extension.
func (h *Handler) serveTask(ctx context.Context, w http.ResponseWriter, r *http.Request, cred *countersign.Credential, m rpcMessage) {
	switch m.Method {
	case "tasks/get", "tasks/cancel", "tasks/update":
	default:
		writeRPCError(w, http.StatusNotFound, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not served here: the tasks extension of 2026-07-28 has tasks/get (which returns a finished task's result), tasks/update and tasks/cancel", clip(m.Method))})
		return
	}
	var p taskParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		writeRPCError(w, http.StatusBadRequest, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the parameters cannot be read: want {\"taskId\": \"...\"}"})
		return
	}
	if p.Meta.Capabilities == nil || p.Meta.Capabilities.Extensions[TasksExtension] == nil {
		writeRPCError(w, http.StatusBadRequest, m.ID, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability",
			Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)})
		return
	}
	// The routing headers the extension asks for (intermediaries route on
	// them): Mcp-Method is the method, Mcp-Name the task id.
	if got := r.Header.Get("Mcp-Method"); got != m.Method {
		writeRPCError(w, http.StatusBadRequest, m.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("the Mcp-Method header %q is not the request's method %q", clip(got), m.Method)})
		return
	}
	if got := r.Header.Get("Mcp-Name"); got != p.TaskID {
		writeRPCError(w, http.StatusBadRequest, m.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: "the Mcp-Name header is not the request's taskId (tasks/get, tasks/update and tasks/cancel carry Mcp-Name: <taskId>)"})
		return
	}
	id, rerr := h.openTask(cred, p.TaskID)
	if rerr != nil {
		writeRPCError(w, http.StatusBadRequest, m.ID, rerr)
		return
	}
	switch m.Method {
	case "tasks/get":
		v, rerr := h.taskState(ctx, cred, id)
		if rerr != nil {
			writeRPCError(w, statusOf(rerr), m.ID, rerr)
			return
		}
		writeRPCResult(w, m.ID, v)
	case "tasks/cancel":
		if rerr := h.cancelTask(ctx, cred, id); rerr != nil {
			writeRPCError(w, statusOf(rerr), m.ID, rerr)
			return
		}
		writeRPCResult(w, m.ID, map[string]string{"resultType": "complete"})
	case "tasks/update":
		if _, rerr := h.taskState(ctx, cred, id); rerr != nil {
			writeRPCError(w, statusOf(rerr), m.ID, rerr)
			return
		}
		// No task of this gateway asks for input: every response is for
		// a key that is not outstanding, and is ignored.
		writeRPCResult(w, m.ID, map[string]string{"resultType": "complete"})
	}
}

// cancelTask rejects the task's confirmation if it still waits, recorded
// as cancelled by the caller (the audit trail names the credential), so
// nothing of it runs. A task already decided or ended keeps its end: the
// cancellation is acknowledged and changes nothing (the extension's
// cancellation is cooperative).
func (h *Handler) cancelTask(ctx context.Context, cred *countersign.Credential, id string) *jsonrpc.Error {
	st, err := h.o.Calls.Confirmation(ctx, cred, id, calls.WaitOptions{})
	if fault.CodeOf(err) == fault.UnknownConfirmation || err == nil && !st.Confirmation.GatewayExecutes() {
		return errTaskNotFound
	}
	if err != nil {
		h.logger().ErrorContext(ctx, "mcp: task not read", "confirmation", id, "error", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task could not be read; try again"}
	}
	if st.Effective != countersign.StatusPending {
		return nil
	}
	_, err = h.o.Calls.Answer(ctx, id, confirm.Answer{Approve: false, Approver: cancelledBy(cred), Credential: cred.ID, Reason: "cancelled by the caller (tasks/cancel)"})
	switch fault.CodeOf(err) {
	case "":
		h.logger().InfoContext(ctx, "mcp: task cancelled by its caller", "confirmation", id, "credential", cred.ID)
		return nil
	case fault.ConfirmationDecided, fault.ConfirmationExpired:
		// Decided or expired since it was read: its end stands.
		return nil
	}
	h.logger().WarnContext(ctx, "mcp: task not cancelled", "confirmation", id, "error", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task could not be cancelled: " + fault.ReasonOf(err)}
}

// statusOf is the HTTP status of a task method's JSON-RPC error on
// 2026-07-28 (as the SDK answers its own methods: invalid params 400).
func statusOf(e *jsonrpc.Error) int {
	if e.Code == jsonrpc.CodeInvalidParams {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// writeRPCResult writes a JSON-RPC result response.
func writeRPCResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}
