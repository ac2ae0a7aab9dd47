package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/store"
)

// Registration bounds: every one fails closed with invalid_client_metadata.
const (
	maxRegistration  = 64 << 10
	maxRedirectURIs  = 10
	maxURILen        = 2000
	maxClientNameLen = 200
	// maxDocument is the largest Client ID Metadata Document read.
	maxDocument = 64 << 10
	// documentTTL is how long a fetched document is trusted before it is
	// fetched again.
	documentTTL = time.Hour
)

// register answers RFC 7591 dynamic client registration. Registration is
// open, as MCP clients expect, and bounded (limits.go); a client gets
// nothing by registering but the right to send a person to the sign-in
// page, and expires unless someone signs in with it.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST with a JSON body")
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be application/json")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistration+1))
	if err != nil || len(body) > maxRegistration {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body could not be read or is over 64 KiB")
		return
	}
	// Strict JSON first (no duplicate keys, bounded nesting): a client
	// that names redirect_uris twice must not get the second while a proxy
	// or log reader sees the first.
	var meta oauthex.ClientRegistrationMetadata
	if err := callbody.Valid(body, nil); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata: "+clip(err.Error()))
		return
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata: "+clip(err.Error()))
		return
	}
	if err := checkClient(meta.ClientName, meta.RedirectURIs); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
		return
	}
	for _, g := range meta.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			writeError(w, http.StatusBadRequest, "invalid_client_metadata", "grant type "+clip(g)+" is not supported (authorization_code, refresh_token)")
			return
		}
	}
	for _, rt := range meta.ResponseTypes {
		if rt != "code" {
			writeError(w, http.StatusBadRequest, "invalid_client_metadata", "response type "+clip(rt)+" is not supported (code)")
			return
		}
	}
	if err := s.admitClient(r.Context()); err != nil {
		s.writeAdmitError(w, r, err)
		return
	}
	c := countersign.OAuthClient{ID: "csc_" + random("")[:24], Name: meta.ClientName, RedirectURIs: meta.RedirectURIs, CreatedAt: s.now(),
		ExpiresAt: s.now().Add(unusedClientTTL)}
	resp := oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: meta, ClientIDIssuedAt: s.now()}
	switch meta.TokenEndpointAuthMethod {
	case "", "none":
		resp.TokenEndpointAuthMethod = "none"
	case "client_secret_post", "client_secret_basic":
		resp.ClientSecret = random(secretPrefix)
		c.SecretHash = hash(resp.ClientSecret)
	default:
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method "+clip(meta.TokenEndpointAuthMethod)+" is not supported (none, client_secret_post, client_secret_basic)")
		return
	}
	if len(meta.GrantTypes) == 0 {
		resp.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	resp.ResponseTypes = []string{"code"}
	resp.ClientID = c.ID
	if err := s.store.CreateOAuthClient(r.Context(), c); err != nil {
		s.o.Logger.ErrorContext(r.Context(), "oauth: client not stored", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the client could not be stored; try again")
		return
	}
	s.o.Logger.InfoContext(r.Context(), "oauth: client registered", "client_id", c.ID, "client_name", c.Name)
	writeJSON(w, http.StatusCreated, &resp)
}

// checkClient checks a client's name and redirect URIs: at least one, at
// most maxRedirectURIs, each an absolute https URL or an http URL on a
// loopback address (a native client, RFC 8252), without a fragment.
func checkClient(name string, uris []string) error {
	if len(name) > maxClientNameLen {
		return fmt.Errorf("client_name is over %d bytes", maxClientNameLen)
	}
	if len(uris) == 0 || len(uris) > maxRedirectURIs {
		return fmt.Errorf("redirect_uris must list 1 to %d URIs", maxRedirectURIs)
	}
	for _, u := range uris {
		if len(u) > maxURILen {
			return fmt.Errorf("a redirect URI is over %d bytes", maxURILen)
		}
		p, err := url.Parse(u)
		if err != nil || p.Host == "" || p.Fragment != "" || p.User != nil {
			return fmt.Errorf("redirect URI %q is not an absolute URL without a fragment", clip(u))
		}
		if p.Scheme != "https" && !(p.Scheme == "http" && isLoopbackHost(p.Hostname())) {
			return fmt.Errorf("redirect URI %q must be https, or http on a loopback address", clip(u))
		}
	}
	return nil
}

// isLoopbackHost is localhost or a loopback IP.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// redirectAllowed reports whether uri is one of the client's: the same
// string, or, for a loopback http URI, the same but for the port (the
// client picks a free port each time, RFC 8252 §7.3).
func redirectAllowed(c countersign.OAuthClient, uri string) bool {
	for _, reg := range c.RedirectURIs {
		if reg == uri {
			return true
		}
		a, err1 := url.Parse(reg)
		b, err2 := url.Parse(uri)
		if err1 == nil && err2 == nil && a.Scheme == "http" && b.Scheme == "http" && isLoopbackHost(a.Hostname()) &&
			a.Hostname() == b.Hostname() && a.Path == b.Path && a.RawQuery == b.RawQuery && b.Fragment == "" && b.User == nil {
			return true
		}
	}
	return false
}

// isDocumentID reports whether a client_id names a metadata document.
func isDocumentID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// client returns the client with the ID: a registered one, or the one a
// metadata document describes (fetched unless a fresh copy is stored).
func (s *Server) client(ctx context.Context, id string) (countersign.OAuthClient, error) {
	if id == "" {
		return countersign.OAuthClient{}, errors.New("client_id is missing")
	}
	c, err := s.store.OAuthClient(ctx, id)
	switch {
	case err == nil && (c.ExpiresAt.IsZero() || s.now().Before(c.ExpiresAt)):
		return c, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return countersign.OAuthClient{}, fmt.Errorf("the client could not be looked up: %w", err)
	case !isDocumentID(id):
		return countersign.OAuthClient{}, fmt.Errorf("client %q is not registered", clip(id))
	case s.o.NoClientDocuments:
		return countersign.OAuthClient{}, fmt.Errorf("client %q is a metadata document URL, which this server does not fetch: register the client (%s)", clip(id), PathRegister)
	}
	if errors.Is(err, store.ErrNotFound) { // a document fetched again when stale counts once
		if err := s.admitClient(ctx); err != nil {
			var tm *errTooManyClients
			if errors.As(err, &tm) {
				return countersign.OAuthClient{}, err
			}
			return countersign.OAuthClient{}, errors.New("the client could not be counted; try again")
		}
	}
	c, err = s.fetchDocument(ctx, id)
	if err != nil {
		return countersign.OAuthClient{}, err
	}
	if err := s.store.PutOAuthClient(ctx, c); err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("the client could not be stored: %w", err)
	}
	return c, nil
}

