package operatorpage

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/webguard"
)

// Page is what Render shows. With Operator empty it is the login form.
type Page struct {
	// Workspace and Accent are the header bar's name and colour (#rgb or #rrggbb).
	Workspace, Accent string
	// Operator is the signed-in operator: a key's credential id, or a
	// person's e-mail.
	Operator string
	// Person marks an operator signed in as a person: they sign out where
	// people sign out (the sign-in's own page), not with the key's form.
	Person bool
	// PersonSignIn offers, on the sign-in page, the sign-in of people.
	PersonSignIn bool
	// CSRF is the token every form posts back (field csrf).
	CSRF string
	// Message is shown under the heading (a result or an error).
	Message string
	// Error marks Message as a failure.
	Error         bool
	Reviews       []Review
	Confirmations []Confirmation
	Credentials   []Credential
	Audit         []AuditRecord
	// NextReviews, NextConfirmations, NextCredentials and NextAudit are
	// the addresses of each list's next page ("" when it has no more).
	NextReviews, NextConfirmations, NextCredentials, NextAudit string
	// Grants are the remembered approvals (approval.remember);
	// NextGrants their next page.
	Grants     []Grant
	NextGrants string
	// NewKey is a key just created (for NewKeyFor), shown this once.
	NewKey, NewKeyFor string
	// Detail, when set, is the page of one credential instead of the lists.
	Detail *CredentialPage
	// Trial links the dashboard to the policy trial (a candidate policy
	// is configured); Shadow, when set, is that page instead of the lists.
	Trial  bool
	Shadow *ShadowPage
	// Operations, when set, is the operations page instead of the lists.
	Operations *OperationsPage
}

// Review is one review item.
type Review struct {
	ID, Credential, Status, Reason string
	Method, Path, Connection       string
	// Args is the call's arguments, readable (pretty JSON, bounded).
	Args      string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Pending items get the Run and Dismiss forms.
	Pending bool
	// DecidedBy, Note and Outcome describe a decided item.
	DecidedBy, Note, Outcome string
}

// Confirmation is one confirmation.
type Confirmation struct {
	ID, Kind, Credential, Status string
	Operations                   []string
	ExpiresAt                    time.Time
}

// Credential is one credential and the client last seen with it.
type Credential struct {
	ID, Choice string
	ReadOnly   bool
	Operator   bool
	// Client is the client name and version the agent sent: its own words,
	// shown labelled as such and cut to display.AgentLimit runes.
	Client       string
	ClientCanAsk bool
	ClientSeen   time.Time
	Connections  string
	HasClient    bool
	// Person is the person a user credential names (their e-mail): the
	// list shows who each user is.
	Person string
}

// AuditRecord is one audit record.
type AuditRecord struct {
	At                                      time.Time
	Chain                                   string
	Seq                                     int64
	Actor, Action, Subject, Outcome, Reason string
	What                                    string
}

// Limits on what an agent controls, so the page stays bounded.
const (
	maxField = 256
	maxText  = 4 << 10
	// MaxRows bounds each list.
	MaxRows = 200
)

var hexColour = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// newNonce returns a CSP nonce; tests replace it.
var newNonce = func() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

type view struct {
	Page
	Nonce string
	// Accent replaces Page.Accent: validated, or the default.
	Accent string
	Title  string
}

// writePage writes a finished view; the tests check each page it writes
// against html/template's rendering of testdata/page.tmpl.
var writePage = (*view).html

// Render renders p with its headers (the approval page's: strict CSP,
// no framing, no caching, no referrer).
func Render(p Page) ([]byte, map[string]string, error) {
	nonce, err := newNonce()
	if err != nil {
		return nil, nil, fmt.Errorf("operatorpage: nonce: %w", err)
	}
	v := view{Page: bound(p), Nonce: nonce, Accent: "#5b21b6", Title: "Operator"}
	if hexColour.MatchString(p.Accent) {
		v.Accent = p.Accent
	}
	if v.Workspace == "" {
		v.Workspace = "countersign"
	}
	if v.Operator == "" {
		v.Title = "Operator sign-in"
	}
	h := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'nonce-" + nonce + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"Cache-Control":           "no-store",
	}
	for k, v := range webguard.PageHeaders {
		h[k] = v
	}
	return writePage(&v), h, nil
}

// bound clips what agents and operators control and the number of rows.
func bound(p Page) Page {
	p.Workspace, p.Operator, p.Message = clip(p.Workspace, maxField), clip(p.Operator, maxField), clip(p.Message, maxText)
	if len(p.Reviews) > MaxRows {
		p.Reviews = p.Reviews[:MaxRows]
	}
	if len(p.Confirmations) > MaxRows {
		p.Confirmations = p.Confirmations[:MaxRows]
	}
	if len(p.Credentials) > MaxRows {
		p.Credentials = p.Credentials[:MaxRows]
	}
	if len(p.Audit) > MaxRows {
		p.Audit = p.Audit[:MaxRows]
	}
	rv := make([]Review, len(p.Reviews))
	for i, r := range p.Reviews {
		r.Reason, r.Args, r.Note, r.Outcome = clip(r.Reason, maxText), clip(r.Args, maxText), clip(r.Note, maxText), clip(r.Outcome, maxText)
		r.Path, r.Credential, r.DecidedBy = clip(r.Path, maxField), clip(r.Credential, maxField), clip(r.DecidedBy, maxField)
		rv[i] = r
	}
	p.Reviews = rv
	au := make([]AuditRecord, len(p.Audit))
	for i, a := range p.Audit {
		a.Reason, a.What, a.Subject = clip(a.Reason, 512), clip(a.What, 512), clip(a.Subject, maxField)
		au[i] = a
	}
	p.Audit = au
	cr := make([]Credential, len(p.Credentials))
	for i, c := range p.Credentials {
		c.Client = display.Clip(c.Client, display.AgentLimit)
		c.Person = clip(c.Person, maxField)
		cr[i] = c
	}
	p.Credentials = cr
	p.Grants = boundGrants(p.Grants)
	p.NewKeyFor = clip(p.NewKeyFor, maxField)
	p.Detail = boundDetail(p.Detail)
	p.Shadow = boundShadow(p.Shadow)
	p.Operations = boundOperations(p.Operations)
	return p
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (truncated)"
}
