package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/operatorpage"
	"github.com/countersign/countersign/shared/webguard"
)

// The operator page signs an operator in with a key typed into a form
// (never in a URL) and keeps a session in a cookie: a token sealed with
// the link signer (purpose operator-session) that names the credential and
// a random session id, whose record the store keeps (see signin.go).
// Nothing derived from the key is in the cookie. Every POST carries a CSRF token sealed
// for that session id (or, on the sign-in form, for a pre-session cookie),
// and is refused when the browser says it came from another site.
const (
	sessionCookie = "cs_operator"
	loginCookie   = "cs_operator_login"
	// purposes of the sealed tokens
	purposeSession = "operator-session"
	purposeCSRF    = "operator-csrf"
	purposeLogin   = "operator-login"
	loginTTL       = 15 * time.Minute
	defaultSession = 8 * time.Hour
)

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// secure reports whether the page is served over https (API Gateway sets
// X-Forwarded-Proto; the local stack is plain http).
func (o *Operator) secure(r *http.Request) bool {
	return strings.EqualFold(header(r, "X-Forwarded-Proto"), "https") || strings.HasPrefix(o.Calls.Current().Settings.PublicURL, "https://")
}

func (o *Operator) cookie(r *http.Request, name, value string, maxAge time.Duration) string {
	c := &http.Cookie{Name: name, Value: value, Path: "/operator", HttpOnly: true, Secure: o.secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: int(maxAge / time.Second)}
	if maxAge <= 0 {
		c.MaxAge = -1
	}
	return c.String()
}

// cookieValue reads a cookie from the Cookie headers (the Lambda edge
// joins API Gateway's cookies into one).
func cookieValue(r *http.Request, name string) string {
	var raw []string
	for _, h := range r.Header.Values("Cookie") {
		raw = append(raw, strings.Split(h, ";")...)
	}
	for _, c := range raw {
		k, v, ok := strings.Cut(strings.TrimSpace(c), "=")
		if ok && k == name {
			return v
		}
	}
	return ""
}

// page serves GET /operator and the page's POST forms.
func (o *Operator) page(ctx context.Context, r *http.Request, b []byte, sub string) reply {
	m := method(r)
	if m == http.MethodPost && webguard.CrossSite(r) {
		return o.render(http.StatusForbidden, operatorpage.Page{Message: "This form was sent from another site.", Error: true}, nil)
	}
	if sub == "/login" {
		if m != http.MethodPost {
			return o.methodNotAllowed("POST")
		}
		return o.login(ctx, r, b)
	}
	cred, cl, err := o.session(ctx, r)
	if err == nil && cred == nil {
		var refused string
		if cred, cl, refused, err = o.personSession(ctx, r); refused != "" {
			return o.render(http.StatusForbidden, operatorpage.Page{Message: refused, Error: true}, nil)
		}
	}
	if err != nil {
		return o.render(http.StatusInternalServerError, operatorpage.Page{Message: fault.ReasonOf(err), Error: true}, nil)
	}
	if cred == nil {
		if sub == "" && (m == http.MethodGet || m == http.MethodHead) {
			return o.loginPage(r, http.StatusOK, "", false)
		}
		if m == http.MethodPost {
			return o.loginPage(r, http.StatusUnauthorized, "Your session has ended: sign in again.", true)
		}
		return o.loginPage(r, http.StatusNotFound, "No such page.", true)
	}
	if err := calls.RequireOperator(cred); err != nil {
		return o.render(http.StatusForbidden, operatorpage.Page{Message: "This key may not use the operator page: it needs role operator.", Error: true},
			[]string{o.cookie(r, sessionCookie, "", 0)})
	}
	if m == http.MethodGet || m == http.MethodHead {
		if sub != "" {
			if rp, ok := o.consoleGet(ctx, r, cred, cl, sub); ok {
				return rp
			}
			return o.dashboard(ctx, r, cred, cl, http.StatusNotFound, "No such page.", true)
		}
		return o.dashboard(ctx, r, cred, cl, http.StatusOK, "", false)
	}
	if m != http.MethodPost {
		return o.methodNotAllowed("GET, HEAD, POST")
	}
	if len(b) > maxOperatorForm {
		return o.dashboard(ctx, r, cred, cl, http.StatusRequestEntityTooLarge, "The form is larger than 64 KiB; nothing was done.", true)
	}
	form, ok := o.form(b)
	if !ok || !o.csrfOK(form.Get("csrf"), cl.ID) {
		return o.dashboard(ctx, r, cred, cl, http.StatusForbidden, "The form was stale or not sent from this page; nothing was done. Try again.", true)
	}
	// Every form, the review queue's too: a field given twice is ambiguous
	// (decision=dismiss&decision=run), so nothing is done.
	for k, vs := range form {
		if len(vs) > 1 {
			return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, "The form gives "+strings.Join(strings.Fields(k), "")+" more than once; nothing was done.", true)
		}
	}
	switch {
	case sub == "/logout" && cred.IsPerson():
		return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, "You signed in as a person: sign out with the Sign out link (it signs you out of approvals too).", true)
	case sub == "/logout":
		if err := o.endSession(ctx, cl); err != nil {
			return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, fault.ReasonOf(err), true)
		}
		return o.loginPage(r, http.StatusOK, "Signed out.", false, o.cookie(r, sessionCookie, "", 0))
	case strings.HasPrefix(sub, "/reviews/"):
		return o.reviewForm(ctx, r, cred, cl, strings.TrimPrefix(sub, "/reviews/"), form)
	}
	if rp, ok := o.consoleForm(ctx, r, cred, cl, sub, form); ok {
		return rp
	}
	return o.dashboard(ctx, r, cred, cl, http.StatusNotFound, "No such form.", true)
}

