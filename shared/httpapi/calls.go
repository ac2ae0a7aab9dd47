package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/tier"
	"github.com/countersign/countersign/shared/upstream"
)

// callRequest is the body of POST /v1/calls (API.md section 2).
type callRequest struct {
	Connection     string            `json:"connection"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Query          map[string]string `json:"query"`
	Body           json.RawMessage   `json:"body"`
	Intent         *tier.Intent      `json:"intent"`
	ConfirmationID string            `json:"confirmation_id"`
	Delegated      bool              `json:"delegated"`
	Client         *clientInfo       `json:"client"`
}

// clientInfo is the agent's self-description, recorded as the credential's last client.
type clientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// call is a call from either surface, normalised.
type call struct {
	tier tier.Call
	// body is the raw body to send upstream (nil: none); arg is its JSON
	// form for the binding (null when empty); jsonBody is body when it is
	// JSON, decoded only for an endpoint whose thresholds read the body.
	body     []byte
	arg      json.RawMessage
	jsonBody []byte
	// rawQuery is forwarded as is by REST; /v1/calls encodes tier.Query.
	rawQuery       string
	contentType    string
	forward        http.Header
	confirmationID string
	idempotencyKey string
	client         *clientInfo
}

// decodeCall parses and validates a /v1/calls body; the error names the field.
func decodeCall(b []byte) (*call, error) {
	var r callRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed JSON body: %v", cleanJSONError(err))
	}
	if dec.More() {
		return nil, errors.New("malformed JSON body: more than one JSON value")
	}
	switch {
	case r.Connection == "":
		return nil, errors.New("connection is required")
	case r.Method == "":
		return nil, errors.New("method is required")
	case !tier.ValidMethod(r.Method):
		return nil, fmt.Errorf("method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", r.Method)
	case r.Path == "" || r.Path[0] != '/':
		return nil, errors.New("path is required and must start with /")
	case strings.ContainsAny(r.Path, "?#"):
		return nil, errors.New("path must not contain a query or fragment: put query parameters in query")
	case hasDotSegment(r.Path):
		return nil, errors.New("path must not contain . or .. segments")
	case r.Intent == nil:
		return nil, errors.New("intent is required: read, write or confirmed_write")
	case *r.Intent == tier.IntentConfirmedWrite && r.ConfirmationID == "":
		return nil, errors.New("confirmation_id is required with intent confirmed_write")
	case *r.Intent != tier.IntentConfirmedWrite && r.ConfirmationID != "":
		return nil, errors.New("confirmation_id goes only with intent confirmed_write")
	}
	c := &call{confirmationID: r.ConfirmationID, client: r.Client}
	c.tier = tier.Call{Connection: r.Connection, Method: r.Method, Path: r.Path, Intent: *r.Intent, Delegated: r.Delegated}
	if len(r.Query) > 0 {
		c.tier.Query = make(url.Values, len(r.Query))
		for k, v := range r.Query {
			c.tier.Query.Set(k, v)
		}
	}
	if len(r.Body) > 0 && string(r.Body) != "null" {
		c.body, c.arg, c.jsonBody = r.Body, r.Body, r.Body
		c.contentType = "application/json"
	} else {
		c.arg = json.RawMessage("null")
	}
	return c, nil
}

// hasDotSegment reports a "." or ".." segment, also percent-encoded: such a
// path could match one endpoint here and reach another upstream.
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if u, err := url.PathUnescape(seg); err != nil || u == "." || u == ".." {
			return true
		}
	}
	return false
}

// decodeJSON decodes with numbers kept exact (json.Number).
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func cleanJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %s: expected %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("expected %s, got %s", te.Type, te.Value)
	}
	if errors.Is(err, io.EOF) {
		return "empty body"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// calls handles POST /v1/calls.
func (g *Gateway) calls(ctx context.Context, req *Request, cred *store.Credential) Response {
	b, err := body(req)
	if err != nil {
		return codeError("invalid_request", err.Error())
	}
	c, err := decodeCall(b)
	if err != nil {
		return codeError("invalid_request", err.Error())
	}
	if c.client != nil {
		g.recordClient(ctx, cred, c.client.Name, c.client.Version, true)
	}
	c.idempotencyKey = header(req, "Idempotency-Key")
	resp := g.idempotent(ctx, cred, "calls", c, func() Response { return g.callsOutcome(ctx, cred, c) })
	if strings.Contains(header(req, "Accept"), "text/event-stream") {
		return sse(resp)
	}
	return resp
}

// executedBody is the 200 answer of /v1/calls.
type executedBody struct {
	Status   string          `json:"status"`
	Tier     string          `json:"tier"`
	Response upstreamView    `json:"response"`
	Notice   *noticeBody     `json:"notice,omitempty"`
	Confirm  *confirmationID `json:"confirmation,omitempty"`
}

type upstreamView struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

type noticeBody struct {
	RequiresConfirmation bool   `json:"requires_confirmation"`
	Reason               string `json:"reason"`
}

type confirmationID struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (g *Gateway) callsOutcome(ctx context.Context, cred *store.Credential, c *call) Response {
	d := g.decide(ctx, cred, c)
	switch d.Outcome {
	case tier.Deny:
		return g.deny(ctx, cred, c, d)
	case tier.Execute:
		resp, err := g.send(ctx, cred, c, g.agentKey(cred, c))
		if err != nil {
			return upstreamError(err)
		}
		out := executedBody{Status: "executed", Tier: d.Tier.String(), Response: viewOf(resp)}
		if d.Notice {
			out.Notice = &noticeBody{RequiresConfirmation: true, Reason: d.Reason}
		}
		g.logCall(cred, c, d, "executed", "")
		return jsonResponse(http.StatusOK, out)
	}
	if c.tier.Intent == tier.IntentConfirmedWrite {
		conf, resp, errResp := g.redeem(ctx, cred, c, d)
		if errResp != nil {
			return *errResp
		}
		g.logCall(cred, c, d, "executed", conf.ID)
		return jsonResponse(http.StatusOK, executedBody{Status: "executed", Tier: d.Tier.String(), Response: viewOf(resp),
			Confirm: &confirmationID{ID: conf.ID, Status: string(conf.Status)}})
	}
	return g.pause(ctx, cred, c, d, false)
}

// decide resolves the call, asks the connection's hooks, and decides.
func (g *Gateway) decide(ctx context.Context, cred *store.Credential, c *call) tier.Decision {
	m, ok := g.Config.Policy.Resolve(c.tier.Connection, c.tier.Method, c.tier.Path)
	if ok && c.tier.Body == nil && c.jsonBody != nil && m.Endpoint.ReadsBody() {
		// Only a body threshold needs the decoded body; the auto path skips it.
		if v, err := decodeJSON(c.jsonBody); err == nil {
			c.tier.Body = v
		}
	}
	in := tier.Input{Call: &c.tier, Credential: tierCredential(cred)}
	if ok && m.Connection.Hooked && !m.Endpoint.Hidden {
		in.Hook = g.askHooks(ctx, cred, c, &m)
	}
	return tier.Decide(m, ok, in)
}

// deny answers a denial; review_required also queues a review item for the
// operator surface.
func (g *Gateway) deny(ctx context.Context, cred *store.Credential, c *call, d tier.Decision) Response {
	g.logCall(cred, c, d, "denied", "")
	resp := denied(d)
	if d.Code != tier.CodeReviewRequired {
		return resp
	}
	op, err := g.operation(cred, c, d)
	if err != nil {
		return codeError("internal", "internal error")
	}
	now := g.now()
	rv := &store.Review{ID: "rv_" + strings.TrimPrefix(confirm.NewID(), "cf_"), Credential: cred.ID, Operation: op, Reason: d.Reason,
		Status: "pending", CreatedAt: now, TTL: now.Add(30 * 24 * time.Hour).Unix()}
	if err := g.Store.CreateReview(ctx, rv); err != nil {
		g.logger().Error("review item not stored", "credential", cred.ID, "error", err)
		return codeError("internal", "the review item could not be queued")
	}
	t, esc := d.Tier.String(), d.Escalated
	body := errorBody{Status: "denied", Code: string(d.Code), Reason: d.Reason, Tier: &t, Escalated: &esc, Rule: d.Rule}
	body.Review = &struct {
		ID string `json:"id"`
	}{ID: rv.ID}
	return jsonResponse(http.StatusForbidden, body)
}

// operation builds the bound operation of a call.
func (g *Gateway) operation(cred *store.Credential, c *call, d tier.Decision) (store.Operation, error) {
	args := store.Args{Path: d.Match.Params.Map(), Query: confirm.QueryArgs(c.tier.Query), Body: c.arg}
	return confirm.NewOperation(cred.ID, c.tier.Connection, c.tier.Method, c.tier.Path, d.Match.Endpoint.Path, args)
}

// pendingBody is the 202 answer (API.md section 2).
type pendingBody struct {
	Status       string           `json:"status"`
	Tier         string           `json:"tier"`
	Reason       string           `json:"reason"`
	Confirmation confirmationView `json:"confirmation"`
	Preview      previewView      `json:"preview"`
	Event        eventView        `json:"event"`
}

type previewView struct {
	Method string          `json:"method"`
	URL    string          `json:"url"`
	Body   json.RawMessage `json:"body"`
}

type eventView struct {
	Type           string    `json:"type"`
	ConfirmationID string    `json:"confirmation_id"`
	Endpoint       string    `json:"endpoint"`
	Method         string    `json:"method"`
	Reason         string    `json:"reason"`
	Escalated      bool      `json:"escalated"`
	Timestamp      time.Time `json:"timestamp"`
}

// pause creates a pending confirmation and answers 202. Nothing is sent
// upstream; approvers get their links from the workflow's notify task.
func (g *Gateway) pause(ctx context.Context, cred *store.Credential, c *call, d tier.Decision, location bool) Response {
	op, err := g.operation(cred, c, d)
	if err != nil {
		return codeError("internal", "internal error")
	}
	conf, err := g.Confirm.Create(ctx, confirm.Request{Kind: store.KindCall, Credential: cred.ID, Reason: d.Reason, Operations: []store.Operation{op}})
	if err != nil {
		g.logger().Error("confirmation not created", "credential", cred.ID, "error", err)
		return codeError("internal", "the confirmation could not be created")
	}
	g.logCall(cred, c, d, "confirmation_required", conf.ID)
	preview := previewView{Method: c.tier.Method, URL: g.upstreamURL(c), Body: c.arg}
	body := pendingBody{
		Status: "confirmation_required", Tier: d.Tier.String(), Reason: d.Reason,
		Confirmation: viewConfirmation(conf, g.now()),
		Preview:      preview,
		Event: eventView{Type: "confirmation_required", ConfirmationID: conf.ID, Endpoint: d.Match.Endpoint.Path, Method: c.tier.Method,
			Reason: d.Reason, Escalated: d.Escalated, Timestamp: g.now().Truncate(time.Second)},
	}
	resp := jsonResponse(http.StatusAccepted, body)
	if location {
		resp.Headers["Location"] = "/v1/confirmations/" + conf.ID
	}
	return resp
}

// redeem consumes the approval named by the call and runs the call once.
func (g *Gateway) redeem(ctx context.Context, cred *store.Credential, c *call, d tier.Decision) (*store.Confirmation, *upstream.Response, *Response) {
	op, err := g.operation(cred, c, d)
	if err != nil {
		r := codeError("internal", "internal error")
		return nil, nil, &r
	}
	conf, index, err := g.Confirm.Redeem(ctx, c.confirmationID, cred.ID, op.Binding)
	if err != nil {
		if confirm.CodeOf(err) == confirm.CodeUnknown {
			r := codeError(string(confirm.CodeUnknown), "no confirmation "+c.confirmationID)
			return nil, nil, &r
		}
		r := lifecycleError(err)
		return nil, nil, &r
	}
	resp, callErr := g.send(ctx, cred, c, confirm.IdempotencyKey(conf.ID, index))
	// The outcome is stored even when the call could not be made: the
	// approval is spent either way, and nothing runs it again.
	conf, err = g.Confirm.Complete(context.WithoutCancel(ctx), conf.ID, index, tasks.OutcomeOf(resp, callErr))
	if err != nil {
		g.logger().Error("outcome not stored", "confirmation", c.confirmationID, "error", err)
	} else {
		emit(ctx, g.Events, g.SyncEvents, notify.Event{Type: notify.TypeExecuted, Confirmation: tasks.EventConfirmation(conf), Status: string(conf.Status)})
	}
	if callErr != nil {
		r := upstreamError(callErr)
		return nil, nil, &r
	}
	if conf == nil {
		conf = &store.Confirmation{ID: c.confirmationID, Status: store.StatusExecuted}
	}
	return conf, resp, nil
}

// syncEventBudget bounds how long a synchronous event delivery may hold a response.
const syncEventBudget = 3 * time.Second

// emit sends an approver event: in the background, or before answering
// (bounded) when the handler runs in Lambda.
func emit(ctx context.Context, d *notify.Dispatcher, sync bool, ev notify.Event) {
	if d == nil {
		return
	}
	if !sync {
		d.Notify(ev)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncEventBudget)
	defer cancel()
	_ = d.NotifyWait(ctx, ev)
}

// send calls the connection's upstream with the call as it is.
func (g *Gateway) send(ctx context.Context, cred *store.Credential, c *call, idemKey string) (*upstream.Response, error) {
	conn := g.Config.Connections[c.tier.Connection]
	r := upstream.Request{
		BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: c.tier.Method, Path: c.tier.Path,
		Query: c.tier.Query, RawQuery: c.rawQuery,
		Body: c.body, ContentType: c.contentType,
		IdempotencyKey: idemKey, Forward: c.forward,
	}
	return g.Upstream.Do(ctx, r)
}

// agentKey is the Idempotency-Key sent upstream for an agent's own key,
// scoped to the credential so two agents' keys never collide upstream.
func (g *Gateway) agentKey(cred *store.Credential, c *call) string {
	if c.idempotencyKey == "" {
		return ""
	}
	return cred.ID + ":" + c.idempotencyKey
}

func (g *Gateway) upstreamURL(c *call) string {
	conn := g.Config.Connections[c.tier.Connection]
	u := strings.TrimRight(conn.BaseURL, "/") + c.tier.Path
	q := c.rawQuery
	if q == "" && len(c.tier.Query) > 0 {
		q = c.tier.Query.Encode()
	}
	if q != "" {
		u += "?" + q
	}
	return u
}

func upstreamError(err error) Response {
	if errors.Is(err, upstream.ErrUnreachable) {
		return codeError("upstream_unreachable", err.Error())
	}
	return codeError("upstream_unreachable", "upstream call failed: "+err.Error())
}

// viewOf is the JSON view of an upstream response: the body parsed when JSON.
func viewOf(r *upstream.Response) upstreamView {
	v := upstreamView{Status: r.Status, Headers: map[string]string{}}
	for k := range r.Header {
		v.Headers[k] = r.Header.Get(k)
	}
	if parsed, ok := r.JSONBody(); ok {
		v.Body = parsed
	} else if len(r.Body) > 0 {
		if utf8.Valid(r.Body) {
			v.Body = string(r.Body)
		} else {
			v.Body = base64.StdEncoding.EncodeToString(r.Body)
		}
	}
	return v
}

func (g *Gateway) logCall(cred *store.Credential, c *call, d tier.Decision, outcome, confirmation string) {
	g.logger().Info("call",
		"credential", cred.ID, "connection", c.tier.Connection, "method", c.tier.Method, "path", c.tier.Path,
		"tier", d.Tier.String(), "outcome", outcome, "code", string(d.Code), "escalated", d.Escalated,
		"rule", d.Rule, "confirmation", confirmation)
}

// sse turns a JSON response into a text/event-stream: a
// confirmation_required event first when the call paused, then one result
// event with the whole response.
func sse(resp Response) Response {
	var buf strings.Builder
	if resp.StatusCode == http.StatusAccepted {
		var p struct {
			Event json.RawMessage `json:"event"`
		}
		if json.Unmarshal([]byte(resp.Body), &p) == nil && len(p.Event) > 0 {
			fmt.Fprintf(&buf, "event: confirmation_required\ndata: %s\n\n", p.Event)
		}
	}
	fmt.Fprintf(&buf, "event: result\ndata: %s\n\n", strings.TrimSpace(resp.Body))
	headers := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
	if loc, ok := resp.Headers["Location"]; ok {
		headers["Location"] = loc
	}
	return Response{StatusCode: resp.StatusCode, Headers: headers, Body: buf.String()}
}
