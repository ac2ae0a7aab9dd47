package awstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/countersign/countersign/shared/passkey/passkeytest"
)

// passkeyConnection's DELETE is approved only with a passkey.
const passkeyConnection = "passkey"

// post sends a form to base+path as this browser, asking for JSON.
func (b *browser) post(base, path string, form url.Values) answer {
	b.f.Helper()
	req, err := http.NewRequestWithContext(b.f.ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.f.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	return b.send(req)
}

func (b *browser) get(base, path string) answer {
	b.f.Helper()
	req, err := http.NewRequestWithContext(b.f.ctx, http.MethodGet, base+path, nil)
	if err != nil {
		b.f.Fatal(err)
	}
	return b.send(req)
}

func (b *browser) send(req *http.Request) answer {
	b.f.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.f.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{Status: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &a.Body)
	return a
}

var passkeysCSRF = regexp.MustCompile(`id="csrf" value="([^"]+)"`)

// passkeyApproval: on the AWS path the approve function registers ada's
// passkey at /account/passkeys (ceremony and passkey in DynamoDB) and
// verifies her assertion: the approval without one is refused, changing
// nothing; with one, the confirm state machine is told, decided_by says
// method passkey, the audit trail names her with it, and the call runs
// once. The relying party is the stack's public URL: the emulated API
// listens on 127.0.0.1, which counts as localhost (browsers refuse an IP
// address as a relying party), so the software authenticator's origin is
// localhost and her browser carries its session cookie there, as a
// deployment's single host would.
// Its contact (471) is touched by no other flow (the four-eyes flow deletes 121).
func passkeyApproval(f *flow) {
	id := f.pauseAs(askKey, passkeyConnection, "DELETE", "/contacts/471")
	link := f.link(id)
	ada := f.browser("ada")
	ada.signIn(link, "ada@example.com")
	front, _ := url.Parse(f.s.front.URL)
	local := strings.Replace(f.s.front.URL, front.Hostname(), "localhost", 1)
	lu, _ := url.Parse(local)
	ada.c.Jar.SetCookies(lu, ada.c.Jar.Cookies(front))

	page := ada.get(local, "/account/passkeys")
	m := passkeysCSRF.FindStringSubmatch(page.Raw)
	if page.Status != http.StatusOK || m == nil {
		f.Fatalf("GET /account/passkeys: %d %s", page.Status, page.Raw)
	}
	key := passkeytest.New(f, local)
	begin := ada.post(local, "/account/passkeys/begin", url.Values{"csrf": {m[1]}})
	if begin.Status != http.StatusOK {
		f.Fatalf("begin registration: %d %s", begin.Status, begin.Raw)
	}
	fin := ada.post(local, "/account/passkeys/finish", url.Values{"csrf": {m[1]}, "ceremony": {begin.str("ceremony")}, "name": {"laptop"},
		"response": {string(key.Register(f, []byte(begin.Raw)))}})
	if fin.Status != http.StatusOK || fin.str("id") != key.CredentialID() {
		f.Fatalf("finish registration: %d %s", fin.Status, fin.Raw)
	}
	f.Logf("the approve function registered ada's passkey %s", key.CredentialID())

	f.expect("approve without an assertion", ada.mustDecide(link, "approve"), http.StatusForbidden, "forbidden")
	if got := f.status(id); got != "pending" {
		f.Fatalf("status after the refused POST: %s, want pending", got)
	}
	form := link.Query()
	form.Set("decision", "approve")
	tok, err := ada.csrf(link) // the page's token, bound to ada's session
	if err != nil {
		f.Fatal(err)
	}
	form.Set("csrf", tok)
	form.Set("passkey", "begin")
	opts := ada.post(f.s.front.URL, link.Path, form)
	if opts.Status != http.StatusOK {
		f.Fatalf("begin the approval: %d %s", opts.Status, opts.Raw)
	}
	form.Del("passkey")
	form.Set("passkey_ceremony", opts.str("ceremony"))
	form.Set("passkey_assertion", string(key.AssertOptions(f, []byte(opts.Raw))))
	f.expect("ada approves with her passkey", ada.post(f.s.front.URL, link.Path, form), http.StatusOK, "approved")
	f.expect("the same assertion again", ada.post(f.s.front.URL, link.Path, form), http.StatusForbidden, "forbidden")
	f.execution("ConfirmStateMachine", id, "Approved", 30e9)
	c := f.confirmation(askKey, id)
	f.decidedBy(c, "id1", "ada@example.com")
	if by, _ := c.Body["decided_by"].(map[string]any); by["method"] != "passkey" {
		f.Fatalf("decided_by %v, want method passkey", by)
	}
	f.expect("redeem", f.callAs(askKey, passkeyConnection, "DELETE", "/contacts/471", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/471", id)
	f.auditActor(id, "confirmation.approved", "person:ada@example.com (passkey)")
}
