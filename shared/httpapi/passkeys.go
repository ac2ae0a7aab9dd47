package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
)

// PasskeyService is what the passkey pages and the approval page ask of
// people's passkeys (shared/passkey.Service). An interface, so that only
// the functions that serve passkeys (the approve function, the local
// stack) link the WebAuthn library: the gateway and the others do not.
type PasskeyService interface {
	// Origin is the relying party's origin, where passkeys work.
	Origin() (string, error)
	List(ctx context.Context, p countersign.Person) ([]*countersign.Passkey, error)
	Remove(ctx context.Context, p countersign.Person, id string) error
	BeginRegistration(ctx context.Context, p countersign.Person) (ceremony string, options json.RawMessage, err error)
	FinishRegistration(ctx context.Context, p countersign.Person, ceremony, name string, response []byte) (*countersign.Passkey, error)
	BeginApproval(ctx context.Context, p countersign.Person, confirmation string, expires time.Time, challenge func(nonce []byte) []byte) (ceremony string, options json.RawMessage, err error)
}

// Passkeys is the person's own page of passkeys: GET /account/passkeys
// lists theirs (signed in with the approvers' sign-in; a browser not
// signed in is sent to sign in and back), and the POSTs below it add one
// (begin, finish: a WebAuthn registration) or remove one. GET changes
// nothing. Every POST carries a CSRF token sealed for this browser (a
// random cookie of its own) and this person, and answers only the person
// signed in on this browser.
type Passkeys struct {
	SignIn   oauth.SignIn
	Passkeys PasskeyService
	// Signer seals the CSRF tokens.
	Signer *links.Signer
	// Now returns the current time; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// BodyTimeout bounds the wait for a request's body (0: BodyTimeout).
	BodyTimeout time.Duration
}

// Paths of the passkeys page.
const (
	PathPasskeys       = oauth.PathPasskeys
	pathPasskeysBegin  = PathPasskeys + "/begin"
	pathPasskeysFinish = PathPasskeys + "/finish"
	pathPasskeysRemove = PathPasskeys + "/remove"
)

const (
	accountCookie    = "countersign_account"
	purposePasskeys  = "passkeys-csrf"
	passkeysCSRFLife = time.Hour
	maxPasskeysForm  = 64 << 10
)

var _ http.Handler = (*Passkeys)(nil)

// ServesPasskeys reports whether path is the passkeys page's.
func ServesPasskeys(path string) bool {
	return path == PathPasskeys || strings.HasPrefix(path, PathPasskeys+"/")
}

func (h *Passkeys) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

func (h *Passkeys) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// person is who is signed in on this browser (an e-mail only if the
// provider verified it), or nil.
func (h *Passkeys) person(r *http.Request) *countersign.Person {
	if h.SignIn == nil {
		return nil
	}
	p, ok := h.SignIn.Person(r)
	if !ok || p.Subject == "" {
		return nil
	}
	out := &countersign.Person{Issuer: p.Issuer, Subject: p.Subject, Name: p.Name}
	if p.EmailVerified {
		out.Email = p.Email
	}
	return out
}

// csrfClaims is what a CSRF token seals: this browser's account cookie
// and the person.
type csrfClaims struct {
	Browser string `json:"b"`
	Issuer  string `json:"i"`
	Subject string `json:"s"`
}

func (h *Passkeys) csrfToken(browser string, p *countersign.Person) string {
	b, _ := json.Marshal(csrfClaims{Browser: browser, Issuer: p.Issuer, Subject: p.Subject})
	return h.Signer.Seal(purposePasskeys, b, h.now().Add(passkeysCSRFLife))
}

func (h *Passkeys) csrfOK(r *http.Request, token string, p *countersign.Person) bool {
	browser := cookieValue(r, accountCookie)
	b, err := h.Signer.Open(purposePasskeys, token, h.now())
	if err != nil || browser == "" {
		return false
	}
	var cl csrfClaims
	if json.Unmarshal(b, &cl) != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(cl.Browser), []byte(browser)) == 1 && cl.Issuer == p.Issuer && cl.Subject == p.Subject
}

// ServeHTTP serves the page and its POSTs.
func (h *Passkeys) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := withRequestID(r)
	r = r.WithContext(ctx)
	if tooLarge(w, r) {
		return
	}
	b, ok := bodyFront{timeout: h.BodyTimeout}.read(w, r)
	if !ok {
		return
	}
	p := requestPath(r)
	m := method(r)
	switch {
	case p == PathPasskeys && (m == http.MethodGet || m == http.MethodHead):
		h.page(w, r, m == http.MethodHead, "")
	case p == pathPasskeysBegin && m == http.MethodPost:
		h.post(w, r, b, h.begin)
	case p == pathPasskeysFinish && m == http.MethodPost:
		h.post(w, r, b, h.finish)
	case p == pathPasskeysRemove && m == http.MethodPost:
		h.post(w, r, b, h.remove)
	case ServesPasskeys(p):
		rp := codeError(fault.MethodNotAllowed, "use GET "+PathPasskeys+" or the page's buttons")
		if p != PathPasskeys && p != pathPasskeysBegin && p != pathPasskeysFinish && p != pathPasskeysRemove {
			rp = codeError(fault.NotFound, "no route "+m+" "+p)
		}
		rp.send(w)
	default:
		codeError(fault.NotFound, "no route "+m+" "+p).send(w)
	}
}

