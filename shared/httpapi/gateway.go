package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/telemetry"
)

// Gateway is the agents' HTTP surface: POST /v1/calls, ANY /v1/rest/...,
// GET /v1/confirmations/{id}, GET /v1/credentials/me, POST /v1/scripts and
// GET /healthz, and /mcp when MCP is attached. It only translates: every
// call goes through the pipeline (calls.Service).
type Gateway struct {
	Calls *calls.Service
	// MCP serves /mcp (shared/mcpapi, attached by gatewayapp so that only
	// the gateway links the MCP SDK); nil answers 404 not_found. It
	// authenticates the request itself.
	MCP Handler
	// Scripts is code mode (POST /v1/scripts, and scripts' status); nil
	// answers that route 404.
	Scripts Scripts
	// PollInterval is how often ?wait= first re-reads the record; 0 means 100 ms.
	PollInterval time.Duration
	// Stopping, when closed, makes long polls answer at once with the
	// current status, so a server shutting down is not held by ?wait=.
	Stopping <-chan struct{}
}

var _ Handler = (*Gateway)(nil)

// Handle routes one request.
func (g *Gateway) Handle(ctx context.Context, req Request) (Response, error) {
	ctx = reqlog.With(ctx, req.RequestContext.RequestID)
	ctx = telemetry.FromHeaders(ctx, req.Headers)
	next, answer := g.route(&req)
	switch {
	case answer != nil:
		return *answer, nil
	case next == nil: // /mcp
		if bodyLen(&req) > MaxBody {
			return codeError(fault.PayloadTooLarge, "the request body is over 1 MiB"), nil
		}
		return g.MCP.Handle(ctx, req)
	}
	return g.withCredential(ctx, &req, next), nil
}

// route finds what serves req from its method and path alone: an answer
// that needs no credential (a 404, a 405, /healthz), or the handler of a
// route that needs one; neither for /mcp, which authenticates itself.
func (g *Gateway) route(req *Request) (next func(context.Context, *Request, *countersign.Credential) Response, answer *Response) {
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	m := method(req)
	refuse := func(code fault.Code, reason string) *Response {
		r := codeError(code, reason)
		return &r
	}
	switch {
	case path == "/healthz":
		if m != http.MethodGet && m != http.MethodHead {
			return nil, refuse(fault.MethodNotAllowed, "use GET /healthz")
		}
		r := jsonResponse(http.StatusOK, map[string]string{"status": "ok"})
		return nil, &r
	case path == "/v1/calls":
		if m != http.MethodPost {
			return nil, refuse(fault.MethodNotAllowed, "use POST /v1/calls")
		}
		return g.calls, nil
	case path == "/v1/scripts" && g.Scripts != nil:
		if m != http.MethodPost {
			return nil, refuse(fault.MethodNotAllowed, "use POST /v1/scripts")
		}
		return g.scripts, nil
	case strings.HasPrefix(path, "/v1/rest/"):
		return func(ctx context.Context, req *Request, cred *countersign.Credential) Response {
			return g.rest(ctx, req, cred, strings.TrimPrefix(path, "/v1/rest/"))
		}, nil
	case strings.HasPrefix(path, "/v1/confirmations/"):
		if m != http.MethodGet {
			return nil, refuse(fault.MethodNotAllowed, "use GET /v1/confirmations/<id>")
		}
		id := strings.TrimPrefix(path, "/v1/confirmations/")
		return func(ctx context.Context, req *Request, cred *countersign.Credential) Response {
			return g.status(ctx, req, cred, id)
		}, nil
	case path == "/mcp" && g.MCP != nil:
		return nil, nil
	case path == "/v1/credentials/me":
		if m != http.MethodGet {
			return nil, refuse(fault.MethodNotAllowed, "use GET /v1/credentials/me")
		}
		return g.me, nil
	}
	return nil, refuse(fault.NotFound, "no route "+m+" "+path)
}

// preauthenticated carries the credential Preauthenticate found to the
// Handle of the same request (the local stack), so the key is looked up once.
type preauthenticated struct{}

// Preauthenticate answers, from the method, path and headers alone, what
// needs no body: a 404, a 405, and a missing or unknown key (401), so an
// unauthenticated request never has its body read or buffered. A request
// it lets through carries its credential to Handle.
func (g *Gateway) Preauthenticate(ctx context.Context, req *Request) (context.Context, *Response) {
	next, answer := g.route(req)
	if answer != nil {
		return ctx, answer
	}
	cred, err := g.Calls.Authenticate(ctx, bearerKey(req))
	if err != nil {
		if next == nil { // /mcp answers a refused key in its own words, without reading a body
			resp, herr := g.MCP.Handle(ctx, *req)
			if herr != nil {
				resp = codeError(fault.Internal, "internal error")
			}
			return ctx, &resp
		}
		resp := errorOf(err)
		return ctx, &resp
	}
	return context.WithValue(ctx, preauthenticated{}, cred), nil
}

// Preauthenticated returns the credential Preauthenticate found for this
// request, so that a handler behind it (/mcp) does not look the key up
// again.
func Preauthenticated(ctx context.Context) (*countersign.Credential, bool) {
	cred, ok := ctx.Value(preauthenticated{}).(*countersign.Credential)
	return cred, ok
}

// withCredential authenticates the request (unless Preauthenticate did)
// and refuses oversized bodies before anything else reads them.
func (g *Gateway) withCredential(ctx context.Context, req *Request, next func(context.Context, *Request, *countersign.Credential) Response) Response {
	if bodyLen(req) > MaxBody {
		return codeError(fault.PayloadTooLarge, "the request body is over 1 MiB")
	}
	cred, ok := Preauthenticated(ctx)
	if !ok {
		var err error
		if cred, err = g.Calls.Authenticate(ctx, bearerKey(req)); err != nil {
			return errorOf(err)
		}
	}
	return next(ctx, req, cred)
}

// bearerKey is the key of an Authorization: Bearer header, or "".
func bearerKey(req *Request) string {
	scheme, key, ok := strings.Cut(header(req, "Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return key
}

// meBody is GET /v1/credentials/me.
type meBody struct {
	ID          string              `json:"id"`
	Choice      string              `json:"choice"`
	ReadOnly    bool                `json:"read_only"`
	Connections []string            `json:"connections"`
	LastClient  *countersign.Client `json:"last_client"`
}

func (g *Gateway) me(ctx context.Context, req *Request, cred *countersign.Credential) Response {
	return jsonResponse(http.StatusOK, meBody{ID: cred.ID, Choice: cred.Choice.String(), ReadOnly: cred.ReadOnly,
		Connections: g.Calls.Connections(cred), LastClient: cred.LastClient})
}
