package approvalpage

import (
	"strings"
	"testing"
)

// TestPasskeyPage: a page whose Approve signs carries the script under
// the CSP nonce and lets it reach this origin only; a person without a
// passkey gets the link to register one and a disabled Approve, and no
// script; a page without a passkey rule has neither.
func TestPasskeyPage(t *testing.T) {
	base := Page{State: Pending, ID: "cf_1", Operations: []Operation{{Index: 0, Connection: "crm", Method: "POST", Path: "/payouts"}},
		Form: Form{Approver: "ops", Exp: 1, KID: "k", Sig: "s"}}
	for _, tc := range []struct {
		name               string
		passkey            bool
		url, at            string
		script, disabled   bool
		needed, scriptCSPs bool
	}{
		{name: "no passkey rule"},
		{name: "signs", passkey: true, script: true, scriptCSPs: true},
		{name: "none registered", passkey: true, url: "/account/passkeys", disabled: true, needed: true},
		{name: "opened at another address", passkey: true, at: "http://localhost:8080/approve/cf_1?a=ops", disabled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Passkey, p.PasskeysURL, p.PasskeyAt = tc.passkey, tc.url, tc.at
			b, h, err := Render(p)
			if err != nil {
				t.Fatal(err)
			}
			body, csp := string(b), h["Content-Security-Policy"]
			if got := strings.Contains(body, "navigator.credentials.get"); got != tc.script {
				t.Errorf("script present = %v, want %v", got, tc.script)
			}
			if got := strings.Contains(body, `class="approve" disabled`); got != tc.disabled {
				t.Errorf("Approve disabled = %v, want %v", got, tc.disabled)
			}
			if got := strings.Contains(body, `href="/account/passkeys"`); got != tc.needed {
				t.Errorf("register link = %v, want %v", got, tc.needed)
			}
			if got := strings.Contains(csp, "script-src 'nonce-") && strings.Contains(csp, "connect-src 'self'"); got != tc.scriptCSPs {
				t.Errorf("CSP %q allows the script = %v, want %v", csp, got, tc.scriptCSPs)
			}
			if got := strings.Contains(body, `id="passkey-elsewhere"`); got != (tc.at != "") {
				t.Errorf("the other address shown = %v", got)
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
}