// post checks the form's CSRF token and the person, then runs fn.
func (h *Passkeys) post(w http.ResponseWriter, r *http.Request, b []byte, fn func(w http.ResponseWriter, r *http.Request, p *countersign.Person, form url.Values)) {
	if len(b) > maxPasskeysForm {
		codeError(fault.PayloadTooLarge, "the form is over 64 KiB").send(w)
		return
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		codeError(fault.InvalidRequest, "the form could not be read").send(w)
		return
	}
	p := h.person(r)
	if p == nil {
		codeError(fault.Forbidden, "Sign in again: your sign-in on this browser has ended. Nothing was changed.").send(w)
		return
	}
	if !h.csrfOK(r, form.Get("csrf"), p) {
		codeError(fault.Forbidden, "This form expired or came from another page; reload "+PathPasskeys+". Nothing was changed.").send(w)
		return
	}
	fn(w, r, p, form)
}

func (h *Passkeys) begin(w http.ResponseWriter, r *http.Request, p *countersign.Person, _ url.Values) {
	cer, opts, err := h.Passkeys.BeginRegistration(r.Context(), *p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonReply(http.StatusOK, struct {
		Ceremony  string          `json:"ceremony"`
		PublicKey json.RawMessage `json:"publicKey"`
	}{cer, publicKeyOf(opts)}).send(w)
}

func (h *Passkeys) finish(w http.ResponseWriter, r *http.Request, p *countersign.Person, form url.Values) {
	k, err := h.Passkeys.FinishRegistration(r.Context(), *p, form.Get("ceremony"), form.Get("name"), []byte(form.Get("response")))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.logger().InfoContext(r.Context(), "passkey registered", "subject", p.Subject, "passkey", k.ID)
	jsonReply(http.StatusOK, struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}{k.ID, k.Name}).send(w)
}

func (h *Passkeys) remove(w http.ResponseWriter, r *http.Request, p *countersign.Person, form url.Values) {
	if err := h.Passkeys.Remove(r.Context(), *p, form.Get("id")); err != nil {
		if strings.Contains(header(r, "Accept"), "application/json") {
			h.fail(w, r, err)
			return
		}
		h.page(w, r, false, fault.ReasonOf(err))
		return
	}
	h.logger().InfoContext(r.Context(), "passkey removed", "subject", p.Subject, "passkey", form.Get("id"))
	if strings.Contains(header(r, "Accept"), "application/json") {
		jsonReply(http.StatusOK, struct {
			Removed string `json:"removed"`
		}{form.Get("id")}).send(w)
		return
	}
	http.Redirect(w, r, PathPasskeys, http.StatusSeeOther)
}

func (h *Passkeys) fail(w http.ResponseWriter, r *http.Request, err error) {
	if fault.CodeOf(err) == fault.Internal {
		h.logger().ErrorContext(r.Context(), "passkeys", "error", err)
	}
	errorOf(err).send(w)
}

