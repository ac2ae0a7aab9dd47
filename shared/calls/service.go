package calls

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/upstream"
)

// Store is the persistence the pipeline needs besides the confirmation
// lifecycle's. Adapters: store/embedded and store/dynamostore.
type Store interface {
	// CredentialByKeyHash returns the credential whose key hashes to
	// keyHash, or store.ErrNotFound.
	CredentialByKeyHash(ctx context.Context, keyHash string) (countersign.Credential, error)
	// SetLastClient records the client last seen with a credential.
	SetLastClient(ctx context.Context, credentialID string, c countersign.Client) error
	// GetConfirmation returns a confirmation or store.ErrNotFound.
	GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error)
	// GetCredential and ListCredentials read credentials (operator surface).
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
	ListCredentials(ctx context.Context, q countersign.ListQuery) (countersign.Page[countersign.Credential], error)
	// ListConfirmations and ListReviews list pages of confirmations and
	// review items (operator surface).
	ListConfirmations(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error)
	ListReviews(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error)
	// CreateIdempotency, GetIdempotency and UpdateIdempotency keep agents'
	// Idempotency-Key records (see store.Store).
	CreateIdempotency(ctx context.Context, r *countersign.Idempotency) error
	GetIdempotency(ctx context.Context, credentialID, key string) (*countersign.Idempotency, error)
	UpdateIdempotency(ctx context.Context, r *countersign.Idempotency) error
	// TakeQuota counts one use of a per-credential limit (see store.Store).
	TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error
	// Velocity counts and remembered approvals (see store.Store).
	store.Counts
	store.ApprovalGrants
}

// Sender calls a connection's upstream API (upstream.Client).
type Sender interface {
	Do(ctx context.Context, r upstream.Request) (*upstream.Response, error)
}

// Auditor appends records to the audit trail (audit.Trail). Record never
// fails the caller: the event it records has happened.
type Auditor interface {
	Record(ctx context.Context, r countersign.AuditRecord)
}

// Response is an upstream's answer.
type Response = upstream.Response

// Service is the call pipeline. Its zero value is not usable: Store and
// Confirm are required, and a configuration put in force with SetConfig.
// Confirm owns the confirmation lifecycle (its transitions, their audit
// records and approver events); the pipeline calls it once per use case
// and gives it the upstream to run approved operations with (Replayer).
//
// The Service holds the one configuration in force: everything that
// depends on the configuration (this pipeline, code mode's limits and
// controls, the surfaces) reads Current when it needs it, and keeps no
// copy of its own, so that a configuration a deployment re-reads applies
// to the next request without a restart.
type Service struct {
	Store   Store
	Confirm *confirm.Service
	// Upstream sends calls; nil means a shared upstream.Client.
	Upstream Sender
	// Hooks calls the connections' hooks; nil means a client with a 5 s timeout.
	Hooks *http.Client
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per call; nil discards. Log with the
	// request's context so its request id is on every line.
	Logger *slog.Logger
	// Audit records the calls it decides (denied, paused, executed) and
	// operator tools run; nil records nothing. Auto-tier calls are
	// recorded only with settings.json audit.auto_calls (no store write
	// on the auto path). What happens to a confirmation after it is
	// created is recorded by the lifecycle (Confirm.Audit).
	Audit Auditor
	// Tokens checks OAuth access tokens (shared/oauth.Server.Verify);
	// nil accepts API keys only.
	Tokens TokenVerifier

	rate rateLimiter
	live atomic.Pointer[config.Config]
}

// Current returns the configuration in force: the last one SetConfig put
// in force (nil before the first). A call reads it once, when it starts,
// and keeps that one to its end.
func (s *Service) Current() *config.Config { return s.live.Load() }

// SetConfig puts cfg in force for every call that starts after it returns;
// calls already running finish with the configuration they started with.
// It is safe to call while calls run.
func (s *Service) SetConfig(cfg *config.Config) {
	if cfg != nil {
		s.live.Store(cfg)
	}
}

// WithConfig puts cfg in force (SetConfig) and returns s, to build a
// Service in one expression.
func (s *Service) WithConfig(cfg *config.Config) *Service {
	s.SetConfig(cfg)
	return s
}

var defaultUpstream = &upstream.Client{}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Service) upstream() Sender {
	if s.Upstream != nil {
		return s.Upstream
	}
	return defaultUpstream
}

