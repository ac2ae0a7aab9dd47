package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/policy"
)

// Decider is what the approval page asks of the pipeline
// (calls.Service): the configuration in force, a confirmation, whether
// the lifecycle lets this person answer it, and an approver's answer.
type Decider interface {
	Current() *config.Config
	Lookup(ctx context.Context, id string) (*countersign.Confirmation, error)
	Answer(ctx context.Context, id string, d confirm.Answer) (*countersign.Confirmation, error)
	MayAnswer(ctx context.Context, c *countersign.Confirmation, d confirm.Answer) error
}

var _ Decider = (*calls.Service)(nil)

// Approver is the approvers' surface: GET and HEAD /approve/<id> render the
// page and change nothing; only POST /approve/<id> decides (docs/api.md, The approval page).
type Approver struct {
	// Calls reads and decides confirmations (and announces decisions);
	// it holds the configuration in force, read for each request.
	Calls  Decider
	Signer *links.Signer
	// Now returns the current time; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// BodyTimeout bounds the wait for a request's body once its headers
	// are in (0: BodyTimeout).
	BodyTimeout time.Duration
	// SignIn signs approvers in (settings.json approvers.sign_in), with
	// the same sign-in as OAuth's authorize endpoint; nil when this
	// surface has none, and then a required sign-in refuses every decision.
	SignIn oauth.SignIn
	// Provider is set when the deployment itself names an identity
	// provider (the template's user pool or SignInIssuer), so that
	// approvers.sign_in defaults to "required" as it does with
	// settings.json's sign_in. The local stack's development sign-in page
	// is no configured provider: it leaves this unset.
	Provider bool
	// Passkeys begins the passkey ceremonies of approvals that need one
	// (approval.passkey; confirm verifies them); nil: none can be begun.
	Passkeys PasskeyService
}

var _ http.Handler = (*Approver)(nil)

// approverCtx is who is deciding: the person signed in on this browser,
// if any, and the sign-in mode in force.
type approverCtx struct {
	person *countersign.Person // its Email only if verified
	groups []string
	mode   string
	// session is the sign-in's session id, which the form's CSRF token binds.
	session string
}

// who reads the sign-in mode in force and the person signed in.
func (a *Approver) who(r *http.Request) approverCtx {
	w := approverCtx{mode: a.signInMode()}
	if a.SignIn == nil {
		return w
	}
	if p, ok := a.SignIn.Person(r); ok && p.Subject != "" {
		// An e-mail the provider did not verify is nobody's: it never
		// names the person, matches a list or reaches the record.
		w.person = &countersign.Person{Issuer: p.Issuer, Subject: p.Subject, Name: p.Name}
		if p.EmailVerified {
			w.person.Email = p.Email
		}
		w.groups, w.session = p.Groups, p.Session
	}
	return w
}

// signInMode is approvers.sign_in in force: as settings.json gives it,
// else "required" when an identity provider is configured there or by
// the deployment (Provider), else off.
func (a *Approver) signInMode() string {
	s := a.Calls.Current().Settings
	if s.Approvers.SignIn == "" && a.Provider {
		return config.ApproverSignInRequired
	}
	return s.ApproverSignIn()
}

// signInAvailable reports whether a browser can sign in here: a sign-in
// that may have no provider to send people to (a deployment with none)
// says so with Available.
func (a *Approver) signInAvailable() bool {
	if a.SignIn == nil {
		return false
	}
	if s, ok := a.SignIn.(interface{ Available() bool }); ok {
		return s.Available()
	}
	return true
}

// label is how the page shows the person signed in.
func (w approverCtx) label() string {
	if w.person == nil {
		return ""
	}
	if w.person.Name != "" && w.person.Email != "" {
		return w.person.Name + " <" + w.person.Email + ">"
	}
	return w.person.Label()
}

