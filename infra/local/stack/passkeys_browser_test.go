package stack

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// virtualAuthenticator gives the tab a platform authenticator through the
// DevTools WebAuthn domain: CTAP2, internal, resident keys, user
// verification that succeeds (a PIN or biometric the test does not type).
func virtualAuthenticator() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		return err
	})
}

// TestPasskeyInBrowser: in headless Chromium with a virtual authenticator,
// ada signs in (the development sign-in page), registers a passkey at
// /account/passkeys (navigator.credentials.create), opens the approval
// link of a call whose endpoint asks for a passkey and approves: the page
// asks the authenticator (navigator.credentials.get) over the challenge
// the server derived, and the lifecycle verifies it. The record says
// decided_by.method "passkey" and the call runs once. grace, signed in
// without a passkey, is sent to register one and her Approve is disabled.
func TestPasskeyInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	h := newHarness(t, harnessOptions{localhost: true, files: passkeyPolicy})
	base := strings.TrimRight(h.stack.PublicURL, "/")
	br := startChrome(t, bin, artifacts(t))
	ada, grace := br.person(), br.person()
	signIn := func(b *tab, email string) {
		b.run("sign in as "+email, virtualAuthenticator(), chromedp.Navigate(base+"/account/passkeys"), chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), email), chromedp.Click(chromedp.CSS("#signin")),
			poll(`location.pathname === "/account/passkeys" && document.body.innerText.includes("Signed in as")`))
	}
	signIn(ada, "ada@example.com")
	ada.run("ada adds a passkey", ada.shot("passkeys-none"), chromedp.SendKeys(chromedp.CSS("#name"), "laptop"), chromedp.Click(chromedp.CSS("#add-passkey")),
		poll(`document.querySelectorAll("#passkeys li").length === 1`), ada.shot("passkeys-one"))

	id, link := pauseVault(h, "vault", "41")
	link = base + link
	ada.run("ada opens the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#passkey-status")), ada.shot("passkey-approval-page"))
	ada.run("ada approves with her passkey", chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		poll(`(document.querySelector("h1")||{}).textContent === "Approved"`), ada.shot("passkey-approved"))
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "approved" || st.str("decided_by.method") != "passkey" || st.str("decided_by.email") != "ada@example.com" {
		t.Fatalf("after ada's approval: %s", st.body)
	}
	expect(t, h.call("cs_test_program", map[string]any{"connection": "vault", "method": "DELETE", "path": "/contacts/41",
		"intent": "confirmed_write", "confirmation_id": id}), http.StatusOK, "")
	if n := h.upstream.Count("DELETE", "/contacts/41"); n != 1 {
		t.Fatalf("the approved call ran %d times, want once", n)
	}

	id2, link2 := pauseVault(h, "vault", "42")
	signIn(grace, "grace@example.com")
	grace.run("grace opens a link without a passkey", chromedp.Navigate(base+link2), chromedp.WaitVisible(chromedp.CSS("#passkey-needed")), grace.shot("passkey-needed"))
	var disabled bool
	grace.run("is Approve disabled", into(&disabled, chromedp.Evaluate[bool](`document.querySelector('button[value="approve"]').disabled`)))
	if !disabled {
		t.Fatal("grace, without a passkey, can press Approve")
	}
	if st := h.statusOf("cs_test_program", id2); st != "pending" {
		t.Fatalf("after grace's visit: %s", st)
	}
	t.Logf("screenshots in %s", br.shots)
}