// document is what countersign reads of a Client ID Metadata Document.
type document struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// fetchDocument fetches and checks the metadata document at id: https
// with a path (http only through a client that allows loopback, in
// tests), JSON, at most maxDocument bytes, whose client_id is its URL,
// for a public client.
func (s *Server) fetchDocument(ctx context.Context, id string) (countersign.OAuthClient, error) {
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || (u.Path == "" || u.Path == "/") || len(id) > maxURILen {
		return countersign.OAuthClient{}, fmt.Errorf("client_id %q is not a metadata document URL (https, with a path)", clip(id))
	}
	if u.Scheme != "https" && !(s.o.AllowLoopbackDocuments && u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
		return countersign.OAuthClient{}, fmt.Errorf("client_id %q: a metadata document URL must be https", clip(id))
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("client_id %q: %w", clip(id), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.o.HTTPClient.Do(req)
	if err != nil {
		s.o.Logger.InfoContext(ctx, "oauth: metadata document not fetched", "client_id", clip(id), "error", err)
		return countersign.OAuthClient{}, errors.New(errDocumentFetch)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.o.Logger.InfoContext(ctx, "oauth: metadata document not fetched", "client_id", clip(id), "status", resp.StatusCode)
		return countersign.OAuthClient{}, errors.New(errDocumentFetch)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return countersign.OAuthClient{}, errors.New(errDocumentFetch)
	}
	if len(body) > maxDocument {
		return countersign.OAuthClient{}, fmt.Errorf("the client's metadata document is over %d bytes", maxDocument)
	}
	var d document
	if err := callbody.Valid(body, nil); err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("the client's metadata document is not strict JSON: %v", err)
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("the client's metadata document is not JSON: %v", err)
	}
	if d.ClientID != id {
		return countersign.OAuthClient{}, errors.New("the client's metadata document names another client_id")
	}
	if d.TokenEndpointAuthMethod != "" && d.TokenEndpointAuthMethod != "none" {
		return countersign.OAuthClient{}, errors.New("a metadata document client must be public (token_endpoint_auth_method none)")
	}
	if err := checkClient(d.ClientName, d.RedirectURIs); err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("the client's metadata document: %w", err)
	}
	now := s.now()
	return countersign.OAuthClient{ID: id, Name: d.ClientName, RedirectURIs: d.RedirectURIs, CreatedAt: now, ExpiresAt: now.Add(documentTTL)}, nil
}

// documentClient fetches metadata documents: 5 s, no redirects, and
// (unless loopback is allowed, for tests) to public unicast addresses
// only (publicUnicast), checked on the address actually dialed.
func documentClient(allowLoopback bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowLoopback {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !publicUnicast(ap.Addr()) {
			return errors.New("not a public unicast address")
		}
		return nil
	}}
	return &http.Client{
		Timeout:       5 * time.Second,
		Transport:     &http.Transport{DialContext: dialer.DialContext, Proxy: nil, TLSHandshakeTimeout: 5 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("redirects are not followed") },
	}
}
