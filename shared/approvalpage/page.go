package approvalpage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/jsonview"
	"github.com/countersign/countersign/shared/webguard"
)

// DefaultAccent is the accent colour used when Page.Accent is missing or invalid.
const DefaultAccent = "#5b21b6"

// DefaultWorkspace is shown when Page.Workspace is empty.
const DefaultWorkspace = "countersign"

// State is what the page shows.
type State uint8

// The page states. The zero State is invalid, so a forgotten field fails
// loudly instead of rendering a form.
const (
	_            State = iota
	Pending            // waiting for a decision: the form
	Decided            // approved or rejected: the decision and outcomes, no buttons
	Expired            // "This confirmation expired"
	BadSignature       // "This link is not valid", with no detail
	NotFound           // the confirmation does not exist
)

var stateNames = [...]string{"", "pending", "decided", "expired", "bad_signature", "not_found"}

// String returns the state's name ("pending", "decided", ...).
func (s State) String() string {
	if s > 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Status returns the HTTP status the page is served with (docs/api.md, The approval page):
// 200 pending and decided, 410 expired, 403 bad signature, 404 not found.
func (s State) Status() int {
	switch s {
	case Pending, Decided:
		return http.StatusOK
	case Expired:
		return http.StatusGone
	case BadSignature:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// Page is what Render shows.
type Page struct {
	// Workspace is the workspace name in the header bar; empty means
	// DefaultWorkspace.
	Workspace string
	// Accent is the header bar and Approve button colour, #rgb or #rrggbb;
	// anything else means DefaultAccent.
	Accent string
	// State selects the page.
	State State
	// ID is the confirmation id (not shown on BadSignature and NotFound pages).
	ID string
	// Title is the pending page's heading; empty means "Approve this
	// operation?" for one operation and "Approve N operations?" for more.
	Title string
	// Operations are listed on the pending and decided pages.
	Operations []Operation
	// TimeLeft is shown on the pending page: "9 minutes left", "45 seconds left".
	TimeLeft time.Duration
	// ExpiresAt is shown on the pending page beside TimeLeft (if not zero).
	ExpiresAt time.Time
	// Form holds the link fields the pending page posts back.
	Form Form
	// Action is the form's action; empty means "/approve/" + the escaped ID.
	Action string
	// Decision is "approved" or "rejected" on the decided page.
	Decision string
	// Message is an optional line shown under the heading (for example
	// "This confirmation was already decided.").
	Message string
	// Requester is the credential that asked: the key the gateway checked,
	// shown as who is asking.
	Requester string
	// Client is the client name and version last seen with the credential
	// (the MCP clientInfo or the /v1/calls client): the agent's own words,
	// shown labelled as such ("The agent says it is"), hidden characters
	// escaped and cut to display.AgentLimit runes. ClientAsks says whether
	// that client said it can ask in its own dialog ("can ask").
	Client, ClientAsks string
	// Reason is why the call needs a person (the decision's reason).
	Reason string
	// Prompt is the custom tool's exposure.prompt, when the call is one.
	Prompt string
	// DecisionReason is the reason given with a rejection (decided page).
	DecisionReason string
	// SignedIn is who is signed in on this browser (approvers.sign_in),
	// shown on the page; empty when nobody is.
	SignedIn string
	// SignOutURL, when set beside SignedIn, is where the person signs out.
	SignOutURL string
	// SignInURL, when set and nobody is signed in, is where this browser
	// may sign in to be named by its decision (approvers.sign_in not
	// required): the page offers it beside the buttons.
	SignInURL string
	// Progress is a quorum's count on the pending page ("1 of 2 approvals").
	Progress string
	// Refusal, on a pending page, says why this person may not decide:
	// the operations are shown without the form and its buttons.
	Refusal string
	// Remember, when set, offers "Approve and allow for N minutes" beside
	// Approve (approval.remember).
	Remember *Remember
	// Passkey says approving needs the person's passkey
	// (approval.passkey): on Approve the page's script asks the browser
	// to sign what is approved (PasskeyScript).
	Passkey bool
	// PasskeysURL, with Passkey, says the person signed in has no
	// passkey: the page links there to register one and its Approve is
	// disabled (they may still reject).
	PasskeysURL string
	// PasskeyAt, with Passkey, is this page's address where passkeys work
	// (the relying party's origin: localhost for a loopback address),
	// when the browser opened it elsewhere: the page links there and its
	// Approve is disabled.
	PasskeyAt string
}

// ReasonField is the pending form's optional text field: the approver's
// reason, shown to the agent when the confirmation is rejected.
const ReasonField = "reason"

// Operation is one operation of the confirmation.
type Operation struct {
	// Index is the operation's 0-based position, posted back as op=<Index>.
	Index                              int
	Connection, Method, Path, Endpoint string
	// Args is the arguments as pretty JSON (see PrettyJSON), shown in a <pre>.
	Args string
	// Selected says, on the decided page, whether the operation was kept.
	// The pending page checks every operation whatever it says.
	Selected bool
	// Outcome is shown on the decided page (pretty JSON or text).
	Outcome string
	// Summary says in words what the operation will do ("Delete contact
	// 12, John McCarthy <john@example.com>"), shown first on the pending page.
	Summary string
	// Now is the resource as it is now (the endpoint's show read), pretty
	// JSON or text (PrettyJSON), shown under "Now" on the pending page
	// with NowNote ("Read at 12:00 UTC", "Reading it answered 404", "It
	// could not be read: ..."); NowNote alone when nothing was read.
	Now, NowNote string
	// Changes are what a PUT or PATCH changes in it, a table of before
	// and after.
	Changes []Change
	// Edits are the fields the approver may change before approving
	// (approval.editable), shown as inputs on the pending page.
	Edits []Edit
}

// Change is one row of the before and after table: the dotted field and
// its values as JSON ("" when absent: the write adds or removes it).
type Change struct {
	Field, From, To string
}

// Form holds the signed link's fields, posted back as hidden inputs a, exp,
// kid and sig.
type Form struct {
	Approver string // a
	Exp      int64  // exp, Unix seconds
	KID      string // kid
	Sig      string // sig
	// CSRF, when set (a person is signed in on this browser), is the
	// per-form token bound to that sign-in, posted back as CSRFField.
	CSRF string
}

// CSRFField is the pending form's hidden field that carries Form.CSRF.
const CSRFField = "csrf"

// SelectionField is a hidden field the pending form always posts, with the
// value SelectionExplicit. Browsers send no op field when every box is
// cleared, which docs/api.md reads as "approve all" when op is absent; a POST
// carrying selection=explicit and no op means nothing was selected.
const (
	SelectionField    = "selection"
	SelectionExplicit = "explicit"
)

// newNonce returns a fresh CSP nonce; tests replace it for stable goldens.
var newNonce = func() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil // hex: valid in every CSP grammar, nothing to escape
}

var hexColour = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// view is what html writes.
type view struct {
	Page
	Nonce      string
	Accent     string // validated colours only: written into the style block as they are
	OnAccent   string
	Heading    string
	Lead       string
	TimeText   string
	ExpiresISO string
	ExpiresTxt string
	Ops        []opView
	Status     int
	ShowForm   bool
	Selection  [2]string
	// Editing is set when the form shows edit inputs: it then posts
	// EditFormField.
	Editing bool
	// Hidden says how many operations are not listed (MaxOperationsShown).
	Hidden string
	// HasNow says whether an operation shown has a Summary, Now or Changes.
	HasNow bool
}

type opView struct {
	Operation
	State string // decided page: what happened to it
	Shown bool   // the endpoint template differs from the path
	// EditInputs are the inputs of Edits the pending form shows.
	EditInputs []editView
}

// Render renders p. It returns the body and the headers to send with it
// (Content-Type, a strict Content-Security-Policy naming this render's nonce,
// Referrer-Policy, X-Content-Type-Options, X-Frame-Options, Cache-Control);
// the status is p.State.Status(). A pending page needs at least one
// operation, distinct indexes and the four link fields.
func Render(p Page) (body []byte, headers map[string]string, err error) {
	v := view{Page: p, Status: p.State.Status(), Selection: [2]string{SelectionField, SelectionExplicit}}
	switch p.State {
	case Pending:
		if len(p.Operations) == 0 {
			return nil, nil, errors.New("approvalpage: pending page without operations")
		}
		if p.Form.Approver == "" || p.Form.KID == "" || p.Form.Sig == "" {
			return nil, nil, errors.New("approvalpage: pending page without the link fields a, kid and sig")
		}
		seen := map[int]bool{}
		for _, op := range p.Operations {
			if op.Index < 0 || seen[op.Index] {
				return nil, nil, fmt.Errorf("approvalpage: operation index %d repeated or negative", op.Index)
			}
			seen[op.Index] = true
		}
		v.ShowForm = p.Refusal == ""
		v.Heading = p.Title
		if v.Heading == "" {
			v.Heading = Title(len(p.Operations))
		}
		v.TimeText = TimeLeft(p.TimeLeft)
		if !p.ExpiresAt.IsZero() {
			v.ExpiresISO = p.ExpiresAt.UTC().Format(time.RFC3339)
			v.ExpiresTxt = p.ExpiresAt.UTC().Format("2 Jan 2006, 15:04 UTC")
		}
		if v.Action == "" {
			v.Action = "/approve/" + url.PathEscape(p.ID)
		}
	case Decided:
		switch p.Decision {
		case "approved":
			v.Heading = "Approved"
		case "rejected":
			v.Heading = "Rejected"
			v.Lead = "Nothing was run."
		default:
			v.Heading = "Decided"
		}
	case Expired:
		v.Heading = "This confirmation expired"
		v.Lead = "Nothing was run. Ask the agent again to get a new confirmation."
	case BadSignature:
		v.Heading = "This link is not valid"
		v.Lead = "Open the latest link you were sent, or ask the agent again."
		v.ID, v.Operations = "", nil
	case NotFound:
		v.Heading = "This confirmation was not found"
		v.Lead = "Ask the agent again to get a new confirmation."
		v.ID, v.Operations = "", nil
	default:
		return nil, nil, fmt.Errorf("approvalpage: unknown state %s", p.State)
	}
	shown, hidden := clipOps(v.Operations)
	if hidden > 0 {
		v.Hidden = hiddenText(hidden, v.ShowForm)
	}
	v.Heading = clip(v.Heading, maxTitleCost)
	v.Message = clip(v.Message, maxMessageCost)
	v.Requester, v.Client, v.ClientAsks = clip(v.Requester, maxFieldCost), display.Clip(v.Client, display.AgentLimit), clip(v.ClientAsks, maxFieldCost)
	v.Reason, v.Prompt, v.DecisionReason = clip(v.Reason, maxMessageCost), clip(v.Prompt, maxMessageCost), clip(v.DecisionReason, maxMessageCost)
	if p.State == BadSignature || p.State == NotFound {
		v.Requester, v.Client, v.ClientAsks, v.Reason, v.Prompt, v.DecisionReason = "", "", "", "", "", ""
	}
	v.ID = clip(v.ID, maxFieldCost)
	v.Action = clip(v.Action, maxTitleCost)
	v.Form.Approver, v.Form.KID, v.Form.Sig = clip(v.Form.Approver, maxFieldCost), clip(v.Form.KID, maxFieldCost), clip(v.Form.Sig, maxFieldCost)
	v.Form.CSRF = clip(v.Form.CSRF, maxFieldCost)
	v.SignedIn, v.SignOutURL, v.SignInURL = clip(v.SignedIn, maxTitleCost), clip(v.SignOutURL, maxTitleCost), clip(v.SignInURL, maxTitleCost)
	for _, op := range shown {
		ov := opView{Operation: op, Shown: op.Endpoint != "" && op.Endpoint != op.Path}
		switch {
		case p.Decision == "rejected":
			ov.State = "Rejected, not run"
		case p.Decision == "approved" && !op.Selected:
			ov.State = "Left out, not run"
		case p.Decision == "approved":
			ov.State = "Approved"
		}
		if v.ShowForm {
			ov.EditInputs = editsOf(&op)
			v.Editing = v.Editing || len(ov.EditInputs) > 0
		}
		v.Ops = append(v.Ops, ov)
		v.HasNow = v.HasNow || (v.ShowForm && (op.Summary != "" || op.Now != "" || op.NowNote != "" || len(op.Changes) > 0))
	}
	body, headers, err = render(v)
	if err == nil && len(body) > MaxPageBytes {
		// Not reachable with the shares above; kept so the bound holds
		// whatever the markup becomes.
		for i := range v.Ops {
			v.Ops[i].Args, v.Ops[i].Outcome = "(not shown: too large for the page)", ""
			v.Ops[i].Now, v.Ops[i].Changes, v.Ops[i].EditInputs = "", nil, nil
		}
		v.Editing = false
		body, headers, err = render(v)
	}
	return body, headers, err
}

// RenderError renders a plain page with status's text as its heading and
// msg under it, with the same headers as Render.
func RenderError(status int, msg string) ([]byte, map[string]string, error) {
	h := http.StatusText(status)
	if h == "" {
		h = "Something went wrong"
	}
	return render(view{Heading: h, Lead: clip(msg, maxMessageCost), Status: status})
}

// writePage writes a finished view; the tests check each page it writes
// against html/template's rendering of testdata/page.tmpl.
var writePage = (*view).html

func render(v view) ([]byte, map[string]string, error) {
	nonce, err := newNonce()
	if err != nil {
		return nil, nil, fmt.Errorf("approvalpage: nonce: %w", err)
	}
	v.Nonce = nonce
	csp := "default-src 'none'; style-src 'nonce-" + nonce + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if v.signs() {
		csp += "; script-src 'nonce-" + nonce + "'; connect-src 'self'"
	}
	if v.Workspace == "" {
		v.Workspace = DefaultWorkspace
	}
	v.Workspace = clip(v.Workspace, maxFieldCost)
	accent := DefaultAccent
	if hexColour.MatchString(v.Page.Accent) {
		accent = v.Page.Accent
	}
	v.Accent, v.OnAccent = accent, config.TextOn(accent)
	h := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": csp,
		"Cache-Control":           "no-store",
	}
	for k, v := range webguard.PageHeaders {
		h[k] = v
	}
	return writePage(&v), h, nil
}

// Title returns "Approve this operation?" for n == 1 and "Approve n
// operations?" otherwise.
func Title(n int) string {
	if n == 1 {
		return "Approve this operation?"
	}
	return fmt.Sprintf("Approve %d operations?", n)
}

// TimeLeft says how long is left: whole minutes from one minute up ("9
// minutes left", "1 minute left"), seconds (rounded up) below ("45 seconds
// left"), and "No time left" at zero or less.
func TimeLeft(d time.Duration) string {
	switch {
	case d <= 0:
		return "No time left"
	case d >= time.Minute:
		return plural(int(d/time.Minute), "minute") + " left"
	default:
		return plural(int(math.Ceil(d.Seconds())), "second") + " left"
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// PrettyJSON indents raw JSON for Operation.Args and Operation.Outcome,
// within argsLimits (jsonview.Pretty): depth, members, strings and size are
// bounded, and what is left out is marked "truncated". Raw that is not JSON
// is returned as text (bounded the same way), and empty raw as "".
func PrettyJSON(raw []byte) string {
	s, _ := jsonview.Pretty(raw, &argsLimits)
	return s
}
