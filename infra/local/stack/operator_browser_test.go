package stack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOperatorPersonInBrowser: in headless Chromium, with a real OpenID
// provider as the workspace's sign-in, ada (a configured user with role
// operator) signs in to /operator as a person, creates a key (shown once;
// it works at once), changes its choice (the next call follows it) and
// revokes it behind the confirmation box (its key is refused after);
// grace, a user who is no operator, signs in and sees nothing of the page
// nor of its other pages.
func TestOperatorPersonInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	creds := strings.Replace(testCredentials, `  {"id": "root",`, `  {"id": "ada", "user": "ada@example.com", "role": "operator"},
  {"id": "grace", "user": "grace@example.com"},
  {"id": "root",`, 1)
	h := newHarness(t, harnessOptions{provider: true, files: map[string]string{"credentials.json": creds}})
	br := startChrome(t, bin, artifacts(t))
	ada, grace := br.person(), br.person()
	op := h.stack.URL + "/operator"

	ada.run("ada opens the operator page and signs in as a person",
		chromedp.Navigate(op), chromedp.WaitVisible(chromedp.CSS("#person-signin")), ada.shot("operator-sign-in"),
		chromedp.Click(chromedp.CSS("#person-signin")))
	ada.run("ada signs in at the provider and is back on the page", append(signInAt("ada"),
		poll(`location.pathname === "/operator" && document.body.innerText.includes("ada@example.com") && document.body.innerText.includes("Review queue")`),
		ada.shot("operator-as-person"))...)

	ada.run("ada creates a key", chromedp.SendKeys(chromedp.CSS("#new-id"), "browser-bot"),
		chromedp.SetValue(chromedp.CSS("#new-choice"), "refuse"), chromedp.Click(chromedp.CSS("#create-key")),
		chromedp.WaitVisible(chromedp.CSS("#new-key")), ada.shot("operator-key-created"))
	var key string
	ada.run("read the key", into(&key, chromedp.Text(chromedp.CSS("#new-key"))))
	key = strings.TrimSpace(key)
	if !strings.HasPrefix(key, "cs_") || len(key) != 43 {
		t.Fatalf("the page shows %q as the key", key)
	}
	expect(t, h.call(key, deleteContact("5")), http.StatusForbidden, "requires_confirmation")

	ada.run("ada changes its choice", chromedp.SetValue(chromedp.CSS("#change-choice"), "run_without_asking"),
		chromedp.Click(chromedp.CSS("#change")), poll(`(document.querySelector("#choice")||{}).textContent === "run_without_asking"`))
	expect(t, h.call(key, deleteContact("6")), http.StatusOK, "")

	ada.run("ada revokes it behind the confirmation box", chromedp.Click(chromedp.CSS("#revoke-confirm")),
		chromedp.Click(chromedp.CSS("#revoke")), poll(`document.body.innerText.includes("Revoked browser-bot")`), ada.shot("operator-key-revoked"))
	expect(t, h.call(key, deleteContact("7")), http.StatusUnauthorized, "unauthenticated")

	grace.run("grace, no operator, signs in", chromedp.Navigate(h.stack.URL+"/operator/signin"))
	grace.run("grace at the provider", append(signInAt("grace"),
		poll(`location.pathname === "/operator" && document.body.innerText.includes("may not use the operator page")`))...)
	var shown string
	grace.run("read grace's page", into(&shown, chromedp.Text(chromedp.CSS("main"))))
	if strings.Contains(shown, "Review queue") || strings.Contains(shown, "Credentials") || strings.Contains(shown, "browser-bot") {
		t.Fatalf("grace sees the page:\n%s", shown)
	}
	// Nor any of the console's other pages.
	for _, p := range []string{"/operator/operations?credential=chat-user", "/operator/credentials/ada", "/operator/shadow"} {
		grace.run("grace opens "+p, chromedp.Navigate(h.stack.URL+p), poll(`document.body.innerText.includes("may not use the operator page")`),
			into(&shown, chromedp.Text(chromedp.CSS("main"))))
		if strings.Contains(shown, "config-push") || strings.Contains(shown, "Last client") || strings.Contains(shown, "Policy trial") || strings.Contains(shown, "chat-user") {
			t.Fatalf("grace sees %s:\n%s", p, shown)
		}
	}
}