// required is c's quorum: as recorded when it paused, else (a record
// made before the rules were recorded) the policy's in force; 0 when one
// approval decides.
func (a *Approver) required(c *countersign.Confirmation) int {
	n := c.Required
	if n == 0 {
		set := a.Calls.Current().Policy
		var strict policy.Rules
		for _, op := range c.Operations {
			strict = strict.Strictest(set.RulesOf(op.Connection, op.Method, op.Path))
		}
		n = strict.Required
	}
	if n < 2 {
		return 0
	}
	return n
}

// answer is who answers from this browser, as the lifecycle judges it.
func (w approverCtx) answer(link links.Link) confirm.Answer {
	return confirm.Answer{Approver: link.Approver, Person: w.person, Groups: w.groups}
}

// refusal says why this browser may not decide c, or "" when it may:
// sign-in is required and nobody is signed in, or the lifecycle's rules
// of who may answer refuse this person (confirm.Service.MayAnswer: the
// approvers lists, four eyes, a quorum's second approval, the link given
// to the person who made the call).
func (a *Approver) refusal(ctx context.Context, w approverCtx, c *countersign.Confirmation, link links.Link) string {
	principal := link.Approver == links.PrincipalApprover
	if w.person == nil && (principal || w.mode == config.ApproverSignInRequired || confirm.NeedsPerson(c, nil) || a.required(c) > 1) {
		switch {
		case principal && a.SignIn == nil:
			return "This link decides only for the person who made the call, signed in, and sign-in is not available here."
		case principal:
			return "Sign in to decide: this link decides only for the person who made the call."
		case a.SignIn == nil:
			return "Approvers must sign in to decide, and sign-in is not available here."
		}
		return "Sign in to decide: approvers of this call must sign in."
	}
	if err := a.Calls.MayAnswer(ctx, c, w.answer(link)); err != nil {
		return fault.ReasonOf(err)
	}
	return ""
}

func (a *Approver) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

// workspace is the look of the page, from the settings in force.
func (a *Approver) workspace() config.Workspace { return a.Calls.Current().Settings.Workspace }

func (a *Approver) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// ServeHTTP serves /approve/<id>. The body (a POST's form) is read
// first, within the body deadline and 1 MiB.
func (a *Approver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := withRequestID(r)
	if tooLarge(w, r) {
		return
	}
	b, ok := bodyFront{timeout: a.BodyTimeout}.read(w, r)
	if !ok {
		return
	}
	if a.startSignIn(w, r) {
		return
	}
	a.serve(ctx, r, b).send(w)
}

// startSignIn sends a browser that opens a valid link without being signed
// in to the sign-in, and back to the same link, when sign-in is required.
// It changes nothing on the server: the sign-in's own state travels in
// its cookies.
func (a *Approver) startSignIn(w http.ResponseWriter, r *http.Request) bool {
	m := method(r)
	if a.SignIn == nil || m != http.MethodGet && m != http.MethodHead {
		return false
	}
	who := a.who(r)
	if who.person != nil {
		return false
	}
	id, ok := strings.CutPrefix(requestPath(r), "/approve/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return false
	}
	if unescaped, err := url.PathUnescape(id); err == nil {
		id = unescaped
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return false
	}
	link, _, err := a.verify(id, q)
	if err != nil {
		return false // the page says the link is not valid
	}
	asked := q.Get("signin") == "1" // the page's "Sign in" link, where sign-in is not required
	if !asked && who.mode != config.ApproverSignInRequired && q.Get("a") != links.PrincipalApprover {
		// The policy may still want a person for this call.
		c, err := a.Calls.Lookup(r.Context(), id)
		if err != nil || confirm.Effective(c, a.now()) != countersign.StatusPending {
			return false
		}
		if !confirm.NeedsPerson(c, nil) && a.required(c) < 2 {
			return false
		}
	}
	// Back to the link itself: its signed fields, nothing else of the query.
	a.SignIn.Start(w, r, "/approve/"+url.PathEscape(id)+"?"+link.Query().Encode())
	return true
}

