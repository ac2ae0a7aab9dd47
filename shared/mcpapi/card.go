package mcpapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
)

// The confirmation tools.
const (
	// ToolReviewPending shows the person the confirmation card (MCP Apps).
	ToolReviewPending = "review_pending"
	// ToolCardDecide is the card's own tool (visibility ["app"]): it takes
	// the decision token that only the card receives.
	ToolCardDecide = "card_decide"
	// ToolConfirmationStatus reads a confirmation's status and outcome.
	ToolConfirmationStatus = "confirmation_status"
)

// CardURI is the card's MCP Apps resource.
const CardURI = "ui://countersign/card"

// MetaCard is the _meta key of the review_pending result that carries the
// card's decision token. Hosts give a result's _meta to its view and not to
// the model, so the model never holds the token and cannot approve its
// own call.
const MetaCard = "countersign/card"

// cardPurpose separates card tokens from every other token sealed with the
// link key (a request state is not a card token, nor the reverse).
const cardPurpose = "mcp-card"

// appsOnly are the tools listed and callable only for clients that render
// MCP Apps.
var appsOnly = map[string]bool{ToolReviewPending: true, ToolCardDecide: true}

type idArgs struct {
	ConfirmationID string `json:"confirmation_id"`
	WaitSeconds    int    `json:"wait_seconds"`
}

type decideArgs struct {
	ConfirmationID string     `json:"confirmation_id"`
	Token          string     `json:"token"`
	Decision       string     `json:"decision"`
	Operations     []int      `json:"operations"`
	Edits          []cardEdit `json:"edits"`
}

// cardEdit is one of the card's edit inputs as it sends it: the
// operation, the field and the input's plain text, typed by the agent's
// value as the approval page's form is (confirm.PlainEdit), so a number
// keeps every digit the person sees.
type cardEdit struct {
	Op    *int   `json:"op"`
	Field string `json:"field"`
	Value string `json:"value"`
}

// addConfirmationTools adds review_pending, card_decide and
// confirmation_status for credentials that ask a person.
func (h *Handler) addConfirmationTools(s *mcp.Server, cred *countersign.Credential) {
	if cred.Choice != countersign.AskPerson {
		return
	}
	idSchema := map[string]any{"type": "object", "required": []string{"confirmation_id"}, "additionalProperties": false,
		"properties": map[string]any{"confirmation_id": map[string]any{"type": "string", "description": "the confirmation id of the paused call (cf_...)"}}}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	h.addStatusTool(s, cred, readOnly)
	if !cred.AsksInClient() {
		// The card decides in the client: only for a person signed in to
		// it (or a key that opted in), never for a program holding a key.
		return
	}
	s.AddTool(&mcp.Tool{Name: ToolReviewPending, Annotations: readOnly, InputSchema: idSchema,
		Description: "Show the person the confirmation card of a paused call or script, titled \"Approve this operation?\" (or \"Approve N operations?\"), in the conversation. " +
			"The person approves or rejects it in the card; countersign then runs what was approved (a script runs again) and the card reports the outcome. Call it again to read the outcome.",
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": CardURI, "visibility": []string{"model", "app"}}}},
		h.reviewPending(cred))
	s.AddTool(&mcp.Tool{Name: ToolCardDecide, Description: "The confirmation card's buttons (for the card only).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true)},
		InputSchema: map[string]any{"type": "object", "required": []string{"confirmation_id", "token", "decision"}, "additionalProperties": false,
			"properties": map[string]any{
				"confirmation_id": map[string]any{"type": "string"},
				"token":           map[string]any{"type": "string"},
				"decision":        map[string]any{"type": "string", "enum": []string{"approve", "reject"}},
				"operations":      map[string]any{"type": "array", "items": map[string]any{"type": "integer", "minimum": 0}},
				"edits": map[string]any{"type": "array", "maxItems": confirm.MaxEdits, "items": map[string]any{
					"type": "object", "required": []string{"op", "field", "value"}, "additionalProperties": false,
					"properties": map[string]any{
						"op":    map[string]any{"type": "integer", "minimum": 0},
						"field": map[string]any{"type": "string"},
						"value": map[string]any{"type": "string", "description": "the input's text, typed by the agent's value"},
					}}},
			}},
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": CardURI, "visibility": []string{"app"}}}},
		h.cardDecide(cred))
}

// addStatusTool adds confirmation_status.
func (h *Handler) addStatusTool(s *mcp.Server, cred *countersign.Credential, readOnly *mcp.ToolAnnotations) {
	waitSchema := map[string]any{"type": "object", "required": []string{"confirmation_id"}, "additionalProperties": false,
		"properties": map[string]any{
			"confirmation_id": map[string]any{"type": "string", "description": "the confirmation id of the paused call (cf_...)"},
			"wait_seconds":    map[string]any{"type": "integer", "minimum": 0, "maximum": 25, "description": "wait up to this long for a decision"},
		}}
	s.AddTool(&mcp.Tool{Name: ToolConfirmationStatus, Annotations: readOnly, InputSchema: waitSchema,
		Description: "Read a paused call's or script's confirmation: pending, rejected, expired, or executed with the upstream's answer (and a script's result). wait_seconds (at most 25) waits for a decision."},
		h.confirmationStatus(cred))
}

func boolPtr(b bool) *bool { return &b }

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.Errorf(fault.InvalidRequest, "the arguments do not fit the tool's schema: %v", err)
	}
	return nil
}