func (o *Operator) methodNotAllowed(allow string) reply {
	resp := o.render(http.StatusMethodNotAllowed, operatorpage.Page{Message: "Use the page's forms.", Error: true}, nil)
	resp.set("Allow", allow)
	return resp
}

// maxOperatorForm bounds a form of the operator page.
const maxOperatorForm = 64 << 10

func (o *Operator) form(b []byte) (url.Values, bool) {
	if len(b) > maxOperatorForm {
		return nil, false
	}
	form, err := url.ParseQuery(string(b))
	return form, err == nil
}

func (o *Operator) csrfToken(sessionID string) string {
	return o.Signer.Seal(purposeCSRF, []byte(sessionID), o.now().Add(o.sessionTTL()))
}

func (o *Operator) csrfOK(token, sessionID string) bool {
	b, err := o.Signer.Open(purposeCSRF, token, o.now())
	return err == nil && subtle.ConstantTimeCompare(b, []byte(sessionID)) == 1
}

func (o *Operator) sessionTTL() time.Duration {
	if o.SessionTTL > 0 {
		return o.SessionTTL
	}
	return defaultSession
}

// loginPage renders the sign-in form with a fresh pre-session cookie and
// the CSRF token sealed for it.
func (o *Operator) loginPage(r *http.Request, status int, msg string, isErr bool, cookies ...string) reply {
	nonce := randomID()
	tok := o.Signer.Seal(purposeLogin, []byte(nonce), o.now().Add(loginTTL))
	cookies = append(cookies, o.cookie(r, loginCookie, nonce, loginTTL))
	return o.render(status, operatorpage.Page{CSRF: tok, Message: msg, Error: isErr, PersonSignIn: o.personSignInAvailable()}, cookies)
}

// login checks the key typed into the form; only an operator key gets a
// session. Failed attempts are throttled per client address, and slowed
// (never refused) past a budget for all addresses (loginThrottle).
func (o *Operator) login(ctx context.Context, r *http.Request, b []byte) reply {
	ip := clientIP(r)
	if wait := o.throttle.wait(ip, o.now()); wait > 0 {
		resp := o.loginPage(r, http.StatusTooManyRequests, fmt.Sprintf("Too many failed sign-ins from this address: wait %d seconds.", wait), true)
		resp.set("Retry-After", strconv.Itoa(wait))
		return resp
	}
	if d := o.throttle.slow(o.now()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return o.loginPage(r, http.StatusServiceUnavailable, "The sign-in was cancelled; try again.", true)
		case <-t.C:
		}
	}
	form, ok := o.form(b)
	if !ok {
		return o.loginPage(r, http.StatusBadRequest, "The form could not be read.", true)
	}
	nonce, err := o.Signer.Open(purposeLogin, form.Get("csrf"), o.now())
	if err != nil || cookieValue(r, loginCookie) == "" || subtle.ConstantTimeCompare(nonce, []byte(cookieValue(r, loginCookie))) != 1 {
		return o.loginPage(r, http.StatusForbidden, "The form was stale or not sent from this page; try again.", true)
	}
	cred, err := o.Calls.Authenticate(ctx, form.Get("key"))
	if fault.CodeOf(err) == fault.Internal {
		return o.loginPage(r, http.StatusInternalServerError, fault.ReasonOf(err), true)
	}
	if err != nil {
		o.throttle.fail(ip, o.now())
		return o.loginPage(r, http.StatusUnauthorized, "That key is not valid.", true)
	}
	if !cred.Operator {
		o.throttle.fail(ip, o.now())
		o.logger().WarnContext(ctx, "operator sign-in refused: not an operator", "credential", cred.ID)
		return o.loginPage(r, http.StatusForbidden, "This key may not use the operator page: it needs role operator.", true)
	}
	cl, err := o.startSession(ctx, cred)
	if err != nil {
		return o.loginPage(r, http.StatusInternalServerError, fault.ReasonOf(err), true)
	}
	claims, _ := json.Marshal(cl)
	tok := o.Signer.Seal(purposeSession, claims, o.now().Add(o.sessionTTL()))
	o.logger().InfoContext(ctx, "operator signed in", "credential", cred.ID)
	return o.dashboard(ctx, r, cred, cl, http.StatusOK, "Signed in as "+cred.ID+".", false,
		o.cookie(r, sessionCookie, tok, o.sessionTTL()), o.cookie(r, loginCookie, "", 0))
}

