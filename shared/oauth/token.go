package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"golang.org/x/oauth2"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// validVerifier says whether v is a PKCE code verifier (RFC 7636 §4.1):
// 43 to 128 of A-Z a-z 0-9 - . _ ~. A loop, not a regexp compiled at
// package init (its {43,128} cost every cold start 97 KB of allocations).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// tokenResponse is a successful token response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// form reads a POSTed form, refusing a parameter given twice.
func form(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST with a form body")
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the form could not be read (over 16 KiB?)")
		return nil, false
	}
	if len(r.URL.RawQuery) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", "parameters go in the body, never the query string")
		return nil, false
	}
	out := map[string]string{}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			writeError(w, http.StatusBadRequest, "invalid_request", "the parameter "+clip(k)+" is given more than once")
			return nil, false
		}
		out[k] = v[0]
	}
	return out, true
}

// clientForm begins a token or revocation request: its form (form) and
// its client, authenticated (authenticateClient). On a failure the answer
// is written and ok is false.
func (s *Server) clientForm(w http.ResponseWriter, r *http.Request) (c countersign.OAuthClient, f map[string]string, ok bool) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if f, ok = form(w, r); !ok {
		return c, nil, false
	}
	c, why, ok := s.authenticateClient(r.Context(), r, f)
	if !ok {
		writeError(w, http.StatusUnauthorized, "invalid_client", why)
		return c, nil, false
	}
	return c, f, true
}

// authenticateClient checks the client of a token or revocation request:
// a public client names itself; a confidential one proves its secret
// (client_secret_basic or client_secret_post), compared by hash in
// constant time.
func (s *Server) authenticateClient(ctx context.Context, r *http.Request, f map[string]string) (countersign.OAuthClient, string, bool) {
	id, secret := f["client_id"], f["client_secret"]
	if u, p, ok := r.BasicAuth(); ok {
		id, secret = u, p
	}
	c, err := s.client(ctx, id)
	if err != nil {
		return c, err.Error(), false
	}
	if c.SecretHash != "" && (secret == "" || !equal(hash(secret), c.SecretHash)) {
		return c, "the client secret is missing or wrong", false
	}
	return c, "", true
}

// token is the token endpoint.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	c, f, ok := s.clientForm(w, r)
	if !ok {
		return
	}
	switch f["grant_type"] {
	case "authorization_code":
		s.exchangeCode(w, r, c, f)
	case "refresh_token":
		s.refresh(w, r, c, f)
	default:
		writeError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// exchangeCode redeems a code once: the code is taken from the store
// before anything is checked, so a code presented twice (or a wrong
// verifier) never yields a token later.
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c countersign.OAuthClient, f map[string]string) {
	ctx := r.Context()
	code, err := s.store.TakeOAuthCode(ctx, hash(f["code"]))
	switch {
	case errors.Is(err, store.ErrNotFound):
		why := "the code is unknown or was used"
		if s.revokeSpentCode(ctx, hash(f["code"])) {
			why = "the code was already used: the tokens issued for it are revoked; sign in again"
		}
		writeError(w, http.StatusBadRequest, "invalid_grant", why)
		return
	case err != nil:
		s.o.Logger.ErrorContext(ctx, "oauth: code not read", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the code could not be read; try again")
		return
	}
	verifier := f["code_verifier"]
	switch {
	case s.now().After(code.ExpiresAt):
		writeError(w, http.StatusBadRequest, "invalid_grant", "the code expired")
		return
	case !equal(code.ClientID, c.ID):
		writeError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case !equal(code.RedirectURI, f["redirect_uri"]):
		writeError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	case !validVerifier(verifier) || !equal(oauth2.S256ChallengeFromVerifier(verifier), code.Challenge):
		writeError(w, http.StatusBadRequest, "invalid_grant", "the code_verifier does not match the code_challenge")
		return
	case f["resource"] != "" && s.resource(f["resource"]) != code.Resource:
		writeError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
		return
	}
	now := s.now()
	g := &countersign.OAuthGrant{ID: "grant_" + random("")[:24], ClientID: c.ID, ClientName: c.Name, Credential: code.Credential,
		Resource: code.Resource, Scope: code.Scope, CreatedAt: now, ExpiresAt: now.Add(s.o.RefreshTTL)}
	refresh := random(refreshPrefix)
	g.RefreshHash = hash(refresh)
	if err := s.store.CreateOAuthGrant(ctx, g); err != nil {
		s.o.Logger.ErrorContext(ctx, "oauth: grant not stored", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the grant could not be stored; try again")
		return
	}
	s.keepClient(ctx, c, g.ExpiresAt)
	// The spent code names its grant for as long as the grant's first
	// refresh token lives, so that a second presentation revokes it.
	err = s.store.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: code.Hash, Kind: spentCode, Grant: g.ID, ExpiresAt: g.ExpiresAt})
	if err != nil {
		s.o.Logger.ErrorContext(ctx, "oauth: spent code not stored", "error", err)
		s.revokeGrant(ctx, g.ID, "spent code not stored")
		writeError(w, http.StatusInternalServerError, "server_error", "the grant could not be stored; try again")
		return
	}
	s.issue(w, r, g, refresh)
}

