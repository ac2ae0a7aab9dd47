package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// PathCallback is where the identity provider sends the person back.
const PathCallback = "/oauth/callback"

const (
	flowCookie    = "countersign_signin_flow"
	sessionCookie = "countersign_person"
	// sessionTTL is how long a sign-in lasts on this browser.
	sessionTTL = 12 * time.Hour
	flowTTL    = 10 * time.Minute
)

// OIDCOptions configures an OIDCSignIn.
type OIDCOptions struct {
	// Issuer, ClientID and ClientSecret are the workspace's identity
	// provider and countersign's client there (settings.json sign_in).
	Issuer, ClientID, ClientSecret string
	// RedirectURL is <public URL>/oauth/callback, registered at the provider.
	RedirectURL string
	// Key signs the cookies (at least 32 bytes).
	Key []byte
	// HTTPClient reaches the provider; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sessions keeps the sessions, so that sign-out, or removing the
	// person's credential, ends one; nil leaves the sealed cookie alone
	// to decide (tests).
	Sessions SessionStore
}

// OIDCSignIn signs people in through the workspace's OpenID Connect
// provider (authorization code with PKCE; the ID token's signature,
// issuer, audience, expiry and nonce are checked by go-oidc). A person is
// the provider's issuer and the token's subject.
type OIDCSignIn struct {
	o        OIDCOptions
	config   oauth2.Config
	verifier *oidc.IDTokenVerifier
	provider *oidc.Provider
}

var _ SignIn = (*OIDCSignIn)(nil)

// NewOIDCSignIn discovers the provider (its /.well-known/openid-configuration).
func NewOIDCSignIn(ctx context.Context, o OIDCOptions) (*OIDCSignIn, error) {
	if len(o.Key) < 32 {
		return nil, errors.New("oidc sign-in: the key is shorter than 32 bytes")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx = oidc.ClientContext(ctx, o.HTTPClient)
	p, err := oidc.NewProvider(ctx, o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("sign_in: the identity provider %s could not be discovered: %w", o.Issuer, err)
	}
	return &OIDCSignIn{o: o,
		config:   oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: o.RedirectURL, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}},
		verifier: p.Verifier(&oidc.Config{ClientID: o.ClientID, Now: o.Now}),
		provider: p,
	}, nil
}

// flow is a sign-in in progress, sealed in a cookie of this browser.
type flow struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	ReturnTo string `json:"return_to"`
	Exp      int64  `json:"exp"`
}

// session is a signed-in person, sealed in a cookie.
type session struct {
	Person
	Exp int64 `json:"exp"`
}

// Person reads the session cookie.
func (s *OIDCSignIn) Person(r *http.Request) (Person, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return Person{}, false
	}
	var sess session
	if !openWith(s.o.Key, ck.Value, &sess) || s.o.Now().Unix() > sess.Exp || sess.Issuer != s.o.Issuer || sess.Subject == "" ||
		!sessionLive(r.Context(), s.o.Sessions, sess.Person, s.o.Now()) {
		return Person{}, false
	}
	return sess.Person, true
}

// Start sends the browser to the provider with a fresh state, nonce and
// PKCE verifier kept in a sealed cookie.
func (s *OIDCSignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	f := flow{State: random(""), Nonce: random(""), Verifier: oauth2.GenerateVerifier(), ReturnTo: returnTo, Exp: s.o.Now().Add(flowTTL).Unix()}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: sealWith(s.o.Key, f), Path: "/oauth/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: int(flowTTL.Seconds())})
	http.Redirect(w, r, s.config.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusSeeOther)
}