func (o *Operator) reviewForm(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, id string, form url.Values) reply {
	id, err := url.PathUnescape(id)
	if err != nil || id == "" {
		return o.dashboard(ctx, r, cred, cl, http.StatusNotFound, "No such review item.", true)
	}
	reason := form.Get("reason")
	if len(reason) > maxReason {
		return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, "The reason is longer than 1000 bytes.", true)
	}
	var st calls.Status
	var resp *calls.Response
	var msg string
	switch form.Get("decision") {
	case "run":
		st, resp, err = o.Calls.RunReview(ctx, cred, id)
		if err == nil && resp != nil {
			msg = fmt.Sprintf("Ran review item %s: the upstream answered %d %s.", id, resp.Status, http.StatusText(resp.Status))
		}
	case "dismiss":
		st, err = o.Calls.DismissReview(ctx, cred, id, reason)
		msg = "Dismissed review item " + id + "."
	default:
		return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, `decision must be "run" or "dismiss"`, true)
	}
	_ = st
	if err != nil {
		return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err), true)
	}
	return o.dashboard(ctx, r, cred, cl, http.StatusOK, msg, false)
}

// dashboard renders the signed-in page.
func (o *Operator) dashboard(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, status int, msg string, isErr bool, cookies ...string) reply {
	p := operatorpage.Page{Operator: operatorLabel(cred), Person: cred.IsPerson(), CSRF: o.csrfToken(cl.ID), Message: msg, Error: isErr,
		Trial: o.Calls.Current().Candidate != nil}
	fail := func(err error) reply {
		return o.render(http.StatusInternalServerError, operatorpage.Page{Operator: p.Operator, Person: p.Person, CSRF: p.CSRF, Message: fault.ReasonOf(err), Error: true}, cookies)
	}
	// Each list shows one page; its cursor is in the page's own address
	// (?reviews=, ?confirmations=, ?credentials=, ?audit=).
	var params url.Values
	if m := method(r); m == http.MethodGet || m == http.MethodHead {
		var err error
		if params, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			return o.render(http.StatusBadRequest, operatorpage.Page{Operator: p.Operator, Person: p.Person, CSRF: p.CSRF, Message: "The address's query string is malformed.", Error: true}, cookies)
		}
	}
	badCursor := func(err error) reply {
		return o.render(http.StatusBadRequest, operatorpage.Page{Operator: p.Operator, Person: p.Person, CSRF: p.CSRF, Message: fault.ReasonOf(err), Error: true}, cookies)
	}
	more := func(list, next string) string {
		if next == "" {
			return ""
		}
		return "/operator?" + url.Values{list: {next}}.Encode() + "#" + list
	}
	rq := countersign.ListQuery{Newest: true}
	cur, err := o.openCursor("page-reviews", rq, params.Get("reviews"))
	if err != nil {
		return badCursor(err)
	}
	rq.Cursor = cur
	reviews, next, err := o.Calls.Reviews(ctx, cred, rq)
	if err != nil {
		return fail(err)
	}
	p.NextReviews = more("reviews", o.sealCursor("page-reviews", rq, next))
	// Pending first, then the newest decided ones (within the page).
	sort.SliceStable(reviews, func(i, j int) bool {
		pi, pj := reviews[i].Effective == countersign.StatusPending, reviews[j].Effective == countersign.StatusPending
		if pi != pj {
			return pi
		}
		return false
	})
	for _, r := range reviews {
		p.Reviews = append(p.Reviews, reviewRow(r))
	}
	cq := countersign.ListQuery{Newest: true}
	if cq.Cursor, err = o.openCursor("page-confirmations", cq, params.Get("confirmations")); err != nil {
		return badCursor(err)
	}
	confs, next, err := o.Calls.Confirmations(ctx, cred, cq)
	if err != nil {
		return fail(err)
	}
	p.NextConfirmations = more("confirmations", o.sealCursor("page-confirmations", cq, next))
	for _, c := range confs {
		row := operatorpage.Confirmation{ID: c.ID, Kind: string(c.Kind), Credential: c.Credential, Status: string(c.Effective), ExpiresAt: c.ExpiresAt}
		for _, op := range c.Operations {
			row.Operations = append(row.Operations, op.Method+" "+op.Path+" on "+op.Connection)
		}
		p.Confirmations = append(p.Confirmations, row)
	}
	var kq countersign.ListQuery
	if kq.Cursor, err = o.openCursor("page-credentials", kq, params.Get("credentials")); err != nil {
		return badCursor(err)
	}
	creds, next, err := o.Calls.Credentials(ctx, cred, kq)
	if err != nil {
		return fail(err)
	}
	p.NextCredentials = more("credentials", o.sealCursor("page-credentials", kq, next))
	for _, c := range creds {
		p.Credentials = append(p.Credentials, credentialRow(c))
	}
	var gq countersign.ListQuery
	if gq.Cursor, err = o.openCursor("page-grants", gq, params.Get("grants")); err != nil {
		return badCursor(err)
	}
	grants, next, err := o.Calls.Grants(ctx, cred, gq)
	if err != nil {
		return fail(err)
	}
	p.NextGrants = more("grants", o.sealCursor("page-grants", gq, next))
	p.Grants = grantRows(grants, o.now())
	if o.Audit != nil {
		var aq countersign.ListQuery
		if aq.Cursor, err = o.openCursor("page-audit", aq, params.Get("audit")); err != nil {
			return badCursor(err)
		}
		recs, next, err := o.recentAudit(ctx, aq, 50)
		if err != nil {
			o.logger().ErrorContext(ctx, "audit records not listed", "error", err)
			p.Message, p.Error = strings.TrimSpace(p.Message+" The audit records could not be read."), true
		}
		p.NextAudit = more("audit", o.sealCursor("page-audit", aq, next))
		for _, r := range recs {
			row := operatorpage.AuditRecord{At: r.At, Chain: r.Chain, Seq: r.Seq, Actor: r.Actor, Action: r.Action,
				Subject: r.Subject, Outcome: r.Outcome, Reason: r.Reason}
			if r.Method != "" {
				row.What = r.Method + " " + r.Path + " on " + r.Connection
			}
			p.Audit = append(p.Audit, row)
		}
	}
	return o.render(status, p, cookies)
}

