package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/webguard"
)

// Store is what the server keeps: its clients, codes, tokens and grants,
// and the users' credentials.
type Store interface {
	store.OAuth
	// TakeQuota counts a use of a limit (store.Store's): new clients are counted.
	TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
	CreateCredential(ctx context.Context, c countersign.Credential) error
	// PutCredential binds a configured user to their subject.
	PutCredential(ctx context.Context, c countersign.Credential) error
}

// Token prefixes: an access token is told from an API key (cs_...) by
// its prefix alone, before any lookup.
const (
	AccessPrefix  = "csat_"
	refreshPrefix = "csrt_"
	codePrefix    = "csac_"
	secretPrefix  = "cscs_"
)

// Lifetimes when Options leaves them zero.
const (
	DefaultAccessTTL  = 15 * time.Minute
	DefaultRefreshTTL = 30 * 24 * time.Hour
	codeTTL           = time.Minute
	consentTTL        = 10 * time.Minute
)

// Scope is the one scope tokens carry: calling this server's tools and
// API as the person.
const Scope = "countersign"

// Options configures a Server; nil fields mean defaults.
type Options struct {
	// PublicURL returns the server's public base URL (settings.json
	// public_url): the issuer, and the base of the resources. Required.
	PublicURL func() string
	// SignIn signs people in. Required.
	SignIn SignIn
	// Users returns the configured credentials (the live configuration):
	// those with an e-mail are the users a person is matched to when they
	// sign in. nil (or none) lets anyone who signs in be a user.
	Users func() []countersign.Credential
	// SessionKey signs the consent form (at least 32 bytes). Required.
	SessionKey []byte
	// HTTPClient fetches Client ID Metadata Documents; nil means a client
	// with a 5 s timeout that follows no redirects and dials public
	// addresses only.
	HTTPClient *http.Client
	// AllowLoopbackDocuments lets a client_id be an http URL on a loopback
	// address, fetched there: for tests only.
	AllowLoopbackDocuments bool
	// NoClientDocuments turns Client ID Metadata Documents off: the
	// metadata says so and a URL client_id is refused, so clients register
	// (RFC 7591). For a deployment that cannot reach the internet, where
	// the documents (https://claude.ai/...) cannot be fetched.
	NoClientDocuments bool
	// ClientsPerAddress is how many new clients (registrations, or
	// metadata documents fetched for the first time) one address may add
	// in an hour; MaxUnusedClients how many clients added within a day are
	// kept. Zero means DefaultClientsPerAddress and DefaultMaxUnusedClients.
	ClientsPerAddress, MaxUnusedClients int
	// AccessTTL and RefreshTTL are the tokens' lifetimes; zero means
	// DefaultAccessTTL and DefaultRefreshTTL.
	AccessTTL, RefreshTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per grant event; nil discards. Tokens,
	// codes and secrets are never logged.
	Logger *slog.Logger
}

// Server is the authorization server and the resource server's token
// check. It is safe for concurrent use.
type Server struct {
	store Store
	o     Options
}

