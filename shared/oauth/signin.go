package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/webguard"
)

// Person is someone signed in: the identity provider (Issuer) and their
// subject there identify them.
type Person struct {
	Issuer  string `json:"iss"`
	Subject string `json:"sub"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	// EmailVerified is set when the identity provider vouches for Email
	// (email_verified); only then is the person matched to a configured
	// user by e-mail.
	EmailVerified bool `json:"email_verified,omitempty"`
	// Groups are the identity provider's groups claim, when it gives one
	// (approval.approvers "group:<name>").
	Groups []string `json:"groups,omitempty"`
	// Session is this sign-in's random id, new at each sign-in: the
	// approval form's CSRF token is bound to it.
	Session string `json:"sid,omitempty"`
}

// SignIn signs people in for the authorize endpoint.
type SignIn interface {
	// Person returns who is signed in on this browser, if anyone.
	Person(r *http.Request) (Person, bool)
	// Start sends the browser to sign in, then back to returnTo (a path
	// on this server).
	Start(w http.ResponseWriter, r *http.Request, returnTo string)
}

// CredentialID is the ID of the user credential of the person
// (issuer, subject): "user_" and 24 hex digits of their SHA-256.
func CredentialID(p Person) string {
	sum := sha256.Sum256([]byte(p.Issuer + "\n" + p.Subject))
	return "user_" + hex.EncodeToString(sum[:12])
}

// errNotAUser is the refusal of a person the configuration does not list.
var errNotAUser = errors.New("not a user of this workspace")

// errBoundElsewhere is the refusal of a person whose verified e-mail is a
// configured user's already bound to another subject.
var errBoundElsewhere = errors.New("this workspace's user with that e-mail is bound to another account")

// userCredential returns the person's credential. A person is their
// issuer and subject; an e-mail only finds a configured user the first
// time:
//   - A configured user (credentials.json "user") is bound to the
//     (issuer, subject) of their first sign-in whose e-mail the identity
//     provider verified and which matches theirs (policy.SameEmail); the
//     binding is stored, and every later sign-in must be that subject at
//     that issuer: the same e-mail from another account is refused
//     (errBoundElsewhere), and a changed e-mail on the bound account is
//     still them.
//   - When the configuration lists users, nobody else is let in
//     (errNotAUser). When it lists none, the first sign-in creates the
//     person's credential: a user created for chat and coding agents
//     starts on Ask the person (origin chat). Its e-mail is kept only when
//     the provider verified it.
//
// A user has no key: its KeyHash is empty, so no key reaches it, only an
// access token.
func (s *Server) userCredential(ctx context.Context, p Person) (countersign.Credential, error) {
	c, err := s.ConfiguredUser(ctx, p)
	if !errors.Is(err, errNoUsers) {
		return c, err
	}
	id := CredentialID(p)
	c, err = s.store.GetCredential(ctx, id)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return countersign.Credential{}, err
	}
	c = countersign.Credential{ID: id, Choice: countersign.AskPerson, Origin: countersign.OriginChat, Issuer: p.Issuer, Subject: p.Subject}
	if p.EmailVerified {
		// An unverified e-mail is anybody's: it never names the user.
		c.Email = p.Email
	}
	err = s.store.CreateCredential(ctx, c)
	if errors.Is(err, store.ErrConflict) { // a concurrent first sign-in created it
		return s.store.GetCredential(ctx, id)
	}
	return c, err
}

// errNoUsers is ConfiguredUser's answer when the configuration lists no users.
var errNoUsers = errors.New("the configuration lists no users")

// NotAUser reports whether err is ConfiguredUser's refusal of a person who
// is none of the configured users (or bound to another account), rather
// than a store's failure.
func NotAUser(err error) bool {
	return errors.Is(err, errNotAUser) || errors.Is(err, errBoundElsewhere) || errors.Is(err, errNoUsers)
}

// ConfiguredUser returns the configured user (credentials.json "user")
// the person is, binding them at their first verified sign-in as
// userCredential does; it never creates a credential. The operator page
// asks it who a signed-in person is.
func (s *Server) ConfiguredUser(ctx context.Context, p Person) (countersign.Credential, error) {
	var users []countersign.Credential
	if s.o.Users != nil {
		for _, u := range s.o.Users() {
			if u.Email != "" {
				users = append(users, u)
			}
		}
	}
	var byEmail []countersign.Credential
	for _, u := range users {
		stored, err := s.store.GetCredential(ctx, u.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // not seeded (yet): nobody signs in as it
		}
		if err != nil {
			return countersign.Credential{}, err
		}
		if stored.Subject != "" {
			if stored.Issuer == p.Issuer && stored.Subject == p.Subject {
				return stored, nil
			}
			continue
		}
		if p.EmailVerified && policy.SameEmail(stored.Email, p.Email) {
			byEmail = append(byEmail, stored)
		}
	}
	if len(byEmail) > 0 {
		return s.bindUser(ctx, byEmail[0], p)
	}
	if len(users) > 0 {
		for _, u := range users {
			if p.EmailVerified && policy.SameEmail(u.Email, p.Email) {
				return countersign.Credential{}, errBoundElsewhere
			}
		}
		return countersign.Credential{}, errNotAUser
	}
	return countersign.Credential{}, errNoUsers
}

// bindUser binds configured user u to the person p, at p's first verified
// sign-in as them, and returns the bound credential. Of two first
// sign-ins at once with the same e-mail from different accounts, the
// binding read back after the write decides: the other is refused.
func (s *Server) bindUser(ctx context.Context, u countersign.Credential, p Person) (countersign.Credential, error) {
	u.Issuer, u.Subject = p.Issuer, p.Subject
	if err := s.store.PutCredential(ctx, u); err != nil {
		return countersign.Credential{}, err
	}
	got, err := s.store.GetCredential(ctx, u.ID)
	if err != nil {
		return countersign.Credential{}, err
	}
	if got.Issuer != p.Issuer || got.Subject != p.Subject {
		return countersign.Credential{}, errBoundElsewhere
	}
	return got, nil
}

// PathApprove is the approval pages' prefix: approvers sign in with the
// same sign-in (approvers.sign_in) and come back to the page. The session
// cookie is therefore scoped to "/", not "/oauth/"; nothing else reads it
// (the APIs take bearer tokens only).
const PathApprove = "/approve/"

// PathPasskeys is the page where people signed in register their
// passkeys; a sign-in may come back to it.
const PathPasskeys = "/account/passkeys"

// returnable reports a path a sign-in may send the browser back to: the
// authorize endpoint with its request, an approval page, or the operator
// page. All are paths on this server (a leading "//" would name another host).
func returnable(p string) bool {
	if strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return false
	}
	return strings.HasPrefix(p, PathAuthorize+"?") || strings.HasPrefix(p, PathApprove) || p == PathPasskeys || p == PathOperator
}

// PathOperator is the operator page: operators who are people (a
// configured user with role operator) sign in with the same sign-in and
// come back to it.
const PathOperator = "/operator"

// DevSignIn is the development sign-in page of the local stack with no
// identity provider configured: anyone on this machine signs in as the
// person they type. It answers only on loopback listeners and to
// loopback peers, and every page says it is for development.
type DevSignIn struct {
	// Issuer is the issuer its people get ("<public URL>/oauth/dev-signin").
	Issuer string
	// Key signs the session cookie (at least 32 bytes).
	Key []byte
	// People are offered as one-click choices (e-mails); any e-mail may be typed.
	People []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sessions keeps the sessions, so that sign-out ends one; nil leaves
	// the sealed cookie alone to decide (tests).
	Sessions SessionStore
}

// PathDevSignIn is the development sign-in page.
const PathDevSignIn = "/oauth/dev-signin"

const devCookie = "countersign_dev_person"

var _ SignIn = (*DevSignIn)(nil)

func (d *DevSignIn) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Person reads the signed session cookie.
func (d *DevSignIn) Person(r *http.Request) (Person, bool) {
	ck, err := r.Cookie(devCookie)
	if err != nil {
		return Person{}, false
	}
	var sess struct {
		Person
		Exp int64 `json:"exp"`
	}
	if !openWith(d.Key, ck.Value, &sess) || d.now().Unix() > sess.Exp || sess.Issuer != d.Issuer ||
		!sessionLive(r.Context(), d.Sessions, sess.Person, d.now()) {
		return Person{}, false
	}
	return sess.Person, true
}

// Start sends the browser to the sign-in page.
func (d *DevSignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, PathDevSignIn+"?return_to="+url.QueryEscape(returnTo), http.StatusSeeOther)
}

// ServeHTTP serves the sign-in page (GET) and signs in (POST).
func (d *DevSignIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != PathDevSignIn && r.URL.Path != PathSignOut {
		http.NotFound(w, r)
		return
	}
	if !loopbackRequest(r) || webguard.ForeignHost(r, d.Issuer) != "" {
		http.Error(w, "the development sign-in answers only on loopback, to a Host that names this machine", http.StatusForbidden)
		return
	}
	if r.URL.Path == PathSignOut {
		signOut(w, r, d.Key, d.Sessions, d.Person, devCookie, d.now())
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	returnTo := r.FormValue("return_to")
	if !returnable(returnTo) {
		http.Error(w, "return_to must be this server's authorize URL or an approval page", http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodGet:
		d.page(w, http.StatusOK, d.newForm(w, r, returnTo), returnTo, "")
	case http.MethodPost:
		if webguard.CrossSite(r) || !d.formOK(r, returnTo) {
			d.page(w, http.StatusForbidden, d.newForm(w, r, returnTo), returnTo, "The form expired or was not sent from this page; sign in again.")
			return
		}
		email := strings.TrimSpace(r.PostFormValue("email"))
		if len(email) > 200 || !strings.Contains(email, "@") {
			d.page(w, http.StatusBadRequest, d.newForm(w, r, returnTo), returnTo, "Type an e-mail address.")
			return
		}
		now := d.now()
		p := Person{Issuer: d.Issuer, Subject: strings.ToLower(email), Email: email, EmailVerified: true}
		if err := startSession(r.Context(), d.Sessions, &p, now, now.Add(sessionTTL)); err != nil {
			d.page(w, http.StatusInternalServerError, d.newForm(w, r, returnTo), returnTo, "The session could not be stored; try again.")
			return
		}
		sess := struct {
			Person
			Exp int64 `json:"exp"`
		}{p, now.Add(sessionTTL).Unix()}
		// The form's nonce is spent: its token signs nobody in again.
		http.SetCookie(w, &http.Cookie{Name: devFormCookie, Value: "", Path: PathDevSignIn, HttpOnly: true, MaxAge: -1})
		http.SetCookie(w, &http.Cookie{Name: devCookie, Value: sealWith(d.Key, sess), Path: "/", HttpOnly: true, Secure: r.TLS != nil,
			SameSite: http.SameSiteLaxMode, MaxAge: int(sessionTTL.Seconds())})
		http.Redirect(w, r, returnTo, http.StatusSeeOther)
	default:
		http.Error(w, "use GET or POST", http.StatusMethodNotAllowed)
	}
}

func (d *DevSignIn) page(w http.ResponseWriter, status int, csrf, returnTo, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Development sign-in — countersign</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36em; margin: 2em auto">
<p role="alert" style="background:#fde68a;padding:.5em 1em"><strong>Development sign-in.</strong>
No identity provider is configured, so anyone on this machine may sign in as anyone. This page answers only on loopback; never expose it.</p>
<h1>Sign in to countersign</h1>
`)
	if msg != "" {
		b.WriteString(`<p role="alert" style="color:#b91c1c">` + e(msg) + "</p>\n")
	}
	hidden := `<input type="hidden" name="csrf" value="` + e(csrf) + `"><input type="hidden" name="return_to" value="` + e(returnTo) + `">`
	for _, p := range d.People {
		b.WriteString(`<form method="post">` + hidden + `<input type="hidden" name="email" value="` + e(p) + `"><button type="submit" data-email="` +
			e(p) + `">Sign in as ` + e(p) + "</button></form>\n")
	}
	b.WriteString(`<form method="post">` + hidden + `
<label>E-mail <input type="email" name="email" id="email" required maxlength="200"></label> <button type="submit" id="signin">Sign in</button></form>
</body></html>`)
	_, _ = io.WriteString(w, b.String())
}