// Authenticate finds the credential of a bearer key. Keys are stored only
// as SHA-256 hashes and compared in constant time. An unknown key is
// unauthenticated; a store that cannot answer is internal, never 401.
//
// Every call reads the credential from the store, so a key revoked with
// countersign keys is refused from the next call on (no cache to outlive
// a revocation).
func (s *Service) Authenticate(ctx context.Context, key string) (*countersign.Credential, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, fault.New(fault.Unauthenticated, "missing Authorization: Bearer <key>")
	}
	if s.Tokens != nil {
		if cred, ok, err := s.Tokens.Verify(ctx, key, resourceOf(ctx)); ok {
			return cred, err
		}
	}
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:])
	cred, err := s.Store.CredentialByKeyHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.Unauthenticated, "unknown key")
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "credential lookup failed", "error", err)
		return nil, fault.Wrap(err, "the credential could not be looked up; try again")
	}
	if subtle.ConstantTimeCompare([]byte(cred.KeyHash), []byte(hash)) != 1 {
		return nil, fault.New(fault.Unauthenticated, "unknown key")
	}
	return &cred, nil
}

// Challenge is the WWW-Authenticate of a request to the resource at path
// ("/mcp", or "" for the JSON API) refused for want of a credential:
// with an authorization server (Tokens) it points at the resource's
// metadata; without one it is empty. invalid marks a credential sent and
// refused.
func (s *Service) Challenge(path string, invalid bool) string {
	if s.Tokens == nil {
		return ""
	}
	return s.Tokens.Challenge(path, invalid)
}

// TokenVerifier checks a bearer credential that is an OAuth access token.
// ok is false when it is not one (an API key, looked up as before).
type TokenVerifier interface {
	// Verify checks token for the resource at path ("/mcp", or "" for the
	// JSON API): a token issued for another resource is refused (RFC 8707).
	Verify(ctx context.Context, token, path string) (cred *countersign.Credential, ok bool, err error)
	// Challenge is the WWW-Authenticate of a refused request to the
	// resource at path ("/mcp", or "" for the JSON API): it points at the
	// resource's metadata. invalid marks a credential sent and refused.
	Challenge(path string, invalid bool) string
}

// Client is what a client says of itself: recorded as the credential's
// last client seen.
type Client struct {
	Name    string
	Version string
	// CanAsk is whether the client can ask a person (elicitation or MCP Apps).
	CanAsk bool
}

// Asker is what a confirmation records of c: its name and version cut as
// display.Clip cuts an agent's words (the page escapes what they hide);
// nil when c says nothing.
func (c *Client) Asker() *countersign.Asker {
	if c == nil || strings.TrimSpace(c.Name) == "" {
		return nil
	}
	return &countersign.Asker{Name: display.Clip(c.Name, display.AgentLimit), Version: display.Clip(c.Version, display.AgentLimit), CanAsk: c.CanAsk}
}

// lastClientEvery bounds how often a credential's last client is written,
// so calls do not write to the store each time.
const lastClientEvery = time.Minute

// RecordClient records the client last seen with cred, at most once a
// minute per credential (a client seen within the minute after the last
// write waits for the next one). A failure is logged, never returned: it
// must not fail the call.
func (s *Service) RecordClient(ctx context.Context, cred *countersign.Credential, c Client) {
	if c.Name == "" {
		return
	}
	now := s.now()
	if lc := cred.LastClient; lc != nil && (now.Sub(lc.SeenAt) < lastClientEvery ||
		lc.Name == c.Name && lc.Version == c.Version && lc.CanAsk == c.CanAsk && now.Sub(lc.SeenAt) < time.Hour) {
		return
	}
	seen := countersign.Client{Name: c.Name, Version: c.Version, CanAsk: c.CanAsk, SeenAt: now}
	if err := s.Store.SetLastClient(ctx, cred.ID, seen); err != nil {
		s.logger().WarnContext(ctx, "last client not recorded", "credential", cred.ID, "error", err)
		return
	}
	cred.LastClient = &seen
}

// Connections returns the connections cred may use, by name.
func (s *Service) Connections(cred *countersign.Credential) []string {
	if len(cred.Connections) > 0 {
		return append([]string(nil), cred.Connections...)
	}
	conns := []string{}
	for _, c := range s.Current().Policy.Connections() {
		conns = append(conns, c.Name)
	}
	return conns
}