// cardOp is one operation on the card.
type cardOp struct {
	Index      int    `json:"index"`
	Connection string `json:"connection"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Endpoint   string `json:"endpoint"`
	Args       string `json:"args"`
	Selected   bool   `json:"selected"`
	Outcome    string `json:"outcome,omitempty"`
	// Summary, Now, NowNote and Changes are what the person is shown of
	// the resource (approvalpage.ShowNow): in words, as it is now, and
	// the before and after of what changes.
	Summary string       `json:"summary,omitempty"`
	Now     string       `json:"now,omitempty"`
	NowNote string       `json:"now_note,omitempty"`
	Changes []cardChange `json:"changes,omitempty"`
	// Inputs are the fields the person may change before approving
	// (confirm.EditInputs, as on the approval page), while it is pending.
	Inputs []cardInput `json:"inputs,omitempty"`
	// Edited says the person changed the call before approving it: Args
	// are then the edited call's, and Edits what changed.
	Edited bool         `json:"edited,omitempty"`
	Edits  []cardChange `json:"edits,omitempty"`
}

// cardInput is one edit input of the card: Label is the field as the
// person reads it (hidden characters as escapes); Value the agent's value
// as the input holds it, set as the input's value, never as markup.
type cardInput struct {
	Field string `json:"field"`
	Label string `json:"label"`
	Kind  string `json:"kind"` // number, string or boolean
	Value string `json:"value"`
}

// cardChange is one row of the card's before and after table; From or To
// is empty when the write adds or removes the field.
type cardChange struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

// cardNow fills co with what the person is shown of op's resource, bounded
// and with hidden characters as escapes (the card writes it as text).
func cardNow(co *cardOp, op *countersign.Operation) {
	var po approvalpage.Operation
	approvalpage.ShowNow(&po, op)
	co.Summary, co.NowNote = display.Agent(po.Summary, 300), display.Agent(po.NowNote, 300)
	co.Now = po.Now // PrettyJSON wrote hidden characters as escapes
	for i, c := range po.Changes {
		if i == maxCardChanges {
			break
		}
		co.Changes = append(co.Changes, cardChange{Field: display.Text(c.Field), From: display.Text(c.From), To: display.Text(c.To)})
	}
}

// maxCardChanges is how many rows the card's before and after table has.
const maxCardChanges = 50

// cardView is what the card shows; it is also the structured content the
// model may read, so it holds nothing that decides (the token is in _meta).
type cardView struct {
	ConfirmationID string    `json:"confirmation_id"`
	Kind           string    `json:"kind"`
	State          string    `json:"state"` // pending, expired, decided, out_of_band
	Status         string    `json:"status"`
	Title          string    `json:"title"`
	Message        string    `json:"message,omitempty"`
	Workspace      string    `json:"workspace"`
	Accent         string    `json:"accent_color"`
	ExpiresAt      time.Time `json:"expires_at"`
	SecondsLeft    int       `json:"seconds_left"`
	TimeLeft       string    `json:"time_left"`
	Operations     []cardOp  `json:"operations"`
	// Result is a script batch's result once its run after approval
	// completed; ScriptError why that run failed.
	Result      json.RawMessage `json:"result,omitempty"`
	ScriptError string          `json:"script_error,omitempty"`
}

// expiredText is what the card says once its time is up.
const expiredText = "This confirmation expired"

func (h *Handler) cardOf(c *countersign.Confirmation, effective countersign.Status) cardView {
	ws := h.o.Calls.Current().Settings.Workspace
	left := c.ExpiresAt.Sub(h.now())
	v := cardView{ConfirmationID: c.ID, Kind: string(c.Kind), Status: string(effective), Title: approvalpage.Title(len(c.Operations)),
		Workspace: display.Text(ws.Name), Accent: ws.AccentColor, ExpiresAt: c.ExpiresAt, SecondsLeft: max(0, int(math.Ceil(left.Seconds()))),
		TimeLeft: approvalpage.TimeLeft(left)}
	pending := effective == countersign.StatusPending && !h.outOfBand(c)
	for i, op := range c.Operations {
		// What runs: the edited call once a person edited it.
		args, err := canon.Marshal(op.Runs().Args)
		if err != nil {
			args, _ = json.Marshal(op.Runs().Args)
		}
		// Shown to a person: hidden characters as escapes (display.Text;
		// PrettyJSON does it for the arguments).
		co := cardOp{Index: i, Connection: display.Text(op.Connection), Method: display.Text(op.Method), Path: display.Text(op.Path),
			Endpoint: display.Text(op.Endpoint), Args: approvalpage.PrettyJSON(args), Selected: op.Selected}
		if op.Outcome != nil {
			co.Outcome = display.Block(outcomeText(op.Outcome))
		}
		cardNow(&co, &op)
		if pending {
			for _, e := range confirm.EditInputs(c, i) {
				co.Inputs = append(co.Inputs, cardInput{Field: e.Field, Label: display.Text(e.Field), Kind: e.Kind, Value: e.Value})
			}
		}
		for _, f := range slices.Sorted(maps.Keys(op.Edited)) {
			co.Edited = true
			co.Edits = append(co.Edits, cardChange{Field: display.Text(f), From: display.Text(string(op.Edited[f].From)), To: display.Text(string(op.Edited[f].To))})
		}
		v.Operations = append(v.Operations, co)
	}
	switch {
	case h.outOfBand(c):
		v.State, v.Message = "out_of_band", "This confirmation is decided by the approvers only, out of band."
	case effective == countersign.StatusPending:
		v.State = "pending"
	case c.Lapsed(effective):
		v.State, v.Message, v.SecondsLeft = "expired", expiredText+"; nothing ran. Ask again to get a new one.", 0
	default:
		v.State, v.Message = "decided", c.DecidedText(effective, "")
	}
	return v
}

// outOfBand reports a confirmation whose approvals come only from its
// approvers (confirm.OutOfBand, from the rules recorded when it paused):
// the card shows it so; the lifecycle refuses the card's answer.
func (h *Handler) outOfBand(c *countersign.Confirmation) bool { return confirm.OutOfBand(c, nil) }

func outcomeText(o *countersign.Outcome) string {
	if o.Error == confirm.ResourceChanged {
		return "not run (resource_changed): what it acts on changed after the person saw it, so nothing was sent; call the tool again to ask the person anew"
	}
	if o.Error != "" {
		return "failed: " + o.Error
	}
	text := fmt.Sprintf("ran: the upstream answered %d %s", o.Status, http.StatusText(o.Status))
	if len(o.Body) > 0 && string(o.Body) != "null" {
		body := string(o.Body)
		if cut := 2000; len(body) > cut {
			// Cut at a character: back over UTF-8 continuation bytes
			// (10xxxxxx), so no character is split in half.
			for cut > 0 && body[cut]&0xC0 == 0x80 {
				cut--
			}
			body = body[:cut] + "..."
		}
		text += ": " + body
	}
	return text
}

// cardText is what the model reads of a card: the state and the
// operations' outcomes, never the token.
func cardText(v cardView) string {
	var b bytes.Buffer
	switch v.State {
	case "pending":
		fmt.Fprintf(&b, "The confirmation card for %s is shown to the person: %s (%s). The person approves or rejects it in the card; countersign then runs what was approved, once, and the card reports the outcome. Call review_pending again to read it.",
			v.ConfirmationID, v.Title, v.TimeLeft)
	case "expired":
		fmt.Fprintf(&b, "%s (%s); nothing ran. Ask the person whether to try again: calling the tool again asks anew.", expiredText, v.ConfirmationID)
	case "out_of_band":
		fmt.Fprintf(&b, "%s (%s) is decided by its approvers only; call confirmation_status to wait for the outcome.", v.ConfirmationID, v.Status)
	default:
		fmt.Fprintf(&b, "%s (%s): %s", v.ConfirmationID, v.Status, v.Message)
	}
	for _, op := range v.Operations {
		fmt.Fprintf(&b, "\n- %s %s on %s", op.Method, op.Path, op.Connection)
		if op.Edited {
			var edits []string
			for _, e := range op.Edits {
				edits = append(edits, e.Field+" "+e.From+" → "+e.To)
			}
			fmt.Fprintf(&b, " (a person edited it before approving: %s; what runs is the edited call, with arguments %s)", strings.Join(edits, ", "), op.Args)
		}
		if op.Outcome != "" {
			fmt.Fprintf(&b, ": %s", op.Outcome)
		} else if v.State == "decided" && !op.Selected {
			b.WriteString(": not run")
		}
	}
	switch {
	case v.ScriptError != "":
		fmt.Fprintf(&b, "\nThe script failed when it ran again: %s", v.ScriptError)
	case len(v.Result) > 0:
		fmt.Fprintf(&b, "\nThe script's result: %s", v.Result)
	}
	return b.String()
}

// cardToken is the card's decision token: sealed with the link key for
// the confirmation and the credential, until the confirmation expires.
type cardToken struct {
	ID   string `json:"id"`
	Cred string `json:"cred"`
}

func (h *Handler) reviewPending(cred *countersign.Credential) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a idArgs
		if err := decode(req.Params.Arguments, &a); err != nil {
			return errorResult(err), nil
		}
		st, err := h.o.Calls.Confirmation(ctx, cred, a.ConfirmationID, calls.WaitOptions{})
		if err != nil {
			return errorResult(err), nil
		}
		if !st.Confirmation.GatewayExecutes() {
			return faultResult(fault.InvalidRequest, a.ConfirmationID+" is not decided in a card: the agent redeems it"), nil
		}
		if st.Effective == countersign.StatusPending {
			// The card shows the resources as the record stores them for
			// the recheck: stored before the card shows them.
			if st.Confirmation, err = h.o.Calls.Observe(ctx, st.ID); err != nil {
				return errorResult(err), nil
			}
		}
		v := h.cardOf(st.Confirmation, st.Effective)
		h.withScript(ctx, &v, st.Confirmation)
		res := textResult(cardText(v), v)
		if v.State == "pending" {
			tok, _ := json.Marshal(cardToken{ID: st.ID, Cred: cred.ID})
			res.Meta = mcp.Meta{MetaCard: map[string]any{"token": h.o.Signer.Seal(cardPurpose, tok, st.ExpiresAt)}}
		}
		return res, nil
	}
}

func (h *Handler) cardDecide(cred *countersign.Credential) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a decideArgs
		if err := decode(req.Params.Arguments, &a); err != nil {
			return errorResult(err), nil
		}
		if a.Decision != "approve" && a.Decision != "reject" {
			return faultResult(fault.InvalidRequest, `decision must be "approve" or "reject"`), nil
		}
		payload, err := h.o.Signer.Open(cardPurpose, a.Token, h.now())
		var tok cardToken
		switch {
		case errors.Is(err, links.ErrExpired):
			return faultResult(fault.ConfirmationExpired, expiredText+"; nothing ran"), nil
		case err != nil, json.Unmarshal(payload, &tok) != nil, tok.ID != a.ConfirmationID, tok.Cred != cred.ID:
			return faultResult(fault.BadSignature, "only the confirmation card can decide, with the token it was given"), nil
		}
		st, err := h.o.Calls.Confirmation(ctx, cred, a.ConfirmationID, calls.WaitOptions{})
		if err != nil {
			return errorResult(err), nil
		}
		if !st.Confirmation.GatewayExecutes() {
			return faultResult(fault.Forbidden, "this confirmation is not decided in the card"), nil
		}
		// The caller answers in their own client: the lifecycle decides
		// whether they may (never under four eyes, a quorum or approvers).
		d := confirm.Answer{Approve: a.Decision == "approve", Approver: "card", Person: cred.Person(), Credential: cred.ID}
		if d.Approve && a.Operations != nil {
			d.Keep = a.Operations
			if len(d.Keep) == 0 {
				return faultResult(fault.InvalidRequest, "select at least one operation to approve, or choose Reject all"), nil
			}
		}
		if d.Approve {
			// The card's inputs: checked, decided again and bound by the
			// same use case as the page's (calls: planEdits).
			if d.Edits, err = cardEdits(st.Confirmation, a.Edits); err != nil {
				return errorResult(err), nil
			}
		}
		// The use case answers and runs what was approved, once (a
		// script batch by running its script again).
		c, err := h.o.Calls.AnswerAndRun(ctx, a.ConfirmationID, d, h.rerunner())
		if err != nil {
			if fault.CodeOf(err) == fault.ConfirmationExpired {
				return faultResult(fault.ConfirmationExpired, expiredText+"; nothing ran"), nil
			}
			return errorResult(err), nil
		}
		h.logger().InfoContext(ctx, "card decided", "confirmation", c.ID, "credential", cred.ID, "decision", a.Decision)
		if d.Approve && c.Kind != countersign.KindScript {
			c = h.settled(ctx, cred, c)
		}
		v := h.cardOf(c, confirm.Effective(c, h.now()))
		h.withScript(ctx, &v, c)
		return textResult(cardText(v), v), nil
	}
}

// cardEdits are the card's inputs as the edits of an answer to c, typed
// by the agent's values (confirm.PlainEdit); an input that names no
// operation of c is invalid_edit, and the use case checks the rest.
func cardEdits(c *countersign.Confirmation, in []cardEdit) ([]confirm.EditRequest, error) {
	if len(in) > confirm.MaxEdits {
		return nil, fault.Errorf(fault.InvalidEdit, "%d edits: at most %d; nothing was decided", len(in), confirm.MaxEdits)
	}
	var out []confirm.EditRequest
	for _, e := range in {
		if e.Op == nil || *e.Op < 0 || *e.Op >= len(c.Operations) {
			return nil, fault.Errorf(fault.InvalidEdit, "an edit names no operation of %s; nothing was decided", c.ID)
		}
		out = append(out, confirm.EditRequest{Op: *e.Op, Field: e.Field, Value: confirm.PlainEdit(&c.Operations[*e.Op], e.Field, e.Value)})
	}
	return out, nil
}

// settled waits briefly for operations another executor claimed (the
// workflow's execute task runs the same confirmation) to finish, so the
// card shows their outcome.
func (h *Handler) settled(ctx context.Context, cred *countersign.Credential, c *countersign.Confirmation) *countersign.Confirmation {
	deadline := time.Now().Add(20 * time.Second)
	for c.Status == countersign.StatusApproved || c.Status == countersign.StatusRedeemed {
		if time.Now().After(deadline) {
			return c
		}
		select {
		case <-ctx.Done():
			return c
		case <-time.After(50 * time.Millisecond):
		}
		st, err := h.o.Calls.Confirmation(ctx, cred, c.ID, calls.WaitOptions{})
		if err != nil {
			return c
		}
		c = st.Confirmation
	}
	return c
}

func (h *Handler) confirmationStatus(cred *countersign.Credential) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a idArgs
		if err := decode(req.Params.Arguments, &a); err != nil {
			return errorResult(err), nil
		}
		wait := time.Duration(min(max(a.WaitSeconds, 0), 25)) * time.Second
		st, err := h.o.Calls.Confirmation(ctx, cred, a.ConfirmationID, calls.WaitOptions{Wait: wait})
		if err != nil {
			return errorResult(err), nil
		}
		v := h.cardOf(st.Confirmation, st.Effective)
		h.withScript(ctx, &v, st.Confirmation)
		if v.State == "out_of_band" {
			v.State = "pending"
			switch {
			case st.Lapsed(st.Effective):
				v.State = "expired"
			case st.Effective != countersign.StatusPending:
				v.State, v.Message = "decided", st.Confirmation.DecidedText(st.Effective, "")
			}
		}
		text := cardText(v)
		if v.State == "pending" {
			text = fmt.Sprintf("%s is waiting for a person (%s); nothing ran yet. Call confirmation_status again to keep waiting.", v.ConfirmationID, v.TimeLeft)
			for _, op := range v.Operations {
				text += fmt.Sprintf("\n- %s %s on %s", op.Method, op.Path, op.Connection)
			}
		}
		return textResult(text, v), nil
	}
}

//go:embed card.html
var cardHTML string

var hexColour = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// cardResource is the card's MCP Apps resource.
func cardResource() *mcp.Resource {
	return &mcp.Resource{URI: CardURI, Name: "confirmation_card", Title: "Confirmation card", MIMEType: AppsMIMEType,
		Description: "Approve or reject the operations of a paused call"}
}

// readCard renders the card's HTML: the workspace's name and accent colour
// are filled in; the operations, the time left and the token arrive from
// the host with the review_pending result. The HTML holds no token.
func (h *Handler) readCard(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != CardURI {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	b, err := renderCard(h.o.Calls.Current().Settings.Workspace)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: CardURI, MIMEType: AppsMIMEType, Text: string(b),
		Meta: mcp.Meta{"ui": map[string]any{"prefersBorder": true}}}}}, nil
}

// renderCard fills the card's placeholders. It does not use html/template:
// executing a template makes the linker keep every exported method of
// every type in the gateway's binary (text/template looks methods up by
// name), which would add megabytes of AWS SDK code to the bootstrap. The
// values are few and escaped for where they go: the workspace name as HTML
// text, the accent a checked hex colour, the tool name and the expiry text
// JSON string literals in the script.
func renderCard(ws config.Workspace) ([]byte, error) {
	accent := approvalpage.DefaultAccent
	if hexColour.MatchString(ws.AccentColor) {
		accent = ws.AccentColor
	}
	name := ws.Name
	if name == "" {
		name = approvalpage.DefaultWorkspace
	}
	tool, err := scriptString(ToolCardDecide)
	if err != nil {
		return nil, err
	}
	expired, err := scriptString(expiredText)
	if err != nil {
		return nil, err
	}
	r := strings.NewReplacer("__WORKSPACE__", html.EscapeString(display.Text(name)), "__ACCENT__", accent, "__ON_ACCENT__", config.TextOn(accent),
		"__TOOL__", tool, "__EXPIRED__", expired)
	return []byte(r.Replace(cardHTML)), nil
}

// scriptString is a JSON string literal safe inside a <script> element.
func scriptString(s string) (string, error) {
	b, err := json.Marshal(s) // escapes <, > and & as \u003c, \u003e, \u0026
	if err != nil {
		return "", fmt.Errorf("mcpapi: render card: %w", err)
	}
	return string(b), nil
}
