package awsenv

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
)

// Labels of the keys derived from the link signing key: each purpose has
// its own key, so no key signs two kinds of thing.
const (
	labelOAuthSession = "countersign oauth session v1"
	labelOAuthSignIn  = "countersign oauth sign-in v1"
)

// deriveKey derives the 32-byte key of one purpose (label) from the link
// signing key with HKDF-SHA256 (RFC 5869); the key id salts it, so a
// rotated signing key rotates every derived key with it.
func deriveKey(k links.Key, label string) ([]byte, error) {
	return hkdf.Key(sha256.New, k.Secret, []byte(k.ID), label, 32)
}

// withOAuth makes d the OAuth authorization server of its surfaces and
// the resource server's token check (d.Calls.Tokens): access tokens work
// on /v1 and /mcp, and a 401 there points at the resource's metadata.
// Every instance derives the same session and sign-in keys from the link
// signing key, so a consent form or sign-in cookie one instance sealed
// opens on any other. People sign in through settings.json's sign_in
// provider, else the template's (COUNTERSIGN_SIGNIN_ISSUER and
// COUNTERSIGN_SIGNIN_CLIENT_ID: the stack's Cognito user pool or the
// SignInIssuer parameter); with neither, the authorize endpoint says there
// is no sign-in. The development sign-in page is never served here.
func (d *Deployment) withOAuth(st oauth.Store, k links.Key) error {
	session, err := deriveKey(k, labelOAuthSession)
	if err != nil {
		return err
	}
	signKey, err := deriveKey(k, labelOAuthSignIn)
	if err != nil {
		return err
	}
	sessions, ok := st.(oauth.SessionStore)
	if !ok {
		return errors.New("oauth: the store keeps no sessions")
	}
	var si oauth.SignIn = noSignIn{}
	if d.signIn != nil {
		si = d.signIn(d, signKey, sessions)
	}
	d.OAuth, err = oauth.New(st, oauth.Options{
		PublicURL:  func() string { return d.LinkBase() },
		SignIn:     si,
		Users:      func() []countersign.Credential { return d.Live().Credentials },
		SessionKey: session,
		Logger:     d.Logger,
	})
	if err != nil {
		return err
	}
	d.Calls.Tokens = tokenCheck{verify: d.OAuth.Verify, challenge: d.OAuth.Challenge}
	d.SignIn = si
	return nil
}

// tokenCheck is the OAuth server as the resource server's token check
// (calls.TokenVerifier), its two methods and no other: the server itself
// held in that interface (or in a type that is) would keep every method an
// interface elsewhere names, ServeHTTP and so its pages among them, in a
// function that serves none (the scripts function).
type tokenCheck struct {
	verify    func(ctx context.Context, token, path string) (*countersign.Credential, bool, error)
	challenge func(path string, invalid bool) string
}

func (t tokenCheck) Verify(ctx context.Context, token, path string) (*countersign.Credential, bool, error) {
	return t.verify(ctx, token, path)
}

func (t tokenCheck) Challenge(path string, invalid bool) string { return t.challenge(path, invalid) }

// Approver is the approval page of the deployment: approvers sign in
// through its provider (d.SignIn, with NeedOAuth), and approvers.sign_in
// defaults to "required" when the stack names a provider (the Cognito
// user pool or the SignInIssuer parameter, COUNTERSIGN_SIGNIN_ISSUER), as
// it does when settings.json's sign_in names one.
func (d *Deployment) Approver() *httpapi.Approver {
	a := d.App.Approver()
	a.SignIn = d.SignIn
	a.Provider = d.Env.SignInIssuer != ""
	return a
}

// ApproverHTTP is the approve function's handler: people's passkeys
// (/account/passkeys and below) and the approval page (/approve/<id>),
// both with the deployment's sign-in.
func (d *Deployment) ApproverHTTP() http.Handler {
	a := d.Approver()
	p := d.App.PasskeysPage()
	p.SignIn = d.SignIn
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpapi.ServesPasskeys(r.URL.EscapedPath()) {
			p.ServeHTTP(w, r)
			return
		}
		a.ServeHTTP(w, r)
	})
}

// Operator is the operator surface of the deployment: operators who are
// people (a configured user with role operator) sign in through its
// provider (d.SignIn, with NeedOAuth), as approvers do; keys work as before.
func (d *Deployment) Operator() *httpapi.Operator {
	o := d.App.Operator()
	if d.OAuth != nil {
		o.SignIn, o.People = d.SignIn, d.OAuth
	}
	return o
}

