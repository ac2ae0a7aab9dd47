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
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
)

// statePurpose separates request states from every other token sealed
// with the link key.
const statePurpose = "mcp-request-state"

// inputKey is the id of the one input request of an input_required result.
const inputKey = "confirm"

// requestState is what a request state carries, sealed (links.Signer.Seal)
// until the question expires: the answer's record id, the credential, the
// tool, and the binding of each operation the person is asked about. It
// names nothing secret; the seal makes it unforgeable, and the record id
// makes it single-use.
type requestState struct {
	ID    string           `json:"id"`
	Cred  string           `json:"cred"`
	Tool  string           `json:"tool"`
	Kind  countersign.Kind `json:"kind"`
	Binds []string         `json:"binds"`
	// Seen is, for each operation the person was shown its resource of
	// (its endpoint's show read), what the recheck compares before the
	// write: the answer's status, SHA-256 and ETag. Absent when none was.
	Seen []*seen `json:"seen,omitempty"`
}

// seen is what the recheck needs of a show read the person was shown.
type seen struct {
	Status int    `json:"status"`
	SHA256 string `json:"sha256,omitempty"`
	ETag   string `json:"etag,omitempty"`
}

// Ask is the input_required result that asks the person, in the client's
// own dialog, about ops (one operation for a tool call; a script's batch
// for run_script): one form elicitation naming each operation with its
// exact arguments, accept or decline, and one boolean per operation (all
// true) when there are several; and a sealed request state bound to the
// credential, the tool and the operations' bindings, valid for the call
// timeout (the script timeout for a batch).
func (h *Handler) Ask(cred *countersign.Credential, client Client, tool string, kind countersign.Kind, ops []countersign.Operation, reason string) *mcp.CallToolResult {
	return h.ask(cred, operation{name: tool}, kind, ops, reason)
}

func (h *Handler) ask(cred *countersign.Credential, op operation, kind countersign.Kind, ops []countersign.Operation, reason string) *mcp.CallToolResult {
	if kind == "" {
		kind = countersign.KindCall
	}
	t := h.o.Calls.Current().Settings.Timeouts
	wait := t.Call()
	if kind == countersign.KindScript {
		wait = t.Script()
	}
	st := requestState{ID: confirm.NewID(), Cred: cred.ID, Tool: op.name, Kind: kind}
	return h.question(st, op, ops, reason, h.now().Add(wait))
}

// question is the input_required result asking about ops under st (its
// bindings are filled from ops), valid until exp.
func (h *Handler) question(st requestState, op operation, ops []countersign.Operation, reason string, exp time.Time) *mcp.CallToolResult {
	st.Binds = st.Binds[:0]
	st.Seen = nil
	anySeen := false
	for _, o := range ops {
		st.Binds = append(st.Binds, o.Binding)
		var sn *seen
		if o.Current.Read() {
			sn, anySeen = &seen{Status: o.Current.Status, SHA256: o.Current.SHA256, ETag: o.Current.ETag}, true
		}
		st.Seen = append(st.Seen, sn)
	}
	if !anySeen {
		st.Seen = nil
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return faultResult(fault.Internal, "the question could not be prepared")
	}
	sealed := h.o.Signer.Seal(statePurpose, payload, exp)
	return &mcp.CallToolResult{
		// content is an array even here (clients' result schemas need one).
		Content:       []mcp.Content{},
		InputRequests: mcp.InputRequestMap{inputKey: h.elicitation(op, ops, reason, exp)},
		RequestState:  sealed,
	}
}