func (a *Approver) serve(ctx context.Context, r *http.Request, b []byte) reply {
	id, ok := strings.CutPrefix(requestPath(r), "/approve/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return a.page(http.StatusNotFound, approvalpage.Page{State: approvalpage.NotFound}, false)
	}
	if unescaped, err := url.PathUnescape(id); err == nil {
		id = unescaped
	}
	switch method(r) {
	case http.MethodGet:
		return a.show(ctx, r, id, false)
	case http.MethodHead:
		return a.show(ctx, r, id, true)
	case http.MethodPost:
		return a.decide(ctx, r, b, id)
	}
	resp := a.page(http.StatusMethodNotAllowed, approvalpage.Page{State: approvalpage.NotFound, Message: "Use the link you were sent."}, false)
	resp.set("Allow", "GET, HEAD, POST")
	return resp
}

// verify checks the link's signature; a valid link past its expiry is
// reported as expired (the caller still shows a decision already made).
func (a *Approver) verify(id string, q url.Values) (link links.Link, expired bool, err error) {
	link, err = links.ParseLink(id, q)
	if err != nil {
		return link, false, err
	}
	err = a.Signer.Verify(link, a.now())
	if errors.Is(err, links.ErrExpired) {
		return link, true, nil
	}
	return link, false, err
}

// show renders the page for GET and HEAD. It never writes anything.
func (a *Approver) show(ctx context.Context, r *http.Request, id string, head bool) reply {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return a.page(http.StatusForbidden, approvalpage.Page{State: approvalpage.BadSignature}, head)
	}
	link, linkExpired, err := a.verify(id, q)
	if err != nil {
		return a.page(http.StatusForbidden, approvalpage.Page{State: approvalpage.BadSignature}, head)
	}
	c, err := a.Calls.Lookup(ctx, id)
	if err != nil {
		if fault.CodeOf(err) == fault.UnknownConfirmation {
			return a.page(http.StatusNotFound, approvalpage.Page{State: approvalpage.NotFound}, head)
		}
		return a.page(http.StatusInternalServerError, approvalpage.Page{State: approvalpage.NotFound, Message: "Something went wrong; try again."}, head)
	}
	who := a.who(r)
	p := a.pageOf(c, link)
	p.SignedIn, p.Remember, p.Form.CSRF, p.SignOutURL = who.label(), a.rememberOffer(c), a.csrfToken(who, c.ID), signOutURL(who)
	if who.person == nil && a.signInAvailable() && link.Approver != links.PrincipalApprover {
		// Sign-in is not required here (else startSignIn sent the browser
		// there): offer it, so that the decision can name the person.
		p.SignInURL = "/approve/" + url.PathEscape(id) + "?" + link.Query().Encode() + "&signin=1"
	}
	a.describeAsker(ctx, c, &p)
	switch st := confirm.Effective(c, a.now()); {
	case st == countersign.StatusPending && !linkExpired:
		p.Refusal = a.refusal(ctx, who, c, link)
		a.describePasskey(ctx, r, who, c, &p)
		if n := a.required(c); n > 1 {
			p.Progress = fmt.Sprintf("%d of %d approvals", len(c.Approvals), n)
		}
		return a.page(http.StatusOK, p, head)
	case st == countersign.StatusPending || c.Lapsed(st):
		p.State = approvalpage.Expired
		return a.page(http.StatusGone, p, head)
	default:
		dp := a.decidedPage(c, link)
		a.describeAsker(ctx, c, &dp)
		return a.page(http.StatusOK, dp, head)
	}
}