// ServeHTTP is the callback (and the sign-out, PathSignOut): the state
// must be this browser's, the code
// is exchanged with the verifier, and the ID token must verify with the
// flow's nonce. Then the person is signed in on this browser and sent
// back to the authorization request.
func (s *OIDCSignIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == PathSignOut {
		signOut(w, r, s.o.Key, s.o.Sessions, s.Person, sessionCookie, s.o.Now())
		return
	}
	if r.URL.Path != PathCallback || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	fail := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, messagePage("Sign-in failed", msg))
	}
	ck, err := r.Cookie(flowCookie)
	var f flow
	if err != nil || !openWith(s.o.Key, ck.Value, &f) || s.o.Now().Unix() > f.Exp {
		fail(http.StatusBadRequest, "The sign-in expired or was started in another browser; start again from the client.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: "/oauth/", MaxAge: -1})
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail(http.StatusForbidden, "The identity provider refused the sign-in: "+clip(e)+" "+clip(q.Get("error_description")))
		return
	}
	if !equal(q.Get("state"), f.State) {
		fail(http.StatusBadRequest, "The sign-in answer does not belong to this browser's sign-in; start again from the client.")
		return
	}
	ctx := oidc.ClientContext(r.Context(), s.o.HTTPClient)
	tok, err := s.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		fail(http.StatusBadGateway, "The identity provider did not accept the sign-in code; start again from the client.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := s.verifier.Verify(ctx, raw)
	if err != nil {
		fail(http.StatusBadGateway, "The identity provider's ID token did not verify: "+clip(err.Error()))
		return
	}
	if !equal(idt.Nonce, f.Nonce) {
		fail(http.StatusBadRequest, "The ID token is not for this sign-in (nonce); start again from the client.")
		return
	}
	var claims struct {
		Email         string   `json:"email"`
		EmailVerified bool     `json:"email_verified"`
		Name          string   `json:"name"`
		Groups        []string `json:"groups"`
	}
	_ = idt.Claims(&claims)
	if claims.Email == "" || claims.Name == "" {
		// Many providers give the email and profile scopes' claims only at
		// the UserInfo endpoint (OpenID Connect Core 5.4). Its answer
		// counts only for the ID token's subject (5.3.2).
		if ui, err := s.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil && equal(ui.Subject, idt.Subject) {
			var more struct {
				Name   string   `json:"name"`
				Groups []string `json:"groups"`
			}
			_ = ui.Claims(&more)
			if claims.Email == "" {
				// go-oidc reads email_verified given as a string too (Cognito's "true").
				claims.Email, claims.EmailVerified = ui.Email, ui.EmailVerified
			}
			if claims.Name == "" {
				claims.Name = more.Name
			}
			if claims.Groups == nil {
				claims.Groups = more.Groups
			}
		}
	}
	p, ok := boundedPerson(Person{Issuer: s.o.Issuer, Subject: idt.Subject, Email: claims.Email, EmailVerified: claims.EmailVerified, Name: claims.Name, Groups: claims.Groups})
	if !ok {
		fail(http.StatusBadGateway, "The identity provider named the person with a subject countersign cannot use (empty, or over 255 bytes).")
		return
	}
	now := s.o.Now()
	if err := startSession(r.Context(), s.o.Sessions, &p, now, now.Add(sessionTTL)); err != nil {
		fail(http.StatusInternalServerError, "The session could not be stored; start again from the client.")
		return
	}
	sess := session{p, now.Add(sessionTTL).Unix()}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sealWith(s.o.Key, sess), Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: int(sessionTTL.Seconds())})
	if !returnable(f.ReturnTo) {
		f.ReturnTo = PathAuthorize
	}
	http.Redirect(w, r, f.ReturnTo, http.StatusSeeOther)
}

// boundedPerson keeps what a provider said of a person within bounds, so
// that the session cookie stays small (under a browser's 4 KiB) and no
// claim floods a page. The subject is who they are: over 255 bytes (OpenID
// Connect Core 2's bound) or empty, the sign-in is refused. An e-mail over
// 254 bytes is dropped, never cut, so that no list of approvers matches a
// different address. The name is cut at a character boundary to 200
// bytes; groups are kept while each is at most 128 bytes and all of them
// 1 KiB, at most 50.
func boundedPerson(p Person) (Person, bool) {
	if p.Subject == "" || len(p.Subject) > 255 {
		return p, false
	}
	if len(p.Email) > 254 {
		p.Email, p.EmailVerified = "", false
	}
	if len(p.Name) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(p.Name[cut]) {
			cut--
		}
		p.Name = p.Name[:cut] + "…"
	}
	var groups []string
	total := 0
	for _, g := range p.Groups {
		if g == "" || len(g) > 128 || total+len(g) > 1024 || len(groups) == 50 {
			continue
		}
		groups, total = append(groups, g), total+len(g)
	}
	p.Groups = groups
	return p, true
}