// publicKeyOf is the "publicKey" member of the library's options (the
// argument of navigator.credentials.create or get), or opts itself.
func publicKeyOf(opts json.RawMessage) json.RawMessage {
	var o struct {
		PublicKey json.RawMessage `json:"publicKey"`
	}
	if json.Unmarshal(opts, &o) == nil && len(o.PublicKey) > 0 {
		return o.PublicKey
	}
	return opts
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// page renders the list. A browser not signed in is sent to sign in and
// back; the account cookie is set when it has none.
func (h *Passkeys) page(w http.ResponseWriter, r *http.Request, head bool, msg string) {
	if origin, err := h.Passkeys.Origin(); err == nil && r.Host != "" {
		if u, err := url.Parse(origin); err == nil && !strings.EqualFold(u.Host, r.Host) {
			// Passkeys work at the relying party's origin only (a loopback
			// address's is localhost): register them there. A link, not a
			// redirect: a sign-in that comes back to this host (its
			// callback's) must not bounce between the two.
			writeHTML(w, http.StatusOK, "", `<h1>Your passkeys</h1>
<p id="elsewhere">Passkeys work at this site's address `+html.EscapeString(origin)+`: <a href="`+html.EscapeString(origin+PathPasskeys)+`">open your passkeys there</a>.</p>`)
			return
		}
	}
	p := h.person(r)
	if p == nil {
		if h.SignIn == nil {
			writeHTML(w, http.StatusForbidden, "", "<p>Sign-in is not available here, and passkeys belong to people signed in.</p>")
			return
		}
		h.SignIn.Start(w, r, PathPasskeys)
		return
	}
	browser := cookieValue(r, accountCookie)
	if len(browser) != 32 {
		browser = randomHex(16)
		http.SetCookie(w, &http.Cookie{Name: accountCookie, Value: browser, Path: PathPasskeys, HttpOnly: true, Secure: r.TLS != nil,
			SameSite: http.SameSiteStrictMode})
	}
	keys, err := h.Passkeys.List(r.Context(), *p)
	if err != nil {
		h.logger().ErrorContext(r.Context(), "passkeys", "error", err)
		writeHTML(w, http.StatusInternalServerError, "", "<p>Your passkeys could not be read; try again.</p>")
		return
	}
	csrf := html.EscapeString(h.csrfToken(browser, p))
	nonce := randomHex(16)
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<h1>Your passkeys</h1>
<p class="who">Signed in as <strong>` + display.HTML(p.Label()) + `</strong></p>
<p>A passkey proves it is you who approves a call that asks for one: your device signs exactly what you approve, after your PIN or biometric.</p>
`)
	if msg != "" {
		b.WriteString(`<p role="alert" class="error">` + e(msg) + "</p>\n")
	}
	if len(keys) == 0 {
		b.WriteString("<p id=\"none\">You have no passkey yet.</p>\n")
	} else {
		b.WriteString("<ul id=\"passkeys\">\n")
		for _, k := range keys {
			used := "never used"
			if k.LastUsedAt != nil {
				used = "last used " + k.LastUsedAt.UTC().Format("2 Jan 2006, 15:04 UTC")
			}
			b.WriteString(`<li data-id="` + e(k.ID) + `"><strong>` + display.HTML(k.Name) + `</strong> · added ` + e(k.CreatedAt.UTC().Format("2 Jan 2006, 15:04 UTC")) +
				` · ` + e(used) + ` <form method="post" action="` + pathPasskeysRemove + `"><input type="hidden" name="csrf" value="` + csrf +
				`"><input type="hidden" name="id" value="` + e(k.ID) + `"><button type="submit" class="remove">Remove</button></form></li>` + "\n")
		}
		b.WriteString("</ul>\n")
	}
	if len(keys) < countersign.MaxPasskeysPerPerson {
		b.WriteString(`<form id="add"><input type="hidden" id="csrf" value="` + csrf + `">
<label>Name <input type="text" id="name" maxlength="64" placeholder="laptop" autocomplete="off"></label>
<button type="submit" id="add-passkey">Add a passkey</button></form>
<p id="status" role="status"></p>
<script nonce="` + nonce + `">` + registerScript + `</script>
`)
	}
	if head {
		writeHTMLHead(w, nonce)
		return
	}
	writeHTML(w, http.StatusOK, nonce, b.String())
}

func pageHeaders(w http.ResponseWriter, nonce string) {
	csp := "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if nonce != "" {
		csp += "; script-src 'nonce-" + nonce + "'; connect-src 'self'"
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func writeHTMLHead(w http.ResponseWriter, nonce string) {
	pageHeaders(w, nonce)
	w.WriteHeader(http.StatusOK)
}

func writeHTML(w http.ResponseWriter, status int, nonce, body string) {
	pageHeaders(w, nonce)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Your passkeys · countersign</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex, nofollow"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em">
` + body + `</body></html>`))
}

// registerScript adds a passkey: begin (the options), the browser's
// navigator.credentials.create, finish (the server verifies and stores
// it), then the page again.
const registerScript = `(function () {
const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const u64 = (a) => btoa(String.fromCharCode(...new Uint8Array(a))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const status = document.getElementById("status");
const csrf = document.getElementById("csrf").value;
const post = async (path, fields) => {
  const r = await fetch(path, {method: "POST", headers: {"Accept": "application/json"}, body: new URLSearchParams(fields), credentials: "same-origin"});
  const j = await r.json();
  if (!r.ok) throw new Error(j.reason || String(r.status));
  return j;
};
document.getElementById("add").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  status.textContent = "Asking your authenticator…";
  try {
    const b = await post("` + pathPasskeysBegin + `", {csrf});
    const o = b.publicKey;
    o.challenge = b64(o.challenge);
    o.user.id = b64(o.user.id);
    (o.excludeCredentials || []).forEach((c) => { c.id = b64(c.id); });
    const cred = await navigator.credentials.create({publicKey: o});
    const out = {id: cred.id, rawId: u64(cred.rawId), type: cred.type,
      response: {clientDataJSON: u64(cred.response.clientDataJSON), attestationObject: u64(cred.response.attestationObject),
        transports: cred.response.getTransports ? cred.response.getTransports() : []},
      clientExtensionResults: cred.getClientExtensionResults()};
    await post("` + pathPasskeysFinish + `", {csrf, ceremony: b.ceremony, name: document.getElementById("name").value, response: JSON.stringify(out)});
    status.textContent = "Passkey added.";
    location.reload();
  } catch (e) {
    status.textContent = "No passkey was added: " + e.message;
  }
});
})();`