// describeAsker adds who is asking (the credential, and the client that
// made this call as it described itself then), why, and a custom tool's
// prompt to the page. A confirmation without a recorded client shows
// nothing in the agent's words: the credential's last client may be
// another agent sharing the key.
func (a *Approver) describeAsker(ctx context.Context, c *countersign.Confirmation, p *approvalpage.Page) {
	p.Requester, p.Reason, p.DecisionReason = c.Credential, c.Reason, c.DecisionReason
	if ak := c.Asker; ak != nil {
		// The agent's own words: the page labels and bounds them.
		p.Client, p.ClientAsks = strings.TrimSpace(ak.Name+" "+ak.Version), "cannot ask"
		if ak.CanAsk {
			p.ClientAsks = "can ask"
		}
	}
	for _, op := range c.Operations {
		if m, ok := a.Calls.Current().Policy.Resolve(op.Connection, op.Method, op.Path); ok && m.Endpoint != nil && m.Endpoint.Prompt != "" {
			p.Prompt = m.Endpoint.Prompt
			break
		}
	}
}

// pageAgain answers an answer refused before anything was decided (its
// remember or its edits): the page again, saying why.
func (a *Approver) pageAgain(ctx context.Context, who approverCtx, c *countersign.Confirmation, link links.Link, err error, wantJSON bool) reply {
	code := fault.CodeOf(err)
	if wantJSON {
		return codeError(code, fault.ReasonOf(err))
	}
	p := a.pageOf(c, link)
	p.SignedIn, p.Message, p.Remember = who.label(), fault.ReasonOf(err), a.rememberOffer(c)
	p.Form.CSRF, p.SignOutURL = a.csrfToken(who, c.ID), signOutURL(who)
	a.describeAsker(ctx, c, &p)
	return a.page(httpStatus(code), p, false)
}

