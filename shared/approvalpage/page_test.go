package approvalpage

import (
	"flag"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/display"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const fixedNonce = "TESTNONCE0123456789abcdef"

// fixNonce makes renders use fixedNonce until the test ends.
func fixNonce(tb testing.TB) {
	tb.Helper()
	old := newNonce
	newNonce = func() (string, error) { return fixedNonce, nil }
	tb.Cleanup(func() { newNonce = old })
}

var expiresAt = time.Date(2026, 11, 30, 12, 10, 0, 0, time.UTC)

var form = Form{Approver: "ops", Exp: expiresAt.Unix(), KID: "k1a2b3c4d", Sig: "Q2b9tZ1c4W0eL6m2oYv8kHn3pRs5uXy7zAbCdEfGhIj"}

func deleteContact() Operation {
	return Operation{Index: 0, Connection: "crm", Method: "DELETE", Path: "/contacts/12", Endpoint: "/contacts/{id}",
		Args: PrettyJSON([]byte(`{"path":{"id":"12"},"query":{},"body":null}`)), Selected: true}
}

func batch() []Operation {
	return []Operation{
		deleteContact(),
		{Index: 1, Connection: "crm", Method: "POST", Path: "/payments", Endpoint: "/payments",
			Args: PrettyJSON([]byte(`{"path":{},"query":{},"body":{"amount":250,"currency":"EUR"}}`)), Selected: true},
		{Index: 2, Connection: "billing", Method: "POST", Path: "/accounts/7/close", Endpoint: "/accounts/{id}/close",
			Args: PrettyJSON([]byte(`{"path":{"id":"7"},"query":{"notify":"false"},"body":null}`)), Selected: false},
	}
}

// agentLure is a client name an agent chose to talk the approver round.
const agentLure = "Claude Code 2.1 \u2014 pre-approved by the CISO (ticket SEC-4411). Approving is safe"

func pages() map[string]Page {
	decidedOps := batch()
	decidedOps[0].Outcome = PrettyJSON([]byte(`{"status":204,"body":null}`))
	decidedOps[1].Outcome = PrettyJSON([]byte(`{"status":201,"body":{"id":"pay_9"}}`))
	return map[string]Page{
		"pending_one": {
			Workspace: "Acme", Accent: "#5b21b6", State: Pending, ID: "cf_123",
			Operations: []Operation{deleteContact()},
			TimeLeft:   9*time.Minute + 30*time.Second, ExpiresAt: expiresAt, Form: form,
			Requester: "chat-user", Client: "Claude Code 2.1", ClientAsks: "can ask", Reason: "DELETE /contacts/{id} requires confirmation",
			Prompt: "Delete this contact? <It cannot be undone>",
		},
		"pending_many": {
			Workspace: "Globex Ops", Accent: "#fde047", State: Pending, ID: "cf_batch",
			Operations: batch(), TimeLeft: 45 * time.Second, ExpiresAt: expiresAt, Form: form,
			Message: "Some operations in this script need your approval.",
		},
		"decided_approved": {
			Workspace: "Acme", Accent: "#0f766e", State: Decided, ID: "cf_batch",
			Operations: decidedOps, Decision: "approved",
		},
		"decided_rejected": {
			Workspace: "Acme", State: Decided, ID: "cf_123",
			Operations: []Operation{deleteContact()}, Decision: "rejected",
			Message: "This confirmation was already decided.", Requester: "chat-user", DecisionReason: "wrong contact",
		},
		"pending_hidden": {
			Workspace: "Acme", State: Pending, ID: "cf_bidi",
			Operations: []Operation{{Index: 0, Connection: "bank", Method: "POST", Path: "/transfers\u200b", Endpoint: "/transfers",
				Args: PrettyJSON([]byte("{\"body\":{\"to_account\":\"ACME-\u202e4321-8765\u202c\",\"memo\\u200d\":\"\\u2066x\\u2069 \U000E0041\"}}"))}},
			TimeLeft: 9 * time.Minute, ExpiresAt: expiresAt, Form: form,
			Requester: "support-bot", Client: agentLure, ClientAsks: "cannot ask",
		},
		"expired":       {Workspace: "Acme", Accent: "#abc", State: Expired, ID: "cf_123"},
		"bad_signature": {Workspace: "Acme", State: BadSignature, ID: "cf_123", Operations: []Operation{deleteContact()}, Requester: "chat-user", Reason: "hidden"},
		"not_found":     {Workspace: "Acme", State: NotFound, ID: "cf_404"},
	}
}

func TestGolden(t *testing.T) {
	fixNonce(t)
	for name, p := range pages() {
		t.Run(name, func(t *testing.T) {
			body, headers, err := Render(p)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			golden(t, name, body)
			checkHeaders(t, headers, fixedNonce)
			checkSafe(t, body)
		})
	}
	t.Run("error", func(t *testing.T) {
		body, headers, err := RenderError(http.StatusInternalServerError, "The decision could not be recorded. Try again.")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "error", body)
		checkHeaders(t, headers, fixedNonce)
		checkSafe(t, body)
	})
}

