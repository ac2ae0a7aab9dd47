package oauth

import (
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"time"

	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/webguard"
)

// A sign-in is a session the store keeps (store.Sessions), not only a
// sealed cookie: the cookie names the person and a random session id, the
// store holds the id's hash until the session expires. A session ends on
// sign-out (PathSignOut), when the person's credential is removed (the
// store ends their sessions), or at its expiry; a copied cookie works no
// longer than the session does.

// SessionStore keeps people's sessions (store.Sessions).
type SessionStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	Session(ctx context.Context, person, id string) (store.Session, error)
	EndSession(ctx context.Context, person, id string) error
}

// PathSignOut is where a person signs out: GET shows the form, POST ends
// the session.
const PathSignOut = "/oauth/signout"

// startSession gives p a new session id and, with a store, stores the
// session until exp.
func startSession(ctx context.Context, st SessionStore, p *Person, now, exp time.Time) error {
	p.Session = random("")
	if st == nil {
		return nil
	}
	return st.CreateSession(ctx, store.Session{Person: store.PersonKey(p.Issuer, p.Subject), ID: hash(p.Session), CreatedAt: now, ExpiresAt: exp})
}

// sessionLive reports whether p's session is still on: without a store
// (tests) the sealed cookie alone decides; with one, the session must be
// stored and unexpired. A store that cannot answer signs nobody in.
func sessionLive(ctx context.Context, st SessionStore, p Person, now time.Time) bool {
	if st == nil {
		return true
	}
	if p.Session == "" {
		return false // a cookie from before sessions were stored: sign in again
	}
	s, err := st.Session(ctx, store.PersonKey(p.Issuer, p.Subject), hash(p.Session))
	return err == nil && now.Before(s.ExpiresAt)
}

// signOut serves PathSignOut for a sign-in whose person is who(r) and
// whose session cookie is cookie: GET shows a form whose token is bound
// to the session; POST, from this site with that token, ends the session
// in the store and clears the cookie. Either way, nobody signed in is
// told so.
func signOut(w http.ResponseWriter, r *http.Request, key []byte, st SessionStore, who func(*http.Request) (Person, bool), cookie string, now time.Time) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	write := func(status int, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	p, ok := who(r)
	if !ok {
		http.SetCookie(w, &http.Cookie{Name: cookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1})
		write(http.StatusOK, messagePage("Signed out", "Nobody is signed in on this browser."))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		tok := webguard.Token(key, "signout", p.Session, now.Add(time.Hour))
		label := p.Email
		if label == "" {
			label = p.Subject
		}
		write(http.StatusOK, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign out — countersign</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36em; margin: 2em auto"><h1>Sign out</h1>
<p>Signed in as <strong>`+html.EscapeString(label)+`</strong> on this browser.</p>
<form method="post" action="`+PathSignOut+`"><input type="hidden" name="csrf" value="`+html.EscapeString(tok)+`">
<button type="submit" id="signout">Sign out</button></form></body></html>`)
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if webguard.CrossSite(r) || !webguard.TokenOK(key, "signout", p.Session, r.PostFormValue("csrf"), now) {
			write(http.StatusForbidden, messagePage("Sign-out refused", "The form was stale or not sent from this site; open "+PathSignOut+" and try again."))
			return
		}
		if st != nil {
			if err := st.EndSession(r.Context(), store.PersonKey(p.Issuer, p.Subject), hash(p.Session)); err != nil && !isNotFound(err) {
				write(http.StatusInternalServerError, messagePage("Sign-out failed", "The session could not be ended; try again."))
				return
			}
		}
		http.SetCookie(w, &http.Cookie{Name: cookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1})
		write(http.StatusOK, messagePage("Signed out", "Your session on this server has ended; a copy of its cookie signs nobody in."))
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		write(http.StatusMethodNotAllowed, messagePage("Sign out", "Use the form."))
	}
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