// decide handles the POST from the page's buttons, or a client's form or
// JSON body (approveRequest): one path checks and decides either.
func (a *Approver) decide(ctx context.Context, r *http.Request, b []byte, id string) reply {
	wantJSON := strings.Contains(header(r, "Accept"), "application/json")
	fail := func(code fault.Code, reason string, p approvalpage.Page) reply {
		if wantJSON {
			return codeError(code, reason)
		}
		p.Message = reason
		return a.page(httpStatus(code), p, false)
	}
	invalid := approvalpage.Page{State: approvalpage.BadSignature}
	if len(b) > maxApproveBody {
		return fail(fault.PayloadTooLarge, "The form is too large.", invalid)
	}
	req, err := readApproveRequest(r, b)
	if err != nil {
		return fail(fault.CodeOf(err), fault.ReasonOf(err), invalid)
	}
	link, linkExpired, err := a.verify(id, req.link)
	if err != nil {
		return fail(fault.BadSignature, "This link is not valid.", invalid)
	}
	decision := req.decision
	if decision != "approve" && decision != "reject" {
		return fail(fault.InvalidRequest, `decision must be "approve" or "reject"`, invalid)
	}
	keep := req.keep
	if req.keepErr != nil {
		return fail(fault.InvalidRequest, req.keepErr.Error(), invalid)
	}
	expired := approvalpage.Page{State: approvalpage.Expired, Workspace: a.workspace().Name, Accent: a.workspace().AccentColor}
	if linkExpired {
		c, err := a.Calls.Lookup(ctx, id)
		if err == nil && c.DecidedAt != nil {
			return fail(fault.ConfirmationDecided, "This confirmation was already decided.", a.decidedPage(c, link))
		}
		return fail(fault.ConfirmationExpired, "This confirmation expired.", expired)
	}
	reason := strings.TrimSpace(req.reason)
	if len(reason) > maxReason {
		return fail(fault.InvalidRequest, "The reason is longer than 1000 bytes.", invalid)
	}
	remember := req.remember
	if req.rememberErr != nil {
		return fail(fault.InvalidRemember, req.rememberErr.Error(), invalid)
	}
	who := a.who(r)
	c, err := a.Calls.Lookup(ctx, id)
	if err != nil {
		if fault.CodeOf(err) == fault.UnknownConfirmation {
			return fail(fault.UnknownConfirmation, "There is no such confirmation.", approvalpage.Page{State: approvalpage.NotFound})
		}
		return fail(fault.Internal, "Something went wrong; try again.", approvalpage.Page{State: approvalpage.NotFound})
	}
	if why := a.refusal(ctx, who, c, link); why != "" && confirm.Effective(c, a.now()) == countersign.StatusPending {
		p := a.pageOf(c, link)
		p.SignedIn, p.Refusal = who.label(), why
		a.describeAsker(ctx, c, &p)
		if wantJSON {
			return codeError(fault.Forbidden, why)
		}
		return a.page(http.StatusForbidden, p, false)
	}
	if why := a.csrfRefusal(r, who, id, req.csrf); why != "" {
		return fail(fault.Forbidden, why, invalid)
	}
	edits, err := req.edits(c)
	if err != nil {
		return a.pageAgain(ctx, who, c, link, err, wantJSON)
	}
	if decision == "reject" && req.pageEdits {
		edits = nil // the page's inputs, posted with Reject: nothing is edited
	}
	if req.passkey == passkeyBegin {
		return a.beginPasskey(ctx, who, c, keep, decision == "approve")
	}
	ans := who.answer(link)
	ans.Edits = edits
	ans.Approve, ans.Keep, ans.Reason, ans.Required, ans.Remember = decision == "approve", keep, reason, a.required(c), remember
	ans.Passkey = req.proof
	ans.Read = c // read just above: the answer does not read it again
	shown := c
	var grant *countersign.ApprovalGrant
	if rm, ok := a.Calls.(rememberer); ok {
		c, grant, err = rm.AnswerRemember(ctx, id, ans)
	} else {
		c, err = a.Calls.Answer(ctx, id, ans)
	}
	if err != nil {
		switch code := fault.CodeOf(err); code {
		case fault.InvalidRemember, fault.InvalidEdit, fault.EditEscalated:
			return a.pageAgain(ctx, who, shown, link, err, wantJSON)
		case fault.ConfirmationDecided:
			return fail(code, "This confirmation was already decided.", a.decidedPage(c, link))
		case fault.ConfirmationExpired:
			return fail(code, "This confirmation expired.", expired)
		case fault.UnknownConfirmation:
			return fail(code, "There is no such confirmation.", approvalpage.Page{State: approvalpage.NotFound})
		case fault.Internal:
			return fail(code, "Something went wrong; try again.", approvalpage.Page{State: approvalpage.NotFound})
		case fault.Forbidden:
			// The lifecycle refused who is answering (a rule the check
			// above passed changed under it): the page says why.
			p := a.pageOf(shown, link)
			p.SignedIn, p.Refusal = who.label(), fault.ReasonOf(err)
			a.describeAsker(ctx, shown, &p)
			if wantJSON {
				return codeError(code, p.Refusal)
			}
			return a.page(http.StatusForbidden, p, false)
		default:
			return fail(code, fault.ReasonOf(err), invalid)
		}
	}
	if c.Status == countersign.StatusPending && len(c.Approvals) > 0 {
		// Counted toward a quorum that is not complete yet.
		if wantJSON {
			return jsonReply(http.StatusOK, struct {
				Status    countersign.Status `json:"status"`
				Approvals *approvalsView     `json:"approvals"`
			}{Status: c.Status, Approvals: approvalsOf(c)})
		}
		p := a.pageOf(c, link)
		p.SignedIn, p.Refusal = who.label(), a.refusal(ctx, who, c, link)
		p.Progress = fmt.Sprintf("%d of %d approvals", len(c.Approvals), c.Required)
		a.describeAsker(ctx, c, &p)
		a.describePasskey(ctx, nil, who, c, &p)
		return a.page(http.StatusOK, p, false)
	}
	if wantJSON {
		return jsonReply(http.StatusOK, struct {
			Status     countersign.Status `json:"status"`
			Operations []operationView    `json:"operations"`
			Grant      *grantView         `json:"grant,omitempty"`
		}{Status: c.Status, Operations: viewConfirmation(c, confirm.Effective(c, a.now())).Operations, Grant: viewGrant(grant, a.now())})
	}
	dp := a.decidedPage(c, link)
	if grant != nil {
		dp.Message += " " + grantText(grant)
	}
	dp.SignedIn = who.label()
	a.describeAsker(ctx, c, &dp)
	return a.page(http.StatusOK, dp, false)
}

