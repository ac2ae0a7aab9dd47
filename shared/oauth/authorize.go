package oauth

import (
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/webguard"
)

// authRequest is an authorization request that passed its checks, sealed
// into the consent form with the person it was shown to.
type authRequest struct {
	ClientID    string `json:"client_id"`
	ClientName  string `json:"client_name"`
	RedirectURI string `json:"redirect_uri"`
	State       string `json:"state,omitempty"`
	Challenge   string `json:"code_challenge"`
	Resource    string `json:"resource"`
	Scope       string `json:"scope"`
	Issuer      string `json:"person_iss"`
	Subject     string `json:"person_sub"`
	Exp         int64  `json:"exp"`
}

// authorize is the authorization endpoint. GET checks the request, sends
// a person who is not signed in to sign in, and shows the consent page;
// POST (the consent form) issues the code, or tells the client the person
// refused. The client and redirect URI are checked before anything is
// sent to the redirect URI: an unknown client or a redirect URI it did not
// register is answered here, never redirected to.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http://127.0.0.1:* http://localhost:* http://[::1]:*; frame-ancestors 'none'")
	switch r.Method {
	case http.MethodGet:
		s.authorizeGet(w, r)
	case http.MethodPost:
		s.authorizePost(w, r)
	default:
		s.page(w, http.StatusMethodNotAllowed, "Use GET (from the client) or the consent form.")
	}
}