// elicitation is the form the client shows the person.
func (h *Handler) elicitation(op operation, ops []countersign.Operation, reason string, exp time.Time) *mcp.ElicitParams {
	var b strings.Builder
	title := "Approve this operation?"
	if len(ops) > 1 {
		title = fmt.Sprintf("Approve %d operations?", len(ops))
	}
	if op.ep != nil && op.ep.Prompt != "" && len(ops) == 1 {
		title = op.ep.Prompt
	}
	// The person reads this text: hidden characters are shown as escapes.
	// What will happen comes first, in words, when the resource was read
	// (a client may show only the first line): then the title and the
	// arguments.
	ws := display.Text(h.o.Calls.Current().Settings.Workspace.Name)
	if len(ops) == 1 && ops[0].Current != nil {
		fmt.Fprintf(&b, "%s (%s)\n%s\n", display.Agent(ops[0].Sentence(), 300), ws, display.Text(title))
	} else {
		fmt.Fprintf(&b, "%s (%s)\n", display.Text(title), ws)
	}
	props := map[string]any{}
	required := []string{}
	for i, o := range ops {
		args, err := canon.Marshal(o.Args)
		if err != nil {
			args, _ = json.Marshal(o.Args)
		}
		fmt.Fprintf(&b, "\n%d. ", i+1)
		if o.Current != nil {
			fmt.Fprintf(&b, "%s\n   ", display.Agent(o.Sentence(), 300))
		}
		fmt.Fprintf(&b, "%s\n", display.Text(opLine(o)))
		writeChanges(&b, o.Changes)
		fmt.Fprintf(&b, "   arguments: %s", display.Text(string(args)))
		key := "approve"
		if len(ops) > 1 {
			key = fmt.Sprintf("op%d", i)
		}
		what := "Run " + display.Text(o.Method+" "+o.Path)
		if o.Current != nil {
			what = display.Agent(o.Sentence(), 200)
		}
		props[key] = map[string]any{"type": "boolean", "title": what, "default": true}
		required = append(required, key)
	}
	if reason != "" {
		fmt.Fprintf(&b, "\n\n%s.", display.Text(reason))
	}
	fmt.Fprintf(&b, "\nAccept runs what is selected, once; decline runs nothing. The question expires at %s.", exp.Format(time.RFC3339))
	return &mcp.ElicitParams{Mode: "form", Message: b.String(),
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": required}}
}

// maxDialogChanges is how many changed fields the dialog lists.
const maxDialogChanges = 10

// writeChanges lists what a PUT or PATCH changes, one line per field.
func writeChanges(b *strings.Builder, cs []countersign.Change) {
	for i, c := range cs {
		if i == maxDialogChanges {
			fmt.Fprintf(b, "   and %d more changes\n", len(cs)-maxDialogChanges)
			break
		}
		from, to := "(absent)", "(removed)"
		if c.From != nil {
			from = display.Agent(string(c.From), 80)
		}
		if c.To != nil {
			to = display.Agent(string(c.To), 80)
		}
		fmt.Fprintf(b, "   %s: %s → %s\n", display.Agent(c.Field, 80), from, to)
	}
}

// Answer is the person's answer in the MCP client (an elicitation's
// result), carried by a retried call; Handler.Answer reads it and it is
// recorded as a confirm.Answer. Not calls.Reply, the response kept for
// an idempotent replay.
type Answer struct {
	// ID names the question; the answer is recorded under it, once.
	ID   string
	Kind countersign.Kind
	// Bindings are the operations asked about, in order; Approved says
	// which the person approved (all false when the person declined).
	Bindings []string
	Approved []bool
	// Declined is set when the person declined or dismissed the question.
	Declined bool
	// By names who answered: "client:<name>".
	By        string
	ExpiresAt time.Time
	// Seen is what the person was shown of each operation's resource
	// (nil where nothing was read), for the recheck before the write.
	Seen []*countersign.Current
}

// Answer reads the answer of a retried call: the request state must be one
// this gateway sealed, unexpired, for this credential and this tool. The
// error carries bad_signature, confirmation_expired, confirmation_mismatch
// or invalid_request, with a reason fit for the model.
func (h *Handler) Answer(cred *countersign.Credential, client Client, tool string, p *mcp.CallToolParamsRaw) (*Answer, error) {
	if !cred.AsksInClient() {
		return nil, fault.New(fault.ConfirmationMismatch, "this credential is an API key, not a person signed in to this client: it cannot answer a question in the client; nothing ran. The approvers decide through their links")
	}
	payload, err := h.o.Signer.Open(statePurpose, p.RequestState, h.now())
	switch {
	case errors.Is(err, links.ErrExpired):
		return nil, fault.New(fault.ConfirmationExpired, "the question expired before it was answered; nothing ran. Call the tool again to ask again")
	case err != nil:
		return nil, fault.New(fault.BadSignature, "the requestState was not issued by this gateway or was altered; nothing ran. Call the tool again to ask again")
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil || st.ID == "" || len(st.Binds) == 0 {
		return nil, fault.New(fault.BadSignature, "the requestState cannot be read; nothing ran")
	}
	exp, _ := expiryOf(p.RequestState)
	switch {
	case st.Cred != cred.ID:
		return nil, fault.New(fault.ConfirmationMismatch, "the requestState was issued to another credential; nothing ran")
	case st.Tool != tool:
		return nil, fault.Errorf(fault.ConfirmationMismatch, "the requestState was issued for the tool %q, not %q; nothing ran", st.Tool, tool)
	}
	a := &Answer{ID: st.ID, Kind: st.Kind, Bindings: st.Binds, Approved: make([]bool, len(st.Binds)), By: "client:" + client.label(), ExpiresAt: exp}
	if len(st.Seen) == len(st.Binds) {
		for _, sn := range st.Seen {
			var cur *countersign.Current
			if sn != nil {
				cur = &countersign.Current{Status: sn.Status, SHA256: sn.SHA256, ETag: sn.ETag}
			}
			a.Seen = append(a.Seen, cur)
		}
	}
	r, ok := p.InputResponses[inputKey].(*mcp.ElicitResult)
	if !ok {
		return nil, fault.Errorf(fault.InvalidRequest, "the retried call carries no answer to the input request %q; nothing ran", inputKey)
	}
	if r.Action != "accept" {
		a.Declined = true
		return a, nil
	}
	for i := range a.Approved {
		key := "approve"
		if len(st.Binds) > 1 {
			key = fmt.Sprintf("op%d", i)
		}
		// Only an explicit true approves: a missing, false or
		// non-boolean value (a client that sent no content, or "yes")
		// leaves the operation out.
		b, isBool := r.Content[key].(bool)
		a.Approved[i] = isBool && b
	}
	a.Declined = !anyTrue(a.Approved)
	return a, nil
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

// expiryOf reads a sealed token's expiry (its second field from the end
// of "<kid>.<exp>.<payload>.<sig>"), already verified by Open.
func expiryOf(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) < 4 {
		return time.Time{}, false
	}
	var sec int64
	if _, err := fmt.Sscan(parts[len(parts)-3], &sec); err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}

// answered runs a retried operation tool call with the person's answer:
// once if approved, never if declined; a spent, expired, altered or
// foreign answer runs nothing.
func (h *Handler) answered(ctx context.Context, cred *countersign.Credential, client Client, op operation, c *calls.Call, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	a, err := h.Answer(cred, client, op.name, p)
	if err != nil {
		return errorResult(err)
	}
	if len(a.Bindings) != 1 {
		return faultResult(fault.ConfirmationMismatch, "the requestState is not for a single call; nothing ran")
	}
	g := &calls.Grant{ID: a.ID, Binding: a.Bindings[0], Approve: !a.Declined, By: a.By, Person: cred.Person(), ExpiresAt: a.ExpiresAt}
	if len(a.Seen) == 1 {
		g.Current = a.Seen[0]
	}
	res, err := h.o.Calls.Do(ctx, cred, c, calls.Options{Grant: g})
	if err != nil {
		return errorResult(err)
	}
	switch res.Outcome {
	case calls.Executed:
		return executedResult(res)
	case calls.Denied:
		return deniedResult(res, res.Reason)
	}
	return faultResult(fault.Internal, "the answer could not be used")
}
