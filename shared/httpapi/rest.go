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
func (g *Gateway) rest(ctx context.Context, req *Request, cred *countersign.Credential, rest string) Response {
	connName, p, _ := strings.Cut(rest, "/")
	if connName == "" {
		return codeError(fault.InvalidRequest, "the path must be /v1/rest/<connection>/<path>")
	}
	if calls.HasDotSegment(p) {
		return codeError(fault.InvalidRequest, "the path must not contain . or .. segments")
	}
	b, err := body(req)
	if err != nil {
		return codeError(fault.InvalidRequest, err.Error())
	}
	m := method(req)
	c := &calls.Call{Connection: connName, Method: m, Path: "/" + p, RawQuery: req.RawQueryString, Forward: agentHeaders(req), Intent: policy.IntentRead}
	if policy.IsMutating(m) {
		c.Intent = policy.IntentWrite
	}
	if id := header(req, "Countersign-Confirmation"); id != "" {
		c.Intent, c.ConfirmationID = policy.IntentConfirmedWrite, id
	}
	// The query is read by the form rules: a name PHP would trim or cut
	// (" amount", "amount%00") is refused, not passed by a threshold.
	if c.Query, err = callbody.ParseQuery(req.RawQueryString); err != nil {
		return codeError(fault.InvalidRequest, "query: "+err.Error())
	}
	c.ContentType = header(req, "Content-Type")
	if len(b) > 0 {
		c.Body = b
	}
	c.IdempotencyKey = header(req, "Idempotency-Key")
	// The canonical path from here on, also for the idempotency record.
	if err := c.Validate(); err != nil {
		return errorOf(err)
	}
	o := calls.Options{Pause: calls.PauseRefuse, RefuseReason: restRefusal}
	if preferAsync(header(req, "Prefer")) {
		o.Pause = calls.PauseAsk
	}
	return g.idempotent(ctx, cred, "rest", c, func() (Response, bool) { return g.restOutcome(ctx, cred, c, o) })
}

// restOutcome answers a REST call; retryable as for callsOutcome.
func (g *Gateway) restOutcome(ctx context.Context, cred *countersign.Credential, c *calls.Call, o calls.Options) (resp Response, retryable bool) {
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
		out.Headers["Countersign-Notice"] = "requires_confirmation; " + res.Decision.Reason
	}
	if res.Confirmation != nil {
		out.Headers["Countersign-Confirmation"] = res.Confirmation.ID
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

// agentHeaders are the request's headers by lower-case name, as API Gateway
// and the local stack give them (a hand-built event's other spellings are
// lower-cased, repeated names joined with commas as API Gateway joins
// them). The pipeline reads of them only what the connection forwards:
// content negotiation and its forward_headers.
func agentHeaders(req *Request) map[string]string {
	for k := range req.Headers {
		if lowerName(k) == k {
			continue
		}
		h := make(map[string]string, len(req.Headers))
		for k, v := range req.Headers {
			lk := lowerName(k)
			if was, ok := h[lk]; ok {
				v = was + "," + v
			}
			h[lk] = v
		}
		return h
	}
	return req.Headers
}

// passThrough answers with the upstream's status, headers and body.
func passThrough(status int, header http.Header, b []byte) Response {
	headers := map[string]string{}
	var cookies []string
	for k, vs := range header {
		lk := lowerName(k)
		switch {
		case hopHeaders[lk]:
		case lk == "set-cookie":
			cookies = append(cookies, vs...)
		default:
			headers[k] = strings.Join(vs, ", ")
		}
	}
	r := rawResponse(status, headers, b)
	r.Cookies = cookies
	return r
}
