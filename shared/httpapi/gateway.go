package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/telemetry"
)

// Pipeline is what the agents' surface asks of the call pipeline
// (calls.Service): authenticate a key, run a call once per Idempotency-Key,
// and read a confirmation.
type Pipeline interface {
	Authenticate(ctx context.Context, key string) (*countersign.Credential, error)
	// Challenge is the WWW-Authenticate of a request refused for want of
	// a credential ("" without an authorization server).
	Challenge(path string, invalid bool) string
	RecordClient(ctx context.Context, cred *countersign.Credential, c calls.Client)
	Do(ctx context.Context, cred *countersign.Credential, c *calls.Call, o calls.Options) (*calls.Result, error)
	Idempotent(ctx context.Context, cred *countersign.Credential, key, hash string, fn func() calls.Reply) (calls.Reply, bool, error)
	RequestHash(surface string, c *calls.Call) string
	Confirmation(ctx context.Context, cred *countersign.Credential, id string, o calls.WaitOptions) (calls.Status, error)
	Connections(cred *countersign.Credential) []string
	// GrantsOf lists the credential's own grants (GET /v1/grants).
	GrantsOf(ctx context.Context, cred *countersign.Credential) ([]*countersign.ApprovalGrant, error)
}

var _ Pipeline = (*calls.Service)(nil)

// Gateway is the agents' HTTP surface: POST /v1/calls, ANY /v1/rest/...,
// GET /v1/confirmations/{id}, GET /v1/credentials/me, POST /v1/scripts and
// GET /healthz, and /mcp when MCP is attached. It only translates: every
// call goes through the pipeline.
//
// It answers what the method, path and headers decide (an unknown route,
// a wrong method, a body declared over 1 MiB, a missing or unknown key)
// before reading a byte of the body, so an unauthenticated request never
// has its body read or buffered.
type Gateway struct {
	Calls Pipeline
	// MCP serves /mcp (shared/mcpapi, attached by gatewayapp so that only
	// the gateway links the MCP SDK); nil answers 404 not_found. It gets
	// the request with its body read and the credential the gateway found
	// (Preauthenticated), or, for a refused key, the request unread, to
	// answer in its own words.
	MCP http.Handler
	// Scripts is code mode (POST /v1/scripts, and scripts' status); nil
	// answers that route 404.
	Scripts Scripts
	// PollInterval is how often ?wait= first re-reads the record; 0 means 100 ms.
	PollInterval time.Duration
	// Stopping, when closed, makes long polls answer at once with the
	// current status, so a server shutting down is not held by ?wait=.
	Stopping <-chan struct{}
	// BodyTimeout bounds the wait for a request's body once its headers
	// are in (0: BodyTimeout).
	BodyTimeout time.Duration
}

var _ http.Handler = (*Gateway)(nil)

// credRoute serves a request that needs a credential, with its body.
type credRoute func(ctx context.Context, r *http.Request, body []byte, cred *countersign.Credential) reply

// ServeHTTP routes one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.serve(w, r, g.route)
}

// CodeMode is the surface with code mode's routes alone, POST /v1/scripts
// and /mcp: the scripts function's handler, as API Gateway sends it no
// other route. They are served as ServeHTTP serves them (the same request
// id, authentication, body limits, error bodies); every other path
// answers the 404 ServeHTTP answers an unknown route. Its dispatch never
// names the other routes' handlers, so a function that serves only it
// links none of them: a closure, not a type holding g, as the linker
// keeps every method an interface names of a type reachable from a type
// that is converted to an interface.
func (g *Gateway) CodeMode() http.Handler {
	route := func(r *http.Request) (credRoute, *reply) {
		path, m := requestPath(r), method(r)
		if next, answer, ok := g.codeModeRoute(path, m); ok {
			return next, answer
		}
		return nil, noRoute(m, path)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, route) })
}

// serve answers one request with what route finds for it.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, route func(*http.Request) (credRoute, *reply)) {
	ctx := telemetry.FromHTTP(withRequestID(r), r.Header)
	next, answer := route(r)
	if answer != nil {
		writeUnread(w, r, *answer)
		return
	}
	if tooLarge(w, r) {
		return
	}
	actx := ctx
	if next == nil {
		actx = calls.ForResource(ctx, "/mcp") // a token for the JSON API does not call /mcp
	}
	cred, err := g.Calls.Authenticate(actx, bearerKey(r))
	if err != nil {
		if next == nil { // /mcp answers a refused key in its own words, without reading a body
			closeUnread(w, r)
			g.MCP.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		resp := errorOf(err)
		if fault.CodeOf(err) == fault.Unauthenticated {
			if c := g.Calls.Challenge("", bearerKey(r) != ""); c != "" {
				resp.header.Set("WWW-Authenticate", c)
			}
		}
		writeUnread(w, r, resp)
		return
	}
	b, ok := bodyFront{timeout: g.BodyTimeout}.read(w, r)
	if !ok {
		return
	}
	if len(b) > MaxBody {
		codeError(fault.PayloadTooLarge, "the request body is over 1 MiB").send(w)
		return
	}
	if next == nil {
		r = r.WithContext(context.WithValue(ctx, preauthenticated{}, cred))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		g.MCP.ServeHTTP(w, r)
		return
	}
	next(ctx, r, b, cred).send(w)
}