// spentCode is the kind of the record a redeemed authorization code
// leaves among the tokens (under the code's hash, naming its grant): no
// token check accepts it (each wants its own kind).
const spentCode countersign.TokenKind = "spent_code"

// revokeSpentCode revokes the grant a code presented again was redeemed
// for (RFC 6749 4.1.2: the tokens issued for a code used twice should be
// revoked), and reports whether there was one.
func (s *Server) revokeSpentCode(ctx context.Context, codeHash string) bool {
	tok, err := s.store.OAuthToken(ctx, codeHash)
	if err != nil || tok.Kind != spentCode {
		return false
	}
	s.revokeGrant(ctx, tok.Grant, "authorization code reused")
	return true
}

// refresh rotates a refresh token. Only the grant's current refresh token
// is accepted, once: the grant moves to a new one in a conditional
// update. An earlier one of the same grant is a reuse (a copy was kept,
// or two parties hold it) and revokes the grant, with every token of it.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c countersign.OAuthClient, f map[string]string) {
	ctx := r.Context()
	presented := hash(f["refresh_token"])
	tok, err := s.store.OAuthToken(ctx, presented)
	if err != nil || tok.Kind != countersign.TokenRefresh {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.o.Logger.ErrorContext(ctx, "oauth: refresh token not read", "error", err)
			writeError(w, http.StatusInternalServerError, "server_error", "the refresh token could not be read; try again")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is unknown")
		return
	}
	for range 3 {
		g, err := s.store.OAuthGrant(ctx, tok.Grant)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_grant", "the grant is gone")
			return
		}
		now := s.now()
		switch {
		case !equal(g.ClientID, c.ID):
			writeError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
			return
		case g.Revoked || now.After(g.ExpiresAt) || now.After(tok.ExpiresAt):
			writeError(w, http.StatusBadRequest, "invalid_grant", "the grant was revoked or expired; sign in again")
			return
		case !equal(g.RefreshHash, presented):
			s.revokeGrant(ctx, g.ID, "refresh token reused")
			writeError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used: the grant is revoked; sign in again")
			return
		case f["resource"] != "" && s.resource(f["resource"]) != g.Resource:
			writeError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant's")
			return
		}
		refresh := random(refreshPrefix)
		g.RefreshHash, g.ExpiresAt = hash(refresh), now.Add(s.o.RefreshTTL)
		err = s.store.UpdateOAuthGrant(ctx, g)
		if errors.Is(err, store.ErrConflict) {
			continue // read again: a racing refresh with the same token is a reuse
		}
		if err != nil {
			s.o.Logger.ErrorContext(ctx, "oauth: grant not updated", "error", err)
			writeError(w, http.StatusInternalServerError, "server_error", "the grant could not be updated; try again")
			return
		}
		s.keepClient(ctx, c, g.ExpiresAt)
		s.issue(w, r, g, refresh)
		return
	}
	writeError(w, http.StatusInternalServerError, "server_error", "the grant kept changing; try again")
}

