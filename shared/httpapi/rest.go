package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// hopHeaders are never copied between the agent, the gateway and the upstream.
var hopHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-authenticate": true, "proxy-authorization": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true, "content-length": true, "host": true,
}

// restRefusal completes the denial of a pausing call over plain REST.
const restRefusal = "plain REST cannot ask a person: send Prefer: respond-async to wait for approval"

// rest handles ANY /v1/rest/<connection>/<path>: the request goes upstream as
// it is, and the upstream's answer comes back unchanged. REST cannot ask a
// person, so a pausing call is refused unless the client sends
// Prefer: respond-async; it then redeems with Countersign-Confirmation.
func (g *Gateway) rest(ctx context.Context, r *http.Request, b []byte, cred *countersign.Credential, rest string) reply {
	connName, p, _ := strings.Cut(rest, "/")
	if connName == "" {
		return codeError(fault.InvalidRequest, "the path must be /v1/rest/<connection>/<path>")
	}
	if calls.HasDotSegment(p) {
		return codeError(fault.InvalidRequest, "the path must not contain . or .. segments")
	}
	m := method(r)
	c := &calls.Call{Connection: connName, Method: m, Path: "/" + p, RawQuery: r.URL.RawQuery, Forward: agentHeaders(r), Intent: policy.IntentRead}
	if policy.IsMutating(m) {
		c.Intent = policy.IntentWrite
	}
	if id := header(r, "Countersign-Confirmation"); id != "" {
		c.Intent, c.ConfirmationID = policy.IntentConfirmedWrite, id
	}
	// The query is read by the form rules: a name PHP would trim or cut
	// (" amount", "amount%00") is refused, not passed by a threshold.
	var err error
	if c.Query, err = callbody.ParseQuery(r.URL.RawQuery); err != nil {
		return codeError(fault.InvalidRequest, "query: "+err.Error())
	}
	c.ContentType = header(r, "Content-Type")
	if len(b) > 0 {
		c.Body = b
	}
	c.IdempotencyKey = header(r, "Idempotency-Key")
	// The canonical path from here on, also for the idempotency record.
	if err := c.Validate(); err != nil {
		return errorOf(err)
	}
	o := calls.Options{Pause: calls.PauseRefuse, RefuseReason: restRefusal}
	if preferAsync(header(r, "Prefer")) {
		o.Pause = calls.PauseAsk
	}
	return g.idempotent(ctx, cred, "rest", c, func() (reply, bool) { return g.restOutcome(ctx, cred, c, o) })
}

// restOutcome answers a REST call; retryable as for callsOutcome.
func (g *Gateway) restOutcome(ctx context.Context, cred *countersign.Credential, c *calls.Call, o calls.Options) (resp reply, retryable bool) {
	res, err := g.Calls.Do(ctx, cred, c, o)
	if err != nil {
		return errorOf(err), fault.CodeOf(err) == fault.Internal
	}
	switch res.Outcome {
	case calls.Denied:
		return denied(res), false
	case calls.Paused:
		return pending(res, true), false
	}
	out := passThrough(res.Response.Status, res.Response.Header, res.Response.Body)
	if res.Notice {
		out.set("Countersign-Notice", "requires_confirmation; "+res.Decision.Reason)
	}
	if res.Confirmation != nil {
		out.set("Countersign-Confirmation", res.Confirmation.ID)
	}
	if res.ApprovalGrant != nil {
		out.set("Countersign-Grant", res.ApprovalGrant.ID)
	}
	return out, false
}

func preferAsync(prefer string) bool {
	for _, p := range strings.Split(prefer, ",") {
		if strings.EqualFold(strings.TrimSpace(strings.SplitN(p, ";", 2)[0]), "respond-async") {
			return true
		}
	}
	return false
}

// agentHeaders are the request's headers by lower-case name, as API
// Gateway gives them: repeated names joined with commas as API Gateway
// joins them, and the host. The pipeline reads of them only what the
// connection forwards: content negotiation and its forward_headers.
func agentHeaders(r *http.Request) map[string]string {
	h := make(map[string]string, len(r.Header)+1)
	for k, vs := range r.Header {
		lk := lowerName(k)
		v := strings.Join(vs, ",")
		if was, ok := h[lk]; ok {
			v = was + "," + v
		}
		h[lk] = v
	}
	if r.Host != "" {
		h["host"] = r.Host
	}
	return h
}

// passThrough answers with the upstream's status, headers and body.
func passThrough(status int, header http.Header, b []byte) reply {
	out := reply{status: status, header: make(http.Header, len(header)), body: b}
	for k, vs := range header {
		lk := lowerName(k)
		switch {
		case hopHeaders[lk]:
		case lk == "set-cookie":
			out.header["Set-Cookie"] = append(out.header["Set-Cookie"], vs...)
		default:
			out.header[k] = []string{strings.Join(vs, ", ")}
		}
	}
	return out
}