// recentAudit returns the newest n records across one page of chains (q),
// and the cursor of the next page of chains.
func (o *Operator) recentAudit(ctx context.Context, q countersign.ListQuery, n int) ([]*countersign.AuditRecord, string, error) {
	chains, err := o.Audit.AuditChains(ctx, q)
	if err != nil {
		return nil, "", err
	}
	var all []*countersign.AuditRecord
	for _, c := range chains.Items {
		rs, err := o.Audit.ListAudit(ctx, countersign.AuditQuery{Chain: c, Limit: n, Newest: true})
		if err != nil {
			return nil, "", err
		}
		all = append(all, rs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].At.After(all[j].At) })
	if len(all) > n {
		all = all[:n]
	}
	return all, chains.Next, nil
}

func reviewRow(r calls.Status) operatorpage.Review {
	row := operatorpage.Review{ID: r.ID, Credential: r.Credential, Status: string(r.Effective), Reason: r.Reason,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Pending: r.Effective == countersign.StatusPending,
		DecidedBy: r.DecidedBy, Note: r.DecisionReason}
	if len(r.Operations) > 0 {
		op := r.Operations[0]
		row.Method, row.Path, row.Connection = op.Method, op.Path, op.Connection
		row.Args = readableArgs(op.Args)
		if op.Outcome != nil {
			row.Outcome = outcomeText(op.Outcome)
		}
	}
	return row
}

// readableArgs shows a call's arguments as bounded pretty JSON, leaving out
// empty path, query, body and headers.
func readableArgs(a countersign.Args) string {
	m := map[string]any{}
	if len(a.Headers) > 0 {
		m["headers"] = a.Headers
	}
	if len(a.Path) > 0 {
		m["path"] = a.Path
	}
	if len(a.Query) > 0 {
		m["query"] = a.Query
	}
	if len(a.Body) > 0 && string(a.Body) != "null" {
		m["body"] = a.Body
	}
	if len(m) == 0 {
		return ""
	}
	b, err := canon.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(m)
	}
	return approvalpage.PrettyJSON(b)
}

func (o *Operator) render(status int, p operatorpage.Page, cookies []string) reply {
	ws := o.Calls.Current().Settings.Workspace
	p.Workspace, p.Accent = ws.Name, ws.AccentColor
	b, headers, err := operatorpage.Render(p)
	if err != nil {
		o.logger().Error("operator page not rendered", "error", err)
		return rawReply(http.StatusInternalServerError, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, []byte("internal error\n"))
	}
	rp := rawReply(status, headers, b)
	if len(cookies) > 0 {
		rp.header["Set-Cookie"] = cookies
	}
	return rp
}