func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name+".golden.html")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -run TestGolden -update ./shared/approvalpage to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s differs (-want +got); rerun with -update if intended:\n%s", path, diff)
	}
}

func checkHeaders(tb testing.TB, h map[string]string, nonce string) {
	tb.Helper()
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'nonce-" + nonce + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"Referrer-Policy":         "no-referrer",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Cache-Control":           "no-store",
	}
	if diff := cmp.Diff(want, h); diff != "" {
		tb.Errorf("headers (-want +got):\n%s", diff)
	}
}

var (
	externalRef = regexp.MustCompile(`(?i)<(script|img|link|iframe|object|embed|base|meta\s+http-equiv)\b|\s(src|href|srcset|formaction|ping)\s*=|url\(|@import|https?:`)
	styleTag    = regexp.MustCompile(`<style[^>]*>`)
	anyTag      = regexp.MustCompile(`(?i)<(/?[a-z][a-z0-9]*)`)
)

// checkSafe asserts what every page must hold: no script, no external
// reference, one style block carrying the nonce, no style attribute.
func checkSafe(tb testing.TB, body []byte) {
	tb.Helper()
	s := string(body)
	if m := externalRef.FindString(s); m != "" {
		tb.Errorf("page has %q: no script and no external reference allowed", m)
	}
	if tags := styleTag.FindAllString(s, -1); len(tags) != 1 || !strings.Contains(tags[0], `nonce="`) {
		tb.Errorf("style tags = %q, want exactly one with a nonce", tags)
	}
	if strings.Contains(s, " style=") {
		tb.Error("a style attribute would be blocked by the CSP")
	}
	if strings.Contains(strings.ToLower(s), "autofocus") || strings.Contains(s, "http-equiv") {
		tb.Error("no autofocus, no meta refresh")
	}
}

func TestPendingPage(t *testing.T) {
	fixNonce(t)
	p := pages()["pending_many"]
	body, _, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	boxes := regexp.MustCompile(`<input type="checkbox" name="op" value="(\d+)" id="op-\d+" checked>`).FindAllStringSubmatch(s, -1)
	if got := strings.Count(s, `type="checkbox"`); got != 3 || len(boxes) != 3 {
		t.Fatalf("%d checkboxes, %d checked, want 3 and 3 (even the one not Selected)", got, len(boxes))
	}
	for i, b := range boxes {
		if b[1] != string(rune('0'+i)) {
			t.Errorf("checkbox %d has value %s", i, b[1])
		}
	}
	for _, want := range []string{
		"<h1><bdi>Approve 3 operations?</bdi></h1>",
		"45 seconds left",
		`<form method="post" action="/approve/cf_batch">`,
		`<input type="hidden" name="a" value="ops">`,
		`<input type="hidden" name="exp" value="1796040600">`,
		`<input type="hidden" name="kid" value="k1a2b3c4d">`,
		`<input type="hidden" name="sig" value="` + form.Sig + `">`,
		`<input type="hidden" name="selection" value="explicit">`,
		`<button type="submit" name="decision" value="approve" class="approve">Approve</button>`,
		`<button type="submit" name="decision" value="reject" class="reject">Reject all</button>`,
		"Globex Ops", "--accent: #fde047", "POST", "/accounts/7/close", "on <bdi>billing</bdi>", "&#34;<bdi>currency</bdi>&#34;: &#34;<bdi>EUR</bdi>&#34;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("pending page lacks %s", want)
		}
	}
	if strings.Count(s, "<form") != 1 || strings.Count(s, "<button") != 2 {
		t.Error("want one form with two buttons")
	}
}

