package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/store"
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
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	m := method(&req)
	switch {
	case path == "/healthz":
		if m != http.MethodGet && m != http.MethodHead {
			return codeError(fault.MethodNotAllowed, "use GET /healthz"), nil
		}
		return jsonResponse(http.StatusOK, map[string]string{"status": "ok"}), nil
	case path == "/v1/calls":
		if m != http.MethodPost {
			return codeError(fault.MethodNotAllowed, "use POST /v1/calls"), nil
		}
		return g.withCredential(ctx, &req, g.calls), nil
	case path == "/v1/scripts" && g.Scripts != nil:
		if m != http.MethodPost {
			return codeError(fault.MethodNotAllowed, "use POST /v1/scripts"), nil
		}
		return g.withCredential(ctx, &req, g.scripts), nil
	case strings.HasPrefix(path, "/v1/rest/"):
		return g.withCredential(ctx, &req, func(ctx context.Context, req *Request, cred *store.Credential) Response {
			return g.rest(ctx, req, cred, strings.TrimPrefix(path, "/v1/rest/"))
		}), nil
	case strings.HasPrefix(path, "/v1/confirmations/"):
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET /v1/confirmations/<id>"), nil
		}
		id := strings.TrimPrefix(path, "/v1/confirmations/")
		return g.withCredential(ctx, &req, func(ctx context.Context, req *Request, cred *store.Credential) Response {
			return g.status(ctx, req, cred, id)
		}), nil
	case path == "/mcp" && g.MCP != nil:
		if bodyLen(&req) > MaxBody {
			return codeError(fault.PayloadTooLarge, "the request body is over 1 MiB"), nil
		}
		return g.MCP.Handle(ctx, req)
	case path == "/v1/credentials/me":
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET /v1/credentials/me"), nil
		}
		return g.withCredential(ctx, &req, g.me), nil
	}
	return codeError(fault.NotFound, "no route "+m+" "+path), nil
}

// withCredential authenticates the request and refuses oversized bodies
// before anything else reads them.
func (g *Gateway) withCredential(ctx context.Context, req *Request, next func(context.Context, *Request, *store.Credential) Response) Response {
	if bodyLen(req) > MaxBody {
		return codeError(fault.PayloadTooLarge, "the request body is over 1 MiB")
	}
	cred, err := g.Calls.Authenticate(ctx, bearerKey(req))
	if err != nil {
		return errorOf(err)
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
	ID          string        `json:"id"`
	Choice      string        `json:"choice"`
	ReadOnly    bool          `json:"read_only"`
	Connections []string      `json:"connections"`
	LastClient  *store.Client `json:"last_client"`
}

func (g *Gateway) me(ctx context.Context, req *Request, cred *store.Credential) Response {
	return jsonResponse(http.StatusOK, meBody{ID: cred.ID, Choice: cred.Choice.String(), ReadOnly: cred.ReadOnly,
		Connections: g.Calls.Connections(cred), LastClient: cred.LastClient})
}
