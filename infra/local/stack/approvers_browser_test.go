package stack

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/internal/oidctest"
	"github.com/countersign/countersign/shared/notify"
)

// peoplePolicy has two connections whose approvals come from people: team
// needs two of them (a quorum), and pairs forbids the caller from
// approving their own call (four eyes).
var peoplePolicy = map[string]string{
	"connections/team/policy.json": quorumPolicy,
	"connections/pairs/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"separate_approver": true}
}`,
}

// signInAt is what a person does in their browser on the identity
// provider's login form: type their username and password, and log in.
func signInAt(username string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), username),
		chromedp.SendKeys(chromedp.CSS("#password"), oidctest.Password),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
	}
}

// TestApproversSignInInBrowser: with a real OpenID provider as the
// workspace's sign_in (zitadel's, on loopback), approvers sign in by
// default. In headless Chromium, each person in a browser context of their
// own opens the approval link, is sent to the provider's login form, signs
// in with a password, and comes back to the page, which says who they are:
//   - a quorum of 2 stays pending after ada's approval ("1 of 2
//     approvals"), ada again finds nothing to press, and grace's approval
//     approves it: GET /v1/confirmations/<id> names grace (the provider's
//     issuer and subject) and lists both; the call is redeemed once;
//   - under four eyes, ada, who made the call from her MCP client (signed
//     in through the same provider), sees no buttons on her own call, and
//     grace's approval runs it once.
func TestApproversSignInInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	h := newHarness(t, harnessOptions{provider: true, files: peoplePolicy})
	br := startChrome(t, bin, artifacts(t))
	ada, grace := br.person(), br.person()
	pageText := func(b *tab) string {
		var s string
		b.run("read the page", into(&s, chromedp.Text(chromedp.CSS("main"))))
		return s
	}
	buttons := func(b *tab) int {
		var n int
		b.run("count the buttons", into(&n, chromedp.Evaluate[int](`document.querySelectorAll('button[name="decision"]').length`)))
		return n
	}
	signedInOn := func(b *tab, link, who string) chromedp.Action[chromedp.Void] {
		return poll(fmt.Sprintf(`location.href === %q && (document.querySelector(".who")||{textContent:""}).textContent.includes(%q)`, link, who))
	}

	// 1. The quorum.
	id, link := pauseQuorum(h, "12")
	link = h.stack.URL + link
	ada.run("ada opens the link: the provider's login form", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#username")), ada.shot("provider-login"))
	var at string
	ada.run("where the form is", into(&at, chromedp.Location()))
	if !strings.HasPrefix(at, h.provider.Issuer) {
		t.Fatalf("the link led to %s, not the provider %s", at, h.provider.Issuer)
	}
	ada.run("ada signs in and is back on the page", append(signInAt("ada"), signedInOn(ada, link, "ada@example.com"), ada.shot("quorum-ada-signed-in"))...)
	if shown := pageText(ada); !strings.Contains(shown, "0 of 2 approvals") || buttons(ada) != 2 {
		t.Fatalf("ada's page before approving:\n%s", shown)
	}
	ada.run("ada approves", chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		poll(`document.body.innerText.includes("1 of 2 approvals")`), ada.shot("quorum-one-of-two"))
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "pending" || st.get("approvals.received") != 1.0 || st.str("approvals.by.0.email") != "ada@example.com" {
		t.Fatalf("after ada's approval: %s", st.body)
	}
	ada.run("ada opens the link again", chromedp.Navigate(link), signedInOn(ada, link, "ada@example.com"))
	if shown := pageText(ada); !strings.Contains(shown, "You approved this already") || buttons(ada) != 0 {
		t.Fatalf("ada's second visit offers a decision or does not say why:\n%s", shown)
	}
	if st := h.statusOf("cs_test_program", id); st != "pending" {
		t.Fatalf("after ada's second visit: %s", st)
	}
	grace.run("grace opens the link and signs in", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(link)},
		append(signInAt("grace"), signedInOn(grace, link, "grace@example.com"))...)...)
	if shown := pageText(grace); !strings.Contains(shown, "1 of 2 approvals") || buttons(grace) != 2 {
		t.Fatalf("grace's page:\n%s", shown)
	}
	grace.run("grace approves", chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		poll(`(document.querySelector("h1")||{}).textContent === "Approved"`), grace.shot("quorum-approved"))
	st = h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "approved" || st.str("decided_by.kind") != "person" || st.str("decided_by.email") != "grace@example.com" ||
		st.str("decided_by.issuer") != h.provider.Issuer || st.str("decided_by.subject") != "id2" ||
		st.get("approvals.received") != 2.0 || st.str("approvals.by.0.email") != "ada@example.com" || st.str("approvals.by.1.email") != "grace@example.com" {
		t.Fatalf("after grace's approval: %s", st.body)
	}
	decidedOnce(h, id)
	expect(t, h.call("cs_test_program", map[string]any{"connection": "team", "method": "DELETE", "path": "/contacts/12",
		"intent": "confirmed_write", "confirmation_id": id}), http.StatusOK, "")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Fatalf("the quorum's call ran %d times, want once", n)
	}

	// 2. Four eyes: ada calls from her MCP client, signed in at the provider.
	s, _ := h.oauthSession(&signInBrowser{tb: t, email: "ada", client: newSignInBrowser(t, "").client, provider: h.provider}, "Ada's client", clientKind{})
	res := callTool(t, s, "pairs__delete_contacts_by_id", map[string]any{"id": "77"}, nil)
	id, _ = structured(t, res)["confirmation_id"].(string)
	if id == "" || h.upstream.Count("DELETE", "/contacts/77") != 0 {
		t.Fatalf("result %q, want paused for the approvers with nothing run", text(res))
	}
	link = h.stack.URL + h.approvalLink(id)
	ada.run("ada opens her own call's link", chromedp.Navigate(link), signedInOn(ada, link, "ada@example.com"), ada.shot("four-eyes-own-call"))
	if shown := pageText(ada); !strings.Contains(shown, "You made this call") || buttons(ada) != 0 {
		t.Fatalf("ada's own call offers her a decision or does not say why:\n%s", shown)
	}
	grace.run("grace approves ada's call", chromedp.Navigate(link), signedInOn(grace, link, "grace@example.com"),
		chromedp.Click(chromedp.CSS(`button[value="approve"]`)), poll(`(document.querySelector("h1")||{}).textContent === "Approved"`),
		grace.shot("four-eyes-approved"))
	waitFor(t, func() bool { return h.upstream.Count("DELETE", "/contacts/77") == 1 })
	ev := h.webhook.waitEvent(t, notify.TypeDecided, id)
	if by := ev.Confirmation.DecidedBy; by == nil || by.Email != "grace@example.com" {
		t.Fatalf("decided event names %+v, want grace", by)
	}
	t.Logf("screenshots in %s", br.shots)
}
