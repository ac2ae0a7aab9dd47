package operatorpage

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/display"
)

// refTemplate is the page as an html/template: the reference the
// hand-written renderer must match byte for byte.
var refTemplate = template.Must(template.New("page.tmpl").Funcs(template.FuncMap{
	"when": when,
	"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// Values a person reads go through package display, as in the page.
	"value":   func(s string) template.HTML { return template.HTML(display.HTML(s)) },
	"lines":   func(s string) template.HTML { return template.HTML(display.BlockHTML(s)) },
	"json":    func(s string) template.HTML { return template.HTML(display.JSONHTML(s)) },
	"plain":   display.Text,
	"css":     func() template.CSS { return template.CSS(display.CSS) },
	"nav":     func() []NavItem { return Nav[:] },
	"choices": func() []string { return Choices[:] },
	"confs": func(list []Confirmation, all bool, none string) any {
		return struct {
			List []Confirmation
			All  bool
			None string
		}{list, all, none}
	},
	"grants": func(list []Grant, withCredential bool, csrf string) any {
		return struct {
			List           []Grant
			WithCredential bool
			CSRF           string
		}{list, withCredential, csrf}
	},
}).ParseFiles("testdata/page.tmpl"))

// refView is view as the template sees it: the accent typed as CSS, as
// Render validated it.
type refView struct {
	view
	Accent template.CSS
	// Current is the page the navigation marks.
	Current string
}

// mismatches counts pages whose hand-written rendering differed from the
// reference; TestMain fails the run if any did.
var (
	mismatches atomic.Int64
	compared   atomic.Int64
)

// TestMain makes every page any test renders go through both renderers.
func TestMain(m *testing.M) {
	writePage = func(v *view) []byte {
		got := v.html()
		var want bytes.Buffer
		if err := refTemplate.Execute(&want, refView{view: *v, Accent: template.CSS(v.Accent), Current: v.current()}); err != nil {
			panic(err)
		}
		compared.Add(1)
		if !bytes.Equal(got, want.Bytes()) && mismatches.Add(1) <= 3 {
			fmt.Fprintf(os.Stderr, "operatorpage: the hand-written page differs from html/template's (-want +got):\n%s\n",
				cmp.Diff(want.String(), string(got)))
		}
		return got
	}
	code := m.Run()
	if n := mismatches.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "operatorpage: %d of %d pages differ from html/template's rendering of testdata/page.tmpl\n", n, compared.Load())
		code = 1
	}
	os.Exit(code)
}

// TestRendererMatchesTemplate renders values chosen to exercise every
// escape (and the URL normalisation of the review forms' action) in every
// part of the page through both renderers.
func TestRendererMatchesTemplate(t *testing.T) {
	nasty := []string{"", "plain", `"'&<>+`, "\x00nul", "\xff\xfeinvalid", "é ü 漢字 😀", "\ufdd0\uffff", "a\nb\tc",
		"&amp; &#34;", "%zz %41 100%", "/a b/\"c\"?d=<e>", "javascript:alert(1)", "{\"a\": [1, \"\\u202e\"]}"}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	n := 0
	for i, s := range nasty {
		review := Review{ID: s, Credential: s, Status: s, Reason: s, Method: s, Path: s, Connection: s, Args: s,
			CreatedAt: at, ExpiresAt: at, Pending: i%2 == 0, DecidedBy: s, Note: s, Outcome: s}
		decided := review
		decided.Pending = false
		for _, p := range []Page{
			{Workspace: s, Accent: "#abc", CSRF: s, Message: s, Error: i%2 == 0},
			{Workspace: s, CSRF: s, Message: s, PersonSignIn: true},
			{Workspace: s, Operator: s, Person: true, CSRF: s, Message: s},
			{Workspace: s, Operator: s, CSRF: s, NewKey: s, NewKeyFor: s, Detail: &CredentialPage{
				Credential: Credential{ID: s, Choice: s, ReadOnly: i%2 == 0, Operator: i%3 == 0, Client: s, ClientCanAsk: i%2 == 1, ClientSeen: at, Connections: s, HasClient: i%2 == 0},
				Origin:     s, Person: s, PendingMore: i%2 == 1,
				Pending: []Confirmation{{ID: s, Operations: []string{s}, ExpiresAt: at}},
				Grants:  []Grant{{ID: s, Credential: s, What: s, GrantedBy: s, Status: s, CallsLeft: i, MaxCalls: 3, ExpiresAt: at}},
				User:    i%2 == 0, OAuthGrantsMore: i%3 == 0,
				OAuthGrants: []OAuthGrant{{ID: s, Client: s, Resource: s, Status: "active", CreatedAt: at, ExpiresAt: at},
					{ID: s, Client: s, Resource: s, Status: s, CreatedAt: at, ExpiresAt: at}},
			}},
			{Operator: "root", CSRF: s, Detail: &CredentialPage{Credential: Credential{ID: s}, User: true}},
			{Operator: "root", CSRF: s, Detail: &CredentialPage{Credential: Credential{ID: s, Choice: "ask_agent"}}},
			{Operator: s, CSRF: s, Trial: true, Message: s},
			{Operator: s, CSRF: s, Shadow: &ShadowPage{Candidate: s, Differences: i, Truncated: i%2 == 0,
				Examples: []ShadowExample{{At: at, Credential: s, Endpoint: s, Differs: s, Rule: s, Count: i}}}},
			{Operator: s, CSRF: s, Shadow: &ShadowPage{Candidate: s}},
			{Workspace: s, Accent: s, Operator: s, CSRF: s, Message: s, Error: i%3 == 0,
				Reviews:       []Review{review, decided, {ID: s}},
				Confirmations: []Confirmation{{ID: s, Kind: s, Credential: s, Status: s, Operations: []string{s, s}, ExpiresAt: at}, {}},
				Credentials: []Credential{{ID: s, Choice: s, ReadOnly: i%2 == 0, Operator: i%3 == 0, Client: s, ClientCanAsk: i%2 == 1,
					ClientSeen: at, Connections: s, HasClient: true, Person: s}, {ID: s}},
				Audit: []AuditRecord{{At: at, Chain: s, Seq: int64(i), Actor: s, Action: s, Subject: s, Outcome: s, Reason: s, What: s}, {}},
			},
			{Operator: "root", Accent: "#123456"},
			{Operator: s, CSRF: s, Operations: &OperationsPage{Credential: s, Credentials: []string{"a", s},
				Connections: []OperationsConnection{{Name: s, Rules: []string{s, "hooks"}, Operations: []Operation{
					{Method: s, Path: s, Tier: s, Rules: []string{s}, Outcome: s, Rule: s}, {Method: "GET", Path: "/x"}}}, {Name: "empty"}}}},
			{Operator: s, CSRF: s, Operations: &OperationsPage{Credentials: []string{s}, Connections: []OperationsConnection{{Name: "crm",
				Operations: []Operation{{Method: "GET", Path: s, Tier: "auto"}}}}}},
			{Operator: s, Operations: &OperationsPage{}},
		} {
			if _, _, err := Render(p); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if mismatches.Load() > 0 {
		t.Errorf("%d pages differ from html/template's (see above)", mismatches.Load())
	}
	t.Logf("%d pages rendered by both", n)
}