// route finds what serves r from its method and path alone: an answer
// that needs no credential (a 404, a 405, /healthz), or the route that
// needs one; neither for /mcp, which answers a refused key itself.
func (g *Gateway) route(r *http.Request) (next credRoute, answer *reply) {
	path := requestPath(r)
	m := method(r)
	if next, answer, ok := g.codeModeRoute(path, m); ok {
		return next, answer
	}
	switch {
	case path == "/healthz":
		if m != http.MethodGet && m != http.MethodHead {
			return nil, refuse(fault.MethodNotAllowed, "use GET /healthz")
		}
		rp := jsonReply(http.StatusOK, map[string]string{"status": "ok"})
		return nil, &rp
	case path == "/v1/calls":
		if m != http.MethodPost {
			return nil, refuse(fault.MethodNotAllowed, "use POST /v1/calls")
		}
		return g.calls, nil
	case strings.HasPrefix(path, "/v1/rest/"):
		return func(ctx context.Context, r *http.Request, body []byte, cred *countersign.Credential) reply {
			return g.rest(ctx, r, body, cred, strings.TrimPrefix(path, "/v1/rest/"))
		}, nil
	case strings.HasPrefix(path, "/v1/confirmations/"):
		if m != http.MethodGet {
			return nil, refuse(fault.MethodNotAllowed, "use GET /v1/confirmations/<id>")
		}
		id := strings.TrimPrefix(path, "/v1/confirmations/")
		return func(ctx context.Context, r *http.Request, _ []byte, cred *countersign.Credential) reply {
			return g.status(ctx, r, cred, id)
		}, nil
	case path == "/v1/grants":
		if m != http.MethodGet {
			return nil, refuse(fault.MethodNotAllowed, "use GET /v1/grants")
		}
		return g.grants, nil
	case path == "/v1/credentials/me":
		if m != http.MethodGet {
			return nil, refuse(fault.MethodNotAllowed, "use GET /v1/credentials/me")
		}
		return g.me, nil
	}
	return nil, noRoute(m, path)
}

// codeModeRoute is route for code mode's routes, POST /v1/scripts and
// /mcp (ok false for any other path, or for one whose surface is not
// attached): both ServeHTTP and CodeMode route them here.
func (g *Gateway) codeModeRoute(path, m string) (next credRoute, answer *reply, ok bool) {
	switch {
	case path == "/v1/scripts" && g.Scripts != nil:
		if m != http.MethodPost {
			return nil, refuse(fault.MethodNotAllowed, "use POST /v1/scripts"), true
		}
		return g.scripts, nil, true
	case path == "/mcp" && g.MCP != nil:
		return nil, nil, true
	}
	return nil, nil, false
}

// refuse is the answer of a request refused by its method or path alone.
func refuse(code fault.Code, reason string) *reply {
	rp := codeError(code, reason)
	return &rp
}

// noRoute is the answer to a path no route serves.
func noRoute(m, path string) *reply { return refuse(fault.NotFound, "no route "+m+" "+path) }

// preauthenticated carries the credential the gateway found to /mcp, so
// the key is looked up once.
type preauthenticated struct{}

// Preauthenticated returns the credential the gateway found for this
// request, so that a handler behind it (/mcp) does not look the key up
// again.
func Preauthenticated(ctx context.Context) (*countersign.Credential, bool) {
	cred, ok := ctx.Value(preauthenticated{}).(*countersign.Credential)
	return cred, ok
}

// meBody is GET /v1/credentials/me.
type meBody struct {
	ID          string              `json:"id"`
	Choice      string              `json:"choice"`
	ReadOnly    bool                `json:"read_only"`
	Connections []string            `json:"connections"`
	LastClient  *countersign.Client `json:"last_client"`
	// User is the e-mail of a user (a person who signs in); absent on a key.
	User string `json:"user,omitempty"`
	// AsksInClient says whether calls that need a person may ask in the
	// client (a user, or a key with ask_in_client); otherwise the
	// approvers' links decide.
	AsksInClient bool `json:"asks_in_client"`
}

func (g *Gateway) me(_ context.Context, _ *http.Request, _ []byte, cred *countersign.Credential) reply {
	return jsonReply(http.StatusOK, meBody{ID: cred.ID, Choice: cred.Choice.String(), ReadOnly: cred.ReadOnly,
		Connections: g.Calls.Connections(cred), LastClient: cred.LastClient, User: cred.Email, AsksInClient: cred.AsksInClient()})
}