// keptOperations reads the op fields. The page always sends
// selection=explicit with its checkboxes, so from the page an empty selection
// is an error rather than "all"; a client that sends no op and no selection
// field approves every operation (docs/api.md, The approval page).
func keptOperations(form url.Values) ([]int, error) {
	ops := form["op"]
	if len(ops) == 0 {
		if form.Get(approvalpage.SelectionField) == approvalpage.SelectionExplicit && form.Get("decision") == "approve" {
			return nil, errors.New("Select at least one operation to approve, or choose Reject all.")
		}
		return nil, nil
	}
	keep := make([]int, 0, len(ops))
	for _, s := range ops {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("op %q is not an operation index", s)
		}
		keep = append(keep, i)
	}
	return keep, nil
}

func (a *Approver) pageOf(c *countersign.Confirmation, link links.Link) approvalpage.Page {
	p := approvalpage.Page{
		Workspace: a.workspace().Name, Accent: a.workspace().AccentColor,
		State: approvalpage.Pending, ID: c.ID,
		TimeLeft: c.ExpiresAt.Sub(a.now()), ExpiresAt: c.ExpiresAt,
		Form:   approvalpage.Form{Approver: link.Approver, Exp: link.Exp, KID: link.KID, Sig: link.Sig},
		Action: "/approve/" + url.PathEscape(c.ID),
	}
	for i, op := range c.Operations {
		// The canonical form of what the approval binds, with the minimal
		// escapes of RFC 8785 (html/template escapes for the page); an
		// empty path, query or body is left out.
		po := approvalpage.Operation{Index: i, Connection: op.Connection, Method: op.Method, Path: op.Path, Endpoint: op.Endpoint,
			Args: readableArgs(op.Runs().Args), Selected: op.Selected}
		if op.Outcome != nil {
			po.Outcome = outcomeText(op.Outcome)
		}
		approvalpage.ShowNow(&po, &op)
		po.Edits = editInputs(c, i)
		p.Operations = append(p.Operations, po)
	}
	return p
}

func (a *Approver) decidedPage(c *countersign.Confirmation, link links.Link) approvalpage.Page {
	if c == nil {
		return approvalpage.Page{State: approvalpage.NotFound}
	}
	p := a.pageOf(c, link)
	p.State = approvalpage.Decided
	p.Decision = "approved"
	if c.Status == countersign.StatusRejected {
		p.Decision = "rejected"
	}
	p.Message = decisionText(c, confirm.Effective(c, a.now()))
	if sum := confirm.EditSummary(c); sum != "" {
		p.Message += " You " + sum + "; the edited call is what runs."
	}
	return p
}

// decisionText says what became of a decided confirmation, from its
// effective status: an approval not redeemed in time reads as such.
func decisionText(c *countersign.Confirmation, st countersign.Status) string {
	by := ""
	if d := c.Decider(); d != "" {
		by = " by " + d
	}
	return c.DecidedText(st, by)
}

func outcomeText(o *countersign.Outcome) string {
	if o.Error != "" {
		return "failed: " + o.Error
	}
	return fmt.Sprintf("ran: upstream answered %d %s", o.Status, http.StatusText(o.Status))
}

// page renders an approval page; HEAD gets the same status and headers
// without the body.
func (a *Approver) page(status int, p approvalpage.Page, head bool) reply {
	if p.Workspace == "" {
		p.Workspace = a.workspace().Name
	}
	if p.Accent == "" {
		p.Accent = a.workspace().AccentColor
	}
	b, headers, err := approvalpage.Render(p)
	if err != nil {
		a.logger().Error("page not rendered", "error", err)
		return rawReply(http.StatusInternalServerError, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, []byte("internal error\n"))
	}
	if head {
		b = nil
	}
	return rawReply(status, headers, b)
}