// New returns a Server over st.
func New(st Store, o Options) (*Server, error) {
	switch {
	case st == nil:
		return nil, errors.New("oauth: no store")
	case o.PublicURL == nil:
		return nil, errors.New("oauth: no public URL")
	case o.SignIn == nil:
		return nil, errors.New("oauth: no sign-in")
	case len(o.SessionKey) < 32:
		return nil, errors.New("oauth: the session key is shorter than 32 bytes")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = documentClient(o.AllowLoopbackDocuments)
	}
	if o.ClientsPerAddress <= 0 {
		o.ClientsPerAddress = DefaultClientsPerAddress
	}
	if o.MaxUnusedClients <= 0 {
		o.MaxUnusedClients = DefaultMaxUnusedClients
	}
	if o.AccessTTL <= 0 {
		o.AccessTTL = DefaultAccessTTL
	}
	if o.RefreshTTL <= 0 {
		o.RefreshTTL = DefaultRefreshTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{store: st, o: o}, nil
}

// Paths the server answers.
const (
	PathResourceMetadata = "/.well-known/oauth-protected-resource"
	PathServerMetadata   = "/.well-known/oauth-authorization-server"
	PathRegister         = "/oauth/register"
	PathAuthorize        = "/oauth/authorize"
	PathToken            = "/oauth/token"
	PathRevoke           = "/oauth/revoke"
)

// Serves reports whether path is one the server answers (for a router
// that sends it these requests).
func Serves(path string) bool {
	return strings.HasPrefix(path, PathResourceMetadata) || path == PathServerMetadata || strings.HasPrefix(path, "/oauth/")
}

// ServeHTTP routes the server's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// Every page (consent, sign-in, errors) and every answer: no sniffing,
	// no Referer carrying an authorization request, never framed.
	webguard.SetPageHeaders(w.Header())
	r = withAddr(r)
	p := r.URL.EscapedPath()
	switch {
	case p == PathResourceMetadata || p == PathResourceMetadata+"/mcp":
		s.resourceMetadata(w, r, strings.TrimPrefix(p, PathResourceMetadata))
	case p == PathServerMetadata:
		s.serverMetadata(w, r)
	case p == PathRegister:
		s.register(w, r)
	case p == PathAuthorize:
		s.authorize(w, r)
	case p == PathToken:
		s.token(w, r)
	case p == PathRevoke:
		s.revoke(w, r)
	default:
		if h, ok := s.o.SignIn.(http.Handler); ok && strings.HasPrefix(p, "/oauth/") {
			h.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+clip(p))
	}
}

func (s *Server) now() time.Time { return s.o.Now().UTC() }

// issuer is the public URL without a trailing slash.
func (s *Server) issuer() string { return strings.TrimRight(s.o.PublicURL(), "/") }

// Resources are the resource identifiers this server's tokens may be
// bound to: the JSON API (the public URL) and /mcp.
func (s *Server) resources() []string { return []string{s.issuer(), s.issuer() + "/mcp"} }

// resource normalizes a requested resource to one of Resources: absent
// means /mcp (what MCP clients call); anything else is refused ("").
func (s *Server) resource(req string) string {
	if req == "" {
		return s.issuer() + "/mcp"
	}
	req = strings.TrimRight(req, "/")
	for _, r := range s.resources() {
		if req == r {
			return r
		}
	}
	return ""
}

// Challenge is the WWW-Authenticate value of a request without a valid
// credential to the resource at path ("/mcp", or "" for the JSON API): it
// points the client at the Protected Resource Metadata (RFC 9728 §5.1).
// invalid marks a credential that was sent and refused.
func Challenge(publicURL, path string, invalid bool) string {
	meta := strings.TrimRight(publicURL, "/") + PathResourceMetadata + path
	if invalid {
		return fmt.Sprintf(`Bearer resource_metadata=%q, error="invalid_token", error_description="the token or key is not known, expired or revoked"`, meta)
	}
	return fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, meta, Scope)
}

// Challenge is the WWW-Authenticate of a refused request to this server's
// resource at path (calls.TokenVerifier).
func (s *Server) Challenge(path string, invalid bool) string {
	return Challenge(s.issuer(), path, invalid)
}

// random returns a new secret with the prefix: 32 random bytes, base64url.
func random(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// hash is the lowercase hex SHA-256 of a secret, as the store keeps it.
func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// equal compares two strings in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// seal signs v (JSON) with the session key.
func (s *Server) seal(v any) string { return sealWith(s.o.SessionKey, v) }

// open checks a sealed value and decodes it into v.
func (s *Server) open(sealed string, v any) bool { return openWith(s.o.SessionKey, sealed, v) }

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers an OAuth error body (RFC 6749 §5.2).
func writeError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// clip bounds a value echoed in an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
