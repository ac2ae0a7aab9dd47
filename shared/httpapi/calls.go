package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
)

// calls handles POST /v1/calls.
func (g *Gateway) calls(ctx context.Context, r *http.Request, b []byte, cred *countersign.Credential) reply {
	c, client, err := calls.ParseRequest(b)
	if err != nil {
		return errorOf(err)
	}
	if client != nil {
		g.Calls.RecordClient(ctx, cred, *client)
	}
	c.IdempotencyKey = header(r, "Idempotency-Key")
	resp := g.idempotent(ctx, cred, "calls", c, func() (reply, bool) { return g.callsOutcome(ctx, cred, c, client) })
	if strings.Contains(header(r, "Accept"), "text/event-stream") {
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
	// Grant names the grant the call ran under (approval.remember).
	Grant string `json:"grant,omitempty"`
	// Edited is set when the approver edited the call before approving
	// (approval.editable): Arguments are the arguments that ran, Edits
	// what changed.
	Edited    bool                               `json:"edited,omitempty"`
	Arguments *countersign.Args                  `json:"arguments,omitempty"`
	Edits     map[string]countersign.EditedField `json:"edits,omitempty"`
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

// callsOutcome answers a call; retryable is set when nothing was sent
// upstream and a retry with the same Idempotency-Key may run it.
func (g *Gateway) callsOutcome(ctx context.Context, cred *countersign.Credential, c *calls.Call, client *calls.Client) (resp reply, retryable bool) {
	res, err := g.Calls.Do(ctx, cred, c, calls.Options{Client: client})
	if err != nil {
		return errorOf(err), fault.CodeOf(err) == fault.Internal
	}
	switch res.Outcome {
	case calls.Denied:
		return denied(res), false
	case calls.Paused:
		return pending(res, false), false
	}
	if !res.Notice && res.Confirmation == nil && res.ApprovalGrant == nil {
		if resp, ok := executedReply(res.Decision.Tier.String(), res.Response); ok {
			return resp, false
		}
	}
	out := executedBody{Status: "executed", Tier: res.Decision.Tier.String(), Response: viewOf(res.Response)}
	if res.Notice {
		out.Notice = &noticeBody{RequiresConfirmation: true, Reason: res.Decision.Reason}
	}
	if conf := res.Confirmation; conf != nil {
		out.Confirm = &confirmationID{ID: conf.ID, Status: string(conf.Status)}
		if len(conf.Operations) == 1 && conf.Operations[0].Edited != nil {
			op := conf.Operations[0].Runs()
			out.Edited, out.Arguments, out.Edits = true, &op.Args, op.Edited
		}
	}
	if g := res.ApprovalGrant; g != nil {
		out.Grant = g.ID
	}
	return jsonReply(http.StatusOK, out), false
}

// pendingBody is the 202 answer (docs/api.md, Agent calls).
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

// pending answers a paused call with 202; location adds the status route
// in a Location header (REST).
func pending(res *calls.Result, location bool) reply {
	conf, d, op := res.Confirmation, &res.Decision, &res.Operation
	body := pendingBody{
		Status: "confirmation_required", Tier: d.Tier.String(), Reason: d.Reason,
		Confirmation: viewConfirmation(conf, countersign.StatusPending),
		Preview:      previewView{Method: op.Method, URL: res.PreviewURL, Body: op.Args.Body},
		Event: eventView{Type: "confirmation_required", ConfirmationID: conf.ID, Endpoint: op.Endpoint, Method: op.Method,
			Reason: d.Reason, Escalated: d.Escalated, Timestamp: res.At.Truncate(time.Second)},
	}
	resp := jsonReply(http.StatusAccepted, body)
	if location {
		resp.set("Location", "/v1/confirmations/"+conf.ID)
	}
	return resp
}

// idempotent answers a repeated call with the same Idempotency-Key from
// the pipeline's record (Idempotent-Replayed: true) instead of running it.
func (g *Gateway) idempotent(ctx context.Context, cred *countersign.Credential, surface string, c *calls.Call, fn func() (reply, bool)) reply {
	if c.IdempotencyKey == "" {
		resp, _ := fn()
		return resp
	}
	var first reply
	a, replayed, err := g.Calls.Idempotent(ctx, cred, c.IdempotencyKey, g.Calls.RequestHash(surface, c), func() calls.Reply {
		var retryable bool
		first, retryable = fn()
		a := keptReply(first)
		a.Retryable = retryable
		return a
	})
	switch {
	case err != nil:
		return errorOf(err)
	case !replayed:
		return first
	}
	resp := rawReply(a.Status, a.Headers, a.Body)
	resp.set("Idempotent-Replayed", "true")
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	return resp
}

// keptReply is the kept form of a reply: its status, headers and body; the
// cookies an upstream set are not kept, so a replay sets none.
func keptReply(rp reply) calls.Reply {
	a := calls.Reply{Status: rp.status, Headers: make(map[string]string, len(rp.header)), Body: rp.body}
	for k, vs := range rp.header {
		if k != "Set-Cookie" && len(vs) > 0 {
			a.Headers[k] = strings.Join(vs, ", ")
		}
	}
	return a
}

// viewOf is the JSON view of an upstream response: the body as JSON when
// it is JSON (as the upstream wrote it, compacted), else as text or base64.
// Headers keep the first value of each (the transport's names are
// canonical).
func viewOf(r *calls.Response) upstreamView {
	v := upstreamView{Status: r.Status, Headers: make(map[string]string, len(r.Header))}
	for k, vs := range r.Header {
		if len(vs) > 0 {
			v.Headers[k] = vs[0]
		}
	}
	if raw, ok := r.RawJSON(); ok {
		v.Body = raw
	} else if parsed, ok := r.JSONBody(); ok {
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

// sse turns a JSON response into a text/event-stream: a
// confirmation_required event first when the call paused, then one result
// event with the whole response.
func sse(resp reply) reply {
	var buf bytes.Buffer
	if resp.status == http.StatusAccepted {
		var p struct {
			Event json.RawMessage `json:"event"`
		}
		if json.Unmarshal(resp.body, &p) == nil && len(p.Event) > 0 {
			fmt.Fprintf(&buf, "event: confirmation_required\ndata: %s\n\n", p.Event)
		}
	}
	fmt.Fprintf(&buf, "event: result\ndata: %s\n\n", bytes.TrimSpace(resp.body))
	out := reply{status: resp.status, header: http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-store"}}, body: buf.Bytes()}
	if loc, ok := resp.header["Location"]; ok {
		out.header["Location"] = loc
	}
	return out
}