func (s *Server) authorizeGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k, v := range q {
		if len(v) > 1 {
			s.page(w, http.StatusBadRequest, "The parameter "+k+" is given more than once.")
			return
		}
	}
	c, err := s.client(r.Context(), q.Get("client_id"))
	if err != nil {
		s.page(w, http.StatusBadRequest, "The client is refused: "+err.Error()+".")
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(c.RedirectURIs) == 1 {
		redirect = c.RedirectURIs[0]
	}
	if !redirectAllowed(c, redirect) {
		s.page(w, http.StatusBadRequest, "The redirect_uri is not one the client registered.")
		return
	}
	state := q.Get("state")
	// An invalid request is answered on a page, never redirected: the
	// redirect URI is only as trustworthy as whoever registered it (anyone,
	// RFC 7591), so an error sent there would make this server an open
	// redirector (RFC 9700 4.11.2). Only the person's own decision on the
	// consent page goes back to the client.
	fail := func(code, desc string) {
		s.page(w, http.StatusBadRequest, "The client's request is refused ("+code+"): "+desc+". Nothing was sent back to the client.")
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	case q.Get("code_challenge") == "" || len(q.Get("code_challenge")) != 43:
		fail("invalid_request", "PKCE is required: send code_challenge (S256, 43 characters)")
		return
	case q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	resource := s.resource(q.Get("resource"))
	if resource == "" {
		fail("invalid_target", "resource must be this server ("+strings.Join(s.resources(), " or ")+")")
		return
	}
	scope := q.Get("scope")
	for _, sc := range strings.Fields(scope) {
		if sc != Scope {
			fail("invalid_scope", "the only scope is "+Scope)
			return
		}
	}
	person, ok := s.o.SignIn.Person(r)
	if !ok {
		s.o.SignIn.Start(w, r, PathAuthorize+"?"+r.URL.RawQuery)
		return
	}
	req := authRequest{ClientID: c.ID, ClientName: c.Name, RedirectURI: redirect, State: state, Challenge: q.Get("code_challenge"),
		Resource: resource, Scope: Scope, Issuer: person.Issuer, Subject: person.Subject, Exp: s.now().Add(consentTTL).Unix()}
	// The client's name is its own claim (anyone may register any name),
	// shown as such; where the code goes is shown as the browser will send
	// it, the host in punycode.
	name, named := c.Name, c.Name != ""
	if !named {
		name = c.ID
	}
	origin, idn, bad := redirectOrigin(redirect)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	who := person.Email
	if who == "" {
		who = person.Subject
	}
	e := html.EscapeString
	claim := `<span id="client">` + display.HTML(name) + `</span>`
	if named {
		claim = `a client that calls itself ` + claim
	} else {
		claim = `the client ` + claim
	}
	originNote := ""
	switch {
	case bad:
		originNote = ` <strong>(not a valid host name)</strong>`
	case idn:
		originNote = ` <strong>(an internationalized name, shown as it is sent: compare it letter by letter)</strong>`
	}
	_, _ = io.WriteString(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Allow a client to act as you? — countersign</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36em; margin: 2em auto">
<h1>Allow `+claim+` to act as you?</h1>
<p>Signed in as <strong>`+display.HTML(who)+`</strong>.</p>
<p>The name is the client's own words, not checked. The client (<code>`+e(display.Text(c.ID))+`</code>) will receive the
answer at <code id="redirect">`+e(origin)+`</code>`+originNote+`. It asks for the scope
<code>countersign</code>: to list and call this gateway's tools at <code>`+e(resource)+`</code> as you, under your
credential's choice. Calls that need a person will ask you in that client.</p>
<form method="post"><input type="hidden" name="request" value="`+e(s.seal(req))+`">
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button></form>
</body></html>`)
}

func (s *Server) authorizePost(w http.ResponseWriter, r *http.Request) {
	if webguard.CrossSite(r) {
		s.page(w, http.StatusForbidden, "The consent form was sent from another site; nothing was allowed.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	var req authRequest
	if !s.open(r.PostFormValue("request"), &req) || s.now().Unix() > req.Exp {
		s.page(w, http.StatusBadRequest, "The consent form expired or was altered; start again from the client.")
		return
	}
	person, ok := s.o.SignIn.Person(r)
	if !ok || person.Issuer != req.Issuer || person.Subject != req.Subject {
		s.page(w, http.StatusForbidden, "The consent form was shown to someone else; start again from the client.")
		return
	}
	if r.PostFormValue("decision") != "allow" {
		s.redirect(w, r, req.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the person refused"}, "state": {req.State}})
		return
	}
	cred, err := s.userCredential(r.Context(), person)
	if errors.Is(err, errBoundElsewhere) {
		s.o.Logger.WarnContext(r.Context(), "oauth: sign-in with a bound user's e-mail from another account", "issuer", person.Issuer, "client_id", req.ClientID)
		s.page(w, http.StatusForbidden, "The workspace's user with your e-mail signs in with another account: sign in with that one, or ask the operator.")
		return
	}
	if errors.Is(err, errNotAUser) {
		s.o.Logger.WarnContext(r.Context(), "oauth: sign-in of someone who is not a user", "issuer", person.Issuer, "client_id", req.ClientID)
		s.page(w, http.StatusForbidden, "You ("+person.Email+") are not a user of this workspace: ask its operator to add you (credentials.json, \"user\").")
		return
	}
	if err != nil {
		s.o.Logger.ErrorContext(r.Context(), "oauth: user credential", "error", err)
		s.page(w, http.StatusInternalServerError, "Your credential could not be read or created; try again.")
		return
	}
	code := random(codePrefix)
	err = s.store.CreateOAuthCode(r.Context(), countersign.OAuthCode{Hash: hash(code), ClientID: req.ClientID, RedirectURI: req.RedirectURI,
		Challenge: req.Challenge, Resource: req.Resource, Scope: req.Scope, Credential: cred.ID, ExpiresAt: s.now().Add(codeTTL)})
	if err != nil {
		s.o.Logger.ErrorContext(r.Context(), "oauth: code not stored", "error", err)
		s.page(w, http.StatusInternalServerError, "The authorization could not be stored; try again.")
		return
	}
	s.o.Logger.InfoContext(r.Context(), "oauth: authorized", "credential", cred.ID, "client_id", req.ClientID)
	s.redirect(w, r, req.RedirectURI, url.Values{"code": {code}, "state": {req.State}})
}

// redirect sends the browser to the client's redirect URI with params
// and the issuer (RFC 9207); an empty state is left out.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, redirect string, params url.Values) {
	u, err := url.Parse(redirect)
	if err != nil {
		s.page(w, http.StatusBadRequest, "The redirect_uri is not a URL.")
		return
	}
	q := u.Query()
	for k, v := range params {
		if len(v) == 1 && v[0] != "" {
			q.Set(k, v[0])
		}
	}
	q.Set("iss", s.issuer())
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// page answers an error page for the person (never a redirect).
func (s *Server) page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, messagePage("Sign-in refused", msg))
}

// messagePage is a page of one alert. The pages are written by hand, their
// values escaped with html.EscapeString (text and double-quoted attributes
// only): html/template would make the linker keep every exported method
// of the deployed functions' binaries (it calls methods by name), which
// more than doubles the gateway function's size.
func messagePage(title, msg string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>` + html.EscapeString(title) + ` — countersign</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36em; margin: 2em auto"><h1>` + html.EscapeString(title) +
		`</h1><p role="alert">` + html.EscapeString(msg) + `</p></body></html>`
}