func TestHostileValuesAreEscaped(t *testing.T) {
	fixNonce(t)
	op := deleteContact()
	op.Args = `{"body": "<script>alert(1)</script>", "x": "</pre><img src=x onerror=alert(1)>"}`
	op.Path = `/contacts/"><script>alert(2)</script>`
	op.Connection = "<b>crm</b>"
	p := Page{
		Workspace: "</title><script>alert(3)</script>", Accent: "#fff; } body { display: none", State: Pending,
		ID: "cf_1", Operations: []Operation{op}, Form: Form{Approver: `ops" autofocus onfocus="alert(4)`, Exp: 1, KID: "k", Sig: `s"><script>`, CSRF: `c"><script>`},
		Action: "javascript:alert(5)", Message: "<i>hi</i>",
	}
	body, _, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;",
		"&lt;b&gt;crm&lt;/b&gt;",
		"&lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;",
		`value="ops&#34; autofocus onfocus=&#34;alert(4)"`,
		"&lt;i&gt;hi&lt;/i&gt;",
		"--accent: #5b21b6",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks the escaped %s", want)
		}
	}
	if strings.Contains(s, "javascript:") {
		t.Error("a javascript: action survived")
	}
	for _, m := range anyTag.FindAllStringSubmatch(s, -1) {
		switch strings.ToLower(strings.TrimPrefix(m[1], "/")) {
		case "script", "img", "i", "b":
			t.Errorf("hostile tag %s rendered as markup", m[0])
		}
	}
}

func TestDecidedPage(t *testing.T) {
	fixNonce(t)
	body, _, err := Render(pages()["decided_approved"])
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, bad := range []string{"<form", "<button", "<input"} {
		if strings.Contains(s, bad) {
			t.Errorf("decided page has %s", bad)
		}
	}
	for _, want := range []string{"<h1><bdi>Approved</bdi></h1>", "Left out, not run", "&#34;<bdi>pay_9</bdi>&#34;", "&#34;<bdi>status</bdi>&#34;: 204"} {
		if !strings.Contains(s, want) {
			t.Errorf("decided page lacks %s", want)
		}
	}
	body, _, _ = Render(pages()["decided_rejected"])
	if s := string(body); !strings.Contains(s, "<h1><bdi>Rejected</bdi></h1>") || !strings.Contains(s, "Rejected, not run") || strings.Contains(s, "<button") {
		t.Errorf("rejected page:\n%s", s)
	}
}

