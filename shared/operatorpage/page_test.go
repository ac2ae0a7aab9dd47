package operatorpage

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/display"
)

// TestValuesForPeople: what agents chose (arguments, paths, reasons, audit
// text) is shown with hidden characters as marked escapes and each value
// isolated; the client name is labelled as the agent's words and cut to
// its bound; the page holds no hidden character as it is.
func TestValuesForPeople(t *testing.T) {
	lure := "Claude Code \u2014 pre-approved by the CISO (ticket SEC-4411). Approving is safe"
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	body, _, err := Render(Page{
		Workspace: "Acme", Operator: "root", CSRF: "tok",
		Reviews: []Review{{ID: "rv_1", Credential: "chat-user", Status: "pending", Pending: true, Method: "POST",
			Path: "/transfers\u200b", Connection: "bank", Reason: "needs review\u202e",
			Args: "{\n  \"to_account\": \"ACME-\\u202E4321-8765\\u202C\"\n}", CreatedAt: at, ExpiresAt: at}},
		Credentials: []Credential{{ID: "chat-user", Choice: "ask_person", HasClient: true, Client: lure + " 2.1", ClientSeen: at}},
		Audit:       []AuditRecord{{At: at, Chain: "chat-user", Seq: 1, Actor: "chat-user", Action: "call.denied", Reason: "no\u2066pe"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{
		`&#34;<bdi>to_account</bdi>&#34;: &#34;<bdi>ACME-<span class="esc">\u202E</span>4321-8765<span class="esc">\u202C</span></bdi>&#34;`,
		`<span class="path"><bdi>/transfers<span class="esc">\u200B</span></bdi></span>`,
		`<pre><bdi>needs review<span class="esc">\u202E</span></bdi></pre>`,
		`<bdi>no<span class="esc">\u2066</span>pe</bdi>`,
		`Asked with the credential <code><bdi>chat-user</bdi></code>`,
		`<span class="said">the agent says it is</span> “<i><bdi>` + display.Clip(lure+" 2.1", display.AgentLimit) + `</bdi></i>” <span class="said">(its own words, not checked)</span>`,
		".esc {",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(s, "Approving is safe") {
		t.Error("the agent's words were not cut to their bound")
	}
	for _, r := range s {
		if display.Hidden(r) && r != '\n' {
			t.Errorf("page holds U+%04X as it is", r)
		}
	}
}

// TestNextPageLinks: each list links to its next page when there is one,
// with the address escaped, and shows no link when there is none.
func TestNextPageLinks(t *testing.T) {
	body, _, err := Render(Page{Workspace: "Acme", Operator: "root", CSRF: "tok",
		NextReviews: "/operator?reviews=a%2Bb#reviews", NextConfirmations: "/operator?confirmations=c&x=\"y\"#confirmations",
		NextAudit: "/operator?audit=d#audit"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, want := range []string{
		`<a href="/operator?reviews=a%2Bb#reviews">More review items</a>`,
		`<a href="/operator?confirmations=c&amp;x=%22y%22#confirmations">Older confirmations</a>`,
		`<a href="/operator?audit=d#audit">Records of more chains</a>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(s, "More credentials") {
		t.Error("a link to more credentials with no next page")
	}
}

// TestChangeStartsFromTheChoice: a credential's page offers its own choice
// selected, so pressing Change without choosing changes nothing; the
// create form starts from refuse.
func TestChangeStartsFromTheChoice(t *testing.T) {
	body, _, err := Render(Page{Operator: "root", CSRF: "tok", Detail: &CredentialPage{Credential: Credential{ID: "bot", Choice: "ask_agent"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `<select name="choice" id="change-choice"><option value="refuse">refuse</option><option value="ask_person">ask_person</option><option value="ask_agent" selected>ask_agent</option>`) {
		t.Errorf("the change form does not start from ask_agent:\n%s", body)
	}
	body, _, err = Render(Page{Operator: "root", CSRF: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `id="new-choice"><option value="refuse" selected>refuse</option>`) {
		t.Errorf("the create form does not start from refuse")
	}
}
