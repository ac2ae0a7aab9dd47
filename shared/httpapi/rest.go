package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/tier"
)

// hopHeaders are never copied between the agent, the gateway and the upstream.
var hopHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-authenticate": true, "proxy-authorization": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true, "content-length": true, "host": true,
}

// rest handles ANY /v1/rest/<connection>/<path>: the request goes upstream as
// it is, and the upstream's answer comes back unchanged. REST cannot ask a
// person, so a pausing call is refused unless the client sends
// Prefer: respond-async; it then redeems with Countersign-Confirmation.
func (g *Gateway) rest(ctx context.Context, req *Request, cred *store.Credential, rest string) Response {
	connName, p, _ := strings.Cut(rest, "/")
	if connName == "" {
		return codeError("invalid_request", "the path must be /v1/rest/<connection>/<path>")
	}
	if hasDotSegment(p) {
		return codeError("invalid_request", "the path must not contain . or .. segments")
	}
	b, err := body(req)
	if err != nil {
		return codeError("invalid_request", err.Error())
	}
	m := method(req)
	c := &call{rawQuery: req.RawQueryString, forward: forwardHeaders(req)}
	c.tier = tier.Call{Connection: connName, Method: m, Path: "/" + p, Intent: tier.IntentRead}
	if tier.IsMutating(m) {
		c.tier.Intent = tier.IntentWrite
	}
	if id := header(req, "Countersign-Confirmation"); id != "" {
		c.tier.Intent, c.confirmationID = tier.IntentConfirmedWrite, id
	}
	if q, err := url.ParseQuery(req.RawQueryString); err == nil {
		c.tier.Query = q
	} else {
		return codeError("invalid_request", "malformed query string")
	}
	c.contentType = header(req, "Content-Type")
	if len(b) > 0 {
		c.body = b
		if json.Valid(b) {
			c.jsonBody = b
		}
	}
	c.arg = restArg(b, c.jsonBody != nil)
	c.idempotencyKey = header(req, "Idempotency-Key")
	async := preferAsync(header(req, "Prefer"))
	return g.idempotent(ctx, cred, "rest", c, func() Response { return g.restOutcome(ctx, cred, c, async) })
}

func (g *Gateway) restOutcome(ctx context.Context, cred *store.Credential, c *call, async bool) Response {
	d := g.decide(ctx, cred, c)
	switch d.Outcome {
	case tier.Deny:
		return g.deny(ctx, cred, c, d)
	case tier.Execute:
		resp, err := g.send(ctx, cred, c, g.agentKey(cred, c))
		if err != nil {
			return upstreamError(err)
		}
		g.logCall(cred, c, d, "executed", "")
		out := passThrough(resp.Status, resp.Header, resp.Body)
		if d.Notice {
			out.Headers["Countersign-Notice"] = "requires_confirmation; " + d.Reason
		}
		return out
	}
	if c.confirmationID != "" {
		conf, resp, errResp := g.redeem(ctx, cred, c, d)
		if errResp != nil {
			return *errResp
		}
		g.logCall(cred, c, d, "executed", conf.ID)
		out := passThrough(resp.Status, resp.Header, resp.Body)
		out.Headers["Countersign-Confirmation"] = conf.ID
		return out
	}
	if !async {
		g.logCall(cred, c, d, "denied", "")
		d.Outcome, d.Code = tier.Deny, tier.CodeRequiresConfirmation
		d.Reason = c.tier.Method + " " + d.Match.Endpoint.Path + " requires confirmation, and plain REST cannot ask a person: send Prefer: respond-async to wait for approval"
		return denied(d)
	}
	return g.pause(ctx, cred, c, d, true)
}

// restArg is the JSON form of a REST body for the binding: the JSON itself,
// a string for other text, and base64 for bytes.
func restArg(b []byte, isJSON bool) json.RawMessage {
	switch {
	case len(b) == 0:
		return json.RawMessage("null")
	case isJSON:
		return b
	case utf8.Valid(b):
		s, _ := json.Marshal(string(b))
		return s
	default:
		s, _ := json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(b)})
		return s
	}
}

func preferAsync(prefer string) bool {
	for _, p := range strings.Split(prefer, ",") {
		if strings.EqualFold(strings.TrimSpace(strings.SplitN(p, ";", 2)[0]), "respond-async") {
			return true
		}
	}
	return false
}

// forwardHeaders are the agent's headers passed upstream; the upstream
// client drops credentials, hop-by-hop and Countersign-* headers.
func forwardHeaders(req *Request) http.Header {
	h := http.Header{}
	for k, v := range req.Headers {
		lk := strings.ToLower(k)
		if hopHeaders[lk] || lk == "authorization" || lk == "prefer" || lk == "idempotency-key" || strings.HasPrefix(lk, "countersign-") || strings.HasPrefix(lk, "x-forwarded-") || strings.HasPrefix(lk, "x-amzn-") {
			continue
		}
		h.Set(k, v)
	}
	return h
}

// passThrough answers with the upstream's status, headers and body.
func passThrough(status int, header http.Header, b []byte) Response {
	headers := map[string]string{}
	var cookies []string
	for k, vs := range header {
		lk := strings.ToLower(k)
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