// issue stores the grant's new refresh token and a new access token and
// answers them.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, g *countersign.OAuthGrant, refresh string) {
	ctx := r.Context()
	now := s.now()
	access := random(AccessPrefix)
	err := s.store.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: hash(refresh), Kind: countersign.TokenRefresh, Grant: g.ID, ExpiresAt: g.ExpiresAt})
	if err == nil {
		err = s.store.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: hash(access), Kind: countersign.TokenAccess, Grant: g.ID, ExpiresAt: now.Add(s.o.AccessTTL)})
	}
	if err != nil {
		s.o.Logger.ErrorContext(ctx, "oauth: token not stored", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the token could not be stored; try again")
		return
	}
	s.o.Logger.InfoContext(ctx, "oauth: tokens issued", "credential", g.Credential, "client_id", g.ClientID, "grant", g.ID)
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(s.o.AccessTTL.Seconds()), RefreshToken: refresh, Scope: g.Scope})
}

// revokeGrant marks the grant revoked (retrying a racing update), so that
// none of its tokens is accepted again.
func (s *Server) revokeGrant(ctx context.Context, id, why string) {
	for range 5 {
		g, err := s.store.OAuthGrant(ctx, id)
		if err != nil || g.Revoked {
			return
		}
		g.Revoked = true
		if err := s.store.UpdateOAuthGrant(ctx, g); !errors.Is(err, store.ErrConflict) {
			s.o.Logger.InfoContext(ctx, "oauth: grant revoked", "grant", id, "credential", g.Credential, "why", why, "error", err)
			return
		}
	}
}

// revoke is RFC 7009 revocation: an access token is deleted, a refresh
// token revokes its grant. An unknown token, or one of another client,
// is answered 200 as the RFC asks, and nothing changes.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	c, f, ok := s.clientForm(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	h := hash(f["token"])
	tok, err := s.store.OAuthToken(ctx, h)
	if err == nil {
		if g, gerr := s.store.OAuthGrant(ctx, tok.Grant); gerr == nil && equal(g.ClientID, c.ID) {
			switch tok.Kind {
			case countersign.TokenRefresh:
				s.revokeGrant(ctx, g.ID, "revoked by the client")
			case countersign.TokenAccess:
				_ = s.store.DeleteOAuthToken(ctx, h)
			}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the token could not be read; try again")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Verify is the resource server's check of a bearer credential. ok is
// false when token is not an access token (it may be an API key, which
// the caller checks); otherwise the token is looked up by its hash on
// every call, and must be unexpired, of a grant neither revoked nor
// expired, bound to the resource at path ("/mcp", or "" for the JSON
// API; its audience, RFC 8707), and
// of a user credential that still exists. A refused token is a
// fault.Unauthenticated error; a store that cannot answer is internal.
func (s *Server) Verify(ctx context.Context, token, path string) (_ *countersign.Credential, ok bool, _ error) {
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, AccessPrefix) {
		return nil, false, nil
	}
	refused := func(why string) (*countersign.Credential, bool, error) {
		return nil, true, fault.New(fault.Unauthenticated, why)
	}
	h := hash(token)
	tok, err := s.store.OAuthToken(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return refused("unknown or revoked access token")
	}
	if err != nil {
		return nil, true, fault.Wrap(err, "the access token could not be looked up; try again")
	}
	now := s.now()
	if !equal(tok.Hash, h) || tok.Kind != countersign.TokenAccess || now.After(tok.ExpiresAt) {
		return refused("the access token expired; refresh it")
	}
	g, err := s.store.OAuthGrant(ctx, tok.Grant)
	if errors.Is(err, store.ErrNotFound) {
		return refused("the access token's grant is gone")
	}
	if err != nil {
		return nil, true, fault.Wrap(err, "the grant could not be looked up; try again")
	}
	if g.Revoked || now.After(g.ExpiresAt) {
		return refused("the access token was revoked; sign in again")
	}
	if want := s.issuer() + path; g.Resource != want {
		return refused("the access token was issued for another resource (" + clip(g.Resource) + "), not " + want + ": request a token with resource=" + want)
	}
	cred, err := s.store.GetCredential(ctx, g.Credential)
	if errors.Is(err, store.ErrNotFound) {
		return refused("the access token's user was removed")
	}
	if err != nil {
		return nil, true, fault.Wrap(err, "the credential could not be looked up; try again")
	}
	if !cred.IsPerson() {
		return refused("the access token's credential is not a user")
	}
	return &cred, true, nil
}
