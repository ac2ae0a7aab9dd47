package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/tier"
	"github.com/countersign/countersign/shared/upstream"
)

// Gateway is the agents' HTTP surface: POST /v1/calls, ANY /v1/rest/...,
// GET /v1/confirmations/{id}, GET /v1/credentials/me and GET /healthz.
type Gateway struct {
	Config   *policy.Config
	Store    store.Store
	Confirm  *confirm.Service
	Upstream *upstream.Client
	// Hooks calls the connections' hooks; nil means a client with a 5 s timeout.
	Hooks *http.Client
	// Events sends confirmation.executed after a redemption; nil sends nothing.
	Events *notify.Dispatcher
	// SyncEvents delivers events before answering (Lambda freezes work left
	// running after the response); otherwise they are sent in the background.
	SyncEvents bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often ?wait= first re-reads the record; 0 means 100 ms.
	PollInterval time.Duration
	// Stopping, when closed, makes long polls answer at once with the
	// current status, so a server shutting down is not held by ?wait=.
	Stopping <-chan struct{}
	// Logger receives one line per call; nil discards.
	Logger *slog.Logger
}

var _ Handler = (*Gateway)(nil)

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now().UTC()
	}
	return time.Now().UTC()
}

func (g *Gateway) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Handle routes one request.
func (g *Gateway) Handle(ctx context.Context, req Request) (Response, error) {
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	m := method(&req)
	switch {
	case path == "/healthz":
		if m != http.MethodGet && m != http.MethodHead {
			return codeError("method_not_allowed", "use GET /healthz"), nil
		}
		return jsonResponse(http.StatusOK, map[string]string{"status": "ok"}), nil
	case path == "/v1/calls":
		if m != http.MethodPost {
			return codeError("method_not_allowed", "use POST /v1/calls"), nil
		}
		return g.withCredential(ctx, &req, g.calls), nil
	case strings.HasPrefix(path, "/v1/rest/"):
		return g.withCredential(ctx, &req, func(ctx context.Context, req *Request, cred *store.Credential) Response {
			return g.rest(ctx, req, cred, strings.TrimPrefix(path, "/v1/rest/"))
		}), nil
	case strings.HasPrefix(path, "/v1/confirmations/"):
		if m != http.MethodGet {
			return codeError("method_not_allowed", "use GET /v1/confirmations/<id>"), nil
		}
		id := strings.TrimPrefix(path, "/v1/confirmations/")
		return g.withCredential(ctx, &req, func(ctx context.Context, req *Request, cred *store.Credential) Response {
			return g.status(ctx, req, cred, id)
		}), nil
	case path == "/v1/credentials/me":
		if m != http.MethodGet {
			return codeError("method_not_allowed", "use GET /v1/credentials/me"), nil
		}
		return g.withCredential(ctx, &req, g.me), nil
	}
	return codeError("not_found", "no route "+m+" "+path), nil
}

// withCredential authenticates the request and refuses oversized bodies
// before anything else reads them.
func (g *Gateway) withCredential(ctx context.Context, req *Request, next func(context.Context, *Request, *store.Credential) Response) Response {
	if bodyLen(req) > MaxBody {
		return codeError("payload_too_large", "the request body is over 1 MiB")
	}
	cred, err := g.authenticate(ctx, req)
	if err != nil {
		return codeError("unauthenticated", err.Error())
	}
	return next(ctx, req, cred)
}

var errNoKey = errors.New("missing Authorization: Bearer <key>")

// authenticate finds the credential whose key hashes to the bearer key.
// Keys are stored only as SHA-256 hashes; the comparison is constant time.
func (g *Gateway) authenticate(ctx context.Context, req *Request) (*store.Credential, error) {
	auth := header(req, "Authorization")
	scheme, key, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return nil, errNoKey
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	hash := hex.EncodeToString(sum[:])
	cred, err := g.Store.CredentialByKeyHash(ctx, hash)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			g.logger().Error("credential lookup failed", "error", err)
		}
		return nil, errors.New("unknown key")
	}
	if subtle.ConstantTimeCompare([]byte(cred.KeyHash), []byte(hash)) != 1 {
		return nil, errors.New("unknown key")
	}
	return &cred, nil
}

// tierCredential is the decision's view of a stored credential.
func tierCredential(c *store.Credential) *tier.Credential {
	return &tier.Credential{ID: c.ID, Choice: c.Choice, ReadOnly: c.ReadOnly, Connections: c.Connections}
}

// lastClientEvery bounds how often an unchanged client is written back, so
// an auto call does not write to the store each time.
const lastClientEvery = time.Hour

func (g *Gateway) recordClient(ctx context.Context, cred *store.Credential, name, version string, canAsk bool) {
	if name == "" {
		return
	}
	now := g.now()
	if lc := cred.LastClient; lc != nil && lc.Name == name && lc.Version == version && lc.CanAsk == canAsk && now.Sub(lc.SeenAt) < lastClientEvery {
		return
	}
	if err := g.Store.SetLastClient(ctx, cred.ID, store.Client{Name: name, Version: version, CanAsk: canAsk, SeenAt: now}); err != nil {
		g.logger().Warn("last client not recorded", "credential", cred.ID, "error", err)
	}
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
	conns := cred.Connections
	if len(conns) == 0 {
		for _, c := range g.Config.Policy.Connections() {
			conns = append(conns, c.Name)
		}
	}
	if conns == nil {
		conns = []string{}
	}
	return jsonResponse(http.StatusOK, meBody{ID: cred.ID, Choice: cred.Choice.String(), ReadOnly: cred.ReadOnly, Connections: conns, LastClient: cred.LastClient})
}