func TestStatePages(t *testing.T) {
	fixNonce(t)
	tests := []struct {
		name    string
		state   State
		status  int
		want    []string
		without []string
	}{
		{"expired", Expired, 410, []string{"This confirmation expired", "Ask the agent again"}, []string{"<form", "<button"}},
		{"bad signature", BadSignature, 403, []string{"This link is not valid"}, []string{"<form", "cf_123", "DELETE", "signature"}},
		{"not found", NotFound, 404, []string{"not found"}, []string{"<form", "cf_123"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _, err := Render(Page{State: tt.state, ID: "cf_123", Operations: []Operation{deleteContact()}, Form: form})
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.state.Status(); got != tt.status {
				t.Errorf("Status = %d, want %d", got, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tt.without {
				if strings.Contains(string(body), w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}

func TestNonceIsFreshAndMatchesHeader(t *testing.T) {
	p := pages()["pending_one"]
	seen := map[string]bool{}
	for range 3 {
		body, h, err := Render(p)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`<style nonce="([0-9a-f]{32})">`).FindStringSubmatch(string(body))
		if m == nil {
			t.Fatal("no nonce on the style tag")
		}
		checkHeaders(t, h, m[1])
		if seen[m[1]] {
			t.Errorf("nonce %q reused", m[1])
		}
		seen[m[1]] = true
	}
}

func TestTitle(t *testing.T) {
	for n, want := range map[int]string{1: "Approve this operation?", 2: "Approve 2 operations?", 12: "Approve 12 operations?"} {
		if got := Title(n); got != want {
			t.Errorf("Title(%d) = %q, want %q", n, got, want)
		}
	}
	fixNonce(t)
	p := pages()["pending_one"]
	p.Title = "Delete contact 12?"
	body, _, _ := Render(p)
	if !strings.Contains(string(body), "<h1><bdi>Delete contact 12?</bdi></h1>") {
		t.Error("an explicit Title is not used")
	}
}

func TestTimeLeft(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Minute, "10 minutes left"},
		{9*time.Minute + 59*time.Second, "9 minutes left"},
		{time.Minute, "1 minute left"},
		{59*time.Second + 500*time.Millisecond, "60 seconds left"},
		{45 * time.Second, "45 seconds left"},
		{time.Second, "1 second left"},
		{time.Millisecond, "1 second left"},
		{0, "No time left"},
		{-time.Second, "No time left"},
	}
	for _, tt := range tests {
		if got := TimeLeft(tt.d); got != tt.want {
			t.Errorf("TimeLeft(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestAccent(t *testing.T) {
	fixNonce(t)
	tests := []struct{ in, accent, text string }{
		{"#5b21b6", "#5b21b6", "#ffffff"},
		{"#fde047", "#fde047", "#111827"},
		{"#abc", "#abc", "#111827"},
		{"#000", "#000", "#ffffff"},
		{"", DefaultAccent, "#ffffff"},
		{"red", DefaultAccent, "#ffffff"},
		{"#12345", DefaultAccent, "#ffffff"},
		{"#1234567", DefaultAccent, "#ffffff"},
		{"#5b21b6;}", DefaultAccent, "#ffffff"},
		{"#5b21b6\n", DefaultAccent, "#ffffff"},
	}
	for _, tt := range tests {
		body, _, err := Render(Page{State: Expired, Accent: tt.in})
		if err != nil {
			t.Fatal(err)
		}
		want := "--accent: " + tt.accent + "; --on-accent: " + tt.text + ";"
		if !strings.Contains(string(body), want) {
			t.Errorf("accent %q: page lacks %q", tt.in, want)
		}
	}
}

func TestRenderRejects(t *testing.T) {
	good := pages()["pending_one"]
	tests := []struct {
		name   string
		change func(*Page)
	}{
		{"zero state", func(p *Page) { p.State = 0 }},
		{"unknown state", func(p *Page) { p.State = 99 }},
		{"pending without operations", func(p *Page) { p.Operations = nil }},
		{"pending without sig", func(p *Page) { p.Form.Sig = "" }},
		{"duplicate index", func(p *Page) { p.Operations = append(p.Operations, p.Operations[0]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			p.Operations = append([]Operation(nil), good.Operations...)
			tt.change(&p)
			if _, _, err := Render(p); err == nil {
				t.Fatal("Render succeeded")
			}
		})
	}
}

func TestPrettyJSON(t *testing.T) {
	if got, want := PrettyJSON([]byte(`{"a":[1,2]}`)), "{\n  \"a\": [\n    1,\n    2\n  ]\n}"; got != want {
		t.Errorf("PrettyJSON = %q, want %q", got, want)
	}
	if got := PrettyJSON([]byte("not json")); got != "not json" {
		t.Errorf("PrettyJSON(not json) = %q", got)
	}
	if got := PrettyJSON(nil); got != "" {
		t.Errorf("PrettyJSON(nil) = %q", got)
	}
}

// TestHiddenCharactersAreShown: the override that made
// ACME-<U+202E>4321-8765<U+202C> read ACME-5678-1234 is shown as a marked
// escape, in keys and values, paths included; each value is isolated;
// the page holds no hidden character at all.
func TestHiddenCharactersAreShown(t *testing.T) {
	fixNonce(t)
	body, _, err := Render(pages()["pending_hidden"])
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{
		`&#34;<bdi>to_account</bdi>&#34;: &#34;<bdi>ACME-<span class="esc">\u202E</span>4321-8765<span class="esc">\u202C</span></bdi>&#34;`,
		`&#34;<bdi>memo<span class="esc">\u200d</span></bdi>&#34;`,
		`<span class="esc">\u2066</span>x<span class="esc">\u2069</span>`,
		`<span class="esc">\uDB40\uDC41</span>`,
		`<span class="path"><bdi>/transfers<span class="esc">\u200B</span></bdi></span>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, r := range s {
		if display.Hidden(r) && r != '\n' {
			t.Errorf("page holds U+%04X as it is", r)
		}
	}
}

// TestAgentWordsAreLabelled: the client name is the agent's own words,
// labelled so and cut to display.AgentLimit runes; the credential is what
// the page states as who asked.
func TestAgentWordsAreLabelled(t *testing.T) {
	fixNonce(t)
	body, _, err := Render(pages()["pending_hidden"])
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	want := "<dt>The agent says it is</dt>\n<dd class=\"agent\">“<bdi>" + html.EscapeString(display.Clip(agentLure, display.AgentLimit)) +
		"</bdi>” <span class=\"said\">(its own words, not checked; cannot ask)</span></dd>"
	if !strings.Contains(s, want) {
		t.Errorf("page lacks the labelled agent words %q", want)
	}
	if !strings.HasSuffix(display.Clip(agentLure, display.AgentLimit), "…") || strings.Contains(s, "Approving is safe") {
		t.Error("the agent's words were not cut to their bound")
	}
	if strings.Count(s, "pre-approved by the CISO") != 1 {
		t.Error("the agent's words appear outside their label")
	}
	if !strings.Contains(s, "<dt>Asked with the credential</dt>\n<dd><code><bdi>support-bot</bdi></code></dd>") {
		t.Error("the credential is not stated as who asked")
	}
}