// The sign-in form's CSRF token is bound to this browser: GET sets a
// random nonce in a cookie of the page's own (SameSite Strict, 10
// minutes), and the token is an HMAC of the nonce, the return URL and
// its expiry. A form posted from another site has neither the victim's
// nonce nor a token for it (login CSRF); a successful sign-in clears the
// nonce, so a token signs in once.
const (
	devFormCookie = "countersign_dev_form"
	devFormTTL    = 10 * time.Minute
)

// newForm sets a fresh nonce cookie and returns the form's token for it.
func (d *DevSignIn) newForm(w http.ResponseWriter, r *http.Request, returnTo string) string {
	nonce := random("")
	http.SetCookie(w, &http.Cookie{Name: devFormCookie, Value: nonce, Path: PathDevSignIn, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(devFormTTL.Seconds())})
	return webguard.Token(d.Key, "dev-signin", nonce+"\n"+returnTo, d.now().Add(devFormTTL))
}

// formOK checks the posted token against this browser's nonce cookie.
func (d *DevSignIn) formOK(r *http.Request, returnTo string) bool {
	ck, err := r.Cookie(devFormCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	return webguard.TokenOK(d.Key, "dev-signin", ck.Value+"\n"+returnTo, r.PostFormValue("csrf"), d.now())
}

// loopbackRequest reports a request from a loopback peer to a loopback listener.
func loopbackRequest(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil {
		return false
	}
	return loopbackAddr(la.String()) && loopbackAddr(r.RemoteAddr)
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewKey returns 32 random bytes for a session key.
func NewKey() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

func sealWith(key []byte, v any) string {
	b, _ := json.Marshal(v)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func openWith(key []byte, sealed string, v any) bool {
	body, mac, ok := strings.Cut(sealed, ".")
	if !ok {
		return false
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(mac)
	if err1 != nil || err2 != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return hmac.Equal(got, m.Sum(nil)) && json.Unmarshal(b, v) == nil
}