// HTTP is the gateway function's handler: the OAuth server's paths
// (oauth.Serves: the metadata documents, /oauth/...) go to the OAuth
// server, every other to the agents' surface.
func (d *Deployment) HTTP() http.Handler {
	g := d.Gateway()
	if d.OAuth == nil {
		return g
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if oauth.Serves(r.URL.EscapedPath()) {
			d.OAuth.ServeHTTP(w, r)
			return
		}
		g.ServeHTTP(w, r)
	})
}

// WithSignIn lets people sign in through the deployment's provider
// (with NeedOAuth): the authorization server's authorize endpoint (the
// gateway function), approvers.sign_in (approve) and operators who are
// people (operator). The scripts function, which only checks access
// tokens, does not ask for it, so it links no OpenID Connect client (0.33
// MB of its bootstrap): its sign-in signs nobody in (noSignIn).
func WithSignIn() Option {
	return func(o *options) { o.signIn = newDeployedSignIn }
}

func newDeployedSignIn(d *Deployment, key []byte, sessions oauth.SessionStore) oauth.SignIn {
	return &deployedSignIn{d: d, key: key, sessions: sessions}
}

// noSignIn is the sign-in of a deployment without WithSignIn: nobody is
// signed in, and a sign-in asked of it is not found here (API Gateway
// routes none of the OAuth server's pages to such a function).
type noSignIn struct{}

func (noSignIn) Person(*http.Request) (oauth.Person, bool) { return oauth.Person{}, false }

func (noSignIn) Start(w http.ResponseWriter, r *http.Request, _ string) {
	http.Error(w, "Sign-in is not served by this function.", http.StatusNotFound)
}

// provider is one identity provider countersign is a client of.
type provider struct{ issuer, clientID, secret string }

// deployedSignIn signs people in through the provider in force: settings.json
// sign_in when configured (it may change with the configuration), else
// the template's. The provider is discovered at first use, not at start
// (a cold start waits for no identity provider), and again after a failed
// discovery or a change of provider.
type deployedSignIn struct {
	d        *Deployment
	key      []byte
	sessions oauth.SessionStore

	mu   sync.Mutex
	prov provider
	oidc *oauth.OIDCSignIn
}

var _ oauth.SignIn = (*deployedSignIn)(nil)

func (s *deployedSignIn) provider() provider {
	if si := s.d.Live().Settings.SignIn; si.Configured() {
		return provider{si.Issuer, si.ClientID, si.ClientSecret}
	}
	return provider{s.d.Env.SignInIssuer, s.d.Env.SignInClientID, ""}
}

// Available reports whether there is a provider to sign in at: the
// approval page offers sign-in only then (httpapi.Approver).
func (s *deployedSignIn) Available() bool { return s.provider().issuer != "" }

// current returns the provider's sign-in, discovering it if need be.
func (s *deployedSignIn) current(ctx context.Context) (*oauth.OIDCSignIn, error) {
	p := s.provider()
	if p.issuer == "" {
		return nil, errNoSignIn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.oidc != nil && s.prov == p {
		return s.oidc, nil
	}
	o, err := oauth.NewOIDCSignIn(ctx, oauth.OIDCOptions{Issuer: p.issuer, ClientID: p.clientID, ClientSecret: p.secret,
		RedirectURL: strings.TrimRight(s.d.LinkBase(), "/") + oauth.PathCallback, Key: s.key, Sessions: s.sessions})
	if err != nil {
		return nil, err
	}
	s.oidc, s.prov = o, p
	return o, nil
}

var errNoSignIn = errors.New("no identity provider: settings.json has no sign_in and the stack none (deploy with the SignInIssuer parameter empty for a Cognito user pool, or give one)")

func (s *deployedSignIn) Person(r *http.Request) (oauth.Person, bool) {
	o, err := s.current(r.Context())
	if err != nil {
		return oauth.Person{}, false
	}
	return o.Person(r)
}

func (s *deployedSignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	o, err := s.current(r.Context())
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	o.Start(w, r, returnTo)
}

// ServeHTTP answers the provider's callback (/oauth/callback) and the
// sign-out (/oauth/signout); every other /oauth/ path, the development
// sign-in page's among them, is not found.
func (s *deployedSignIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != oauth.PathCallback && r.URL.Path != oauth.PathSignOut {
		http.NotFound(w, r)
		return
	}
	o, err := s.current(r.Context())
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	o.ServeHTTP(w, r)
}

func (s *deployedSignIn) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.d.Logger.ErrorContext(r.Context(), "sign-in unavailable", "error", err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(w, "Sign-in is unavailable:", err)
}
