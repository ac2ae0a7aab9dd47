package stack

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// envScreenshots names the directory the console's browser test saves
// the documentation's screenshots in (COUNTERSIGN_SCREENSHOTS=docs/img,
// relative to the repository); unset, it saves none.
const envScreenshots = "COUNTERSIGN_SCREENSHOTS"

// docShot saves the viewport as name.png in $COUNTERSIGN_SCREENSHOTS, for
// docs/operators.md; it does nothing when that is unset.
func (b *tab) docShot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		dir := os.Getenv(envScreenshots)
		if dir == "" {
			return nil
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(repoRoot(b.t), dir)
		}
		buf, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	})
}

// repoRoot is the directory holding go.mod, above the test's.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// noSideScroll holds when the page is no wider than the window.
const noSideScroll = `document.documentElement.scrollWidth <= window.innerWidth`

// TestOperatorConsoleInBrowser: in headless Chromium, with a real OpenID
// provider and a candidate policy that turns crm's DELETE /contacts/{id}
// from confirm to never, ada (a user with role operator) signs in as a
// person and finds: the live decision enforced (the call paused) and the
// difference on the policy trial's page; chat-user's page with the client
// last seen (Claude Code, can ask) and its grant, which she revokes (the
// grant is gone from the API; the trail names her); the operations page
// with chat-user's outcomes. Every page has the navigation, and at phone
// width (390 px) none scrolls sideways. With COUNTERSIGN_SCREENSHOTS set,
// it saves the documentation's screenshots.
func TestOperatorConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	creds := strings.Replace(testCredentials, `  {"id": "root",`, `  {"id": "ada", "user": "ada@example.com", "role": "operator"},
  {"id": "root",`, 1)
	h := newHarness(t, harnessOptions{provider: true, files: map[string]string{"credentials.json": creds, "connections/remember/policy.json": rememberPolicy}})
	h.withCandidatePolicy()

	// The live policy is enforced: the call pauses (the candidate would refuse it).
	if r := h.call("cs_test_ask", deleteContact("9")); r.status != http.StatusAccepted {
		t.Fatalf("the live decision: %d %s", r.status, r.body)
	}
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: accept(true)}, nil)
	listTools(t, s)
	_, link := h.pause("cs_test_ask", delRemember(3))

	br := startChrome(t, bin, artifacts(t))
	ada := br.person()
	ada.run("desktop viewport", chromedp.EmulateViewport(1100, 900))
	ada.run("ada signs in as a person", chromedp.Navigate(h.stack.URL+"/operator"), chromedp.WaitVisible(chromedp.CSS("#person-signin")),
		ada.docShot("operator-sign-in"), chromedp.Click(chromedp.CSS("#person-signin")))
	ada.run("ada at the provider", append(signInAt("ada"),
		poll(`location.pathname === "/operator" && document.body.innerText.includes("ada@example.com") && document.body.innerText.includes("Review queue")`),
		poll(`document.querySelectorAll("nav.nav a").length === 6 && document.querySelector("nav.nav a[aria-current]").textContent === "Queue"`),
		ada.docShot("operator-dashboard"))...)

	// ada approves a call of chat-user's and allows the next ones: a grant.
	var shown string
	ada.run("ada approves and allows for 15 minutes", chromedp.Navigate(h.stack.URL+link),
		chromedp.WaitVisible(chromedp.CSS("#remember-approve")), chromedp.SetValue(chromedp.CSS("select#remember"), "15"),
		chromedp.Click(chromedp.CSS("#remember-approve")), poll(`document.body.innerText.includes("(grant gr_")`),
		into(&shown, chromedp.Text(chromedp.CSS("main"))))
	m := regexp.MustCompile(`grant (gr_[a-z0-9]+)`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the page after approving:\n%s", shown)
	}
	grant := m[1]

	ada.run("ada opens chat-user's page: the client last seen, can ask, its grant",
		chromedp.Navigate(h.stack.URL+"/operator/credentials/chat-user"),
		poll(`document.body.innerText.includes("Claude Code") && document.body.innerText.includes("can ask") && document.body.innerText.includes(`+jsString(grant)+`)`),
		ada.docShot("operator-credential"))
	ada.run("ada revokes the grant", chromedp.Click(chromedp.CSS(`form[action="/operator/grants/`+grant+`"] button`)),
		poll(`document.body.innerText.includes("Revoked grant `+grant+`")`))
	if r := h.operatorJSON(http.MethodGet, "/v1/operator/grants", ""); strings.Contains(string(r.body), grant) {
		t.Fatalf("the revoked grant is still listed: %s", r.body)
	}
	ada.run("the trail names ada", chromedp.Navigate(h.stack.URL+"/operator#audit"),
		poll(`[...document.querySelectorAll("#audit + div tr")].some(r => r.innerText.includes("person:ada@example.com") && r.innerText.includes("grant.revoked"))`))

	ada.run("the operations page for chat-user", chromedp.Navigate(h.stack.URL+"/operator/operations?credential=chat-user"),
		poll(`document.body.innerText.includes("pause (confirm)") && document.body.innerText.includes("make config-push")`),
		ada.docShot("operator-operations"))
	ada.run("the policy trial shows the difference", chromedp.Navigate(h.stack.URL+"/operator/shadow"),
		poll(`document.body.innerText.includes("live pause (confirm); candidate deny blocked (never)")`),
		ada.docShot("operator-policy-trial"))

	ada.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, p := range []struct{ path, shot string }{
		{"/operator", "operator-dashboard-phone"},
		{"/operator/credentials/chat-user", "operator-credential-phone"},
		{"/operator/operations?credential=chat-user", "operator-operations-phone"},
		{"/operator/shadow", ""},
	} {
		actions := []chromedp.Action[chromedp.Void]{chromedp.Navigate(h.stack.URL + p.path), chromedp.WaitVisible(chromedp.CSS("nav.nav")), poll(noSideScroll)}
		if p.shot != "" {
			actions = append(actions, ada.docShot(p.shot))
		}
		ada.run("at phone width, "+p.path+" does not scroll sideways", actions...)
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
