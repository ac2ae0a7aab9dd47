package stack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/passkey/passkeytest"
)

// passkeyPolicy: every approval of the vault connection's calls is a
// passkey's assertion (approval.passkey); vault2 also needs two people.
var passkeyPolicy = map[string]string{
	"connections/vault/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"passkey": true}
}`,
	"connections/vault2/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"passkey": true, "required": 2}
}`,
}

// person is a browser of one person on the local stack (its own cookie
// jar), signed in on the development sign-in page, with software
// passkeys.
type person struct {
	t    testing.TB
	base string // the public URL: http://localhost:<port>
	c    *http.Client
}

var csrfFieldRE = regexp.MustCompile(`id="csrf" value="([^"]+)"`)

func (h *harness) person(email string) *person {
	h.t.Helper()
	return signedIn(h.t, strings.TrimRight(h.stack.PublicURL, "/"), email)
}

// signedIn is a browser at base signed in as email on the development
// sign-in page.
func signedIn(t testing.TB, base, email string) *person {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	p := &person{t: t, base: base,
		c: &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	page := p.get("/oauth/dev-signin?return_to=" + url.QueryEscape("/account/passkeys"))
	m := csrfRE.FindStringSubmatch(page.text())
	if m == nil {
		t.Fatalf("no sign-in form: %s", page.body)
	}
	r := p.post("/oauth/dev-signin", url.Values{"csrf": {m[1]}, "return_to": {"/account/passkeys"}, "email": {email}}, false)
	if r.status != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: %d %s", email, r.status, r.body)
	}
	return p
}

func (p *person) do(req *http.Request) result {
	p.t.Helper()
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r
}

func (p *person) get(path string) result {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	return p.do(req)
}

func (p *person) post(path string, form url.Values, wantJSON bool) result {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if wantJSON {
		req.Header.Set("Accept", "application/json")
	}
	return p.do(req)
}

func (r result) text() string { return string(r.body) }

// register adds a software passkey on /account/passkeys, as its script does.
func (p *person) register() *passkeytest.Authenticator {
	p.t.Helper()
	a := passkeytest.New(p.t, p.base)
	page := p.get("/account/passkeys")
	m := csrfFieldRE.FindStringSubmatch(page.text())
	if page.status != http.StatusOK || m == nil {
		p.t.Fatalf("passkeys page: %d %s", page.status, page.body)
	}
	csrf := m[1]
	begin := p.post("/account/passkeys/begin", url.Values{"csrf": {csrf}}, true)
	if begin.status != http.StatusOK {
		p.t.Fatalf("begin: %d %s", begin.status, begin.body)
	}
	fin := p.post("/account/passkeys/finish", url.Values{"csrf": {csrf}, "ceremony": {begin.str("ceremony")}, "name": {"laptop"},
		"response": {string(a.Register(p.t, begin.body))}}, true)
	if fin.status != http.StatusOK || fin.str("id") != a.CredentialID() {
		p.t.Fatalf("finish: %d %s", fin.status, fin.body)
	}
	return a
}

// form is the approval form the page posts for link.
func form(t testing.TB, link, decision string) url.Values {
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	f := u.Query()
	f.Set("decision", decision)
	return f
}

// approveCSRF is the approval page's CSRF token as p's browser sees it
// (its session's, for this confirmation), as the page's form posts it.
func (p *person) approveCSRF(link string) string {
	p.t.Helper()
	if m := approveCSRFRE.FindStringSubmatch(p.get(link).text()); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

var approveCSRFRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// begin posts the form with passkey=begin: the ceremony and the challenge.
func (p *person) begin(link, decision string) (ceremony, challenge string, r result) {
	p.t.Helper()
	f := form(p.t, link, decision)
	f.Set("csrf", p.approveCSRF(link))
	f.Set("passkey", "begin")
	r = p.post(strings.SplitN(link, "?", 2)[0], f, true)
	if r.status == http.StatusOK {
		challenge = passkeytest.ReadOptions(p.t, r.body).PublicKey.Challenge
	}
	return r.str("ceremony"), challenge, r
}

// decide posts the decision with an assertion (none when ceremony is "").
func (p *person) decide(link, decision, ceremony string, assertion []byte) result {
	p.t.Helper()
	f := form(p.t, link, decision)
	f.Set("csrf", p.approveCSRF(link))
	if ceremony != "" || assertion != nil {
		f.Set("passkey_ceremony", ceremony)
		f.Set("passkey_assertion", string(assertion))
	}
	return p.post(strings.SplitN(link, "?", 2)[0], f, true)
}

func pauseVault(h *harness, conn, contact string) (string, string) {
	h.t.Helper()
	r := h.call("cs_test_program", map[string]any{"connection": conn, "method": "DELETE", "path": "/contacts/" + contact, "intent": "write"})
	expect(h.t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	return id, h.approvalLink(id)
}

// TestPasskeyApprovalRoutes: a call whose endpoint asks for a passkey is
// approved only with a verified assertion of the signed-in person's own
// passkey over this confirmation, its operations and the decision, used
// once. Each refusal is a 4xx that decides nothing and runs nothing:
// no assertion, a person with no passkey (told where to register one),
// another person's passkey, an assertion made for a reject or for another
// confirmation, a tampered challenge, no user verification, a removed
// passkey, a replayed assertion, a sign-in that ended, a malformed or
// huge assertion. Then ada's valid assertion approves it: decided_by
// names her with method passkey, the decided event too, and the call runs
// once. A reject needs no passkey. A quorum with a passkey counts two
// people's assertions.
func TestPasskeyApprovalRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{localhost: true, files: passkeyPolicy})
	ada, grace := h.person("ada@example.com"), h.person("grace@example.com")
	adaKey := ada.register()

	id, link := pauseVault(h, "vault", "1")
	nothingDecided := func(what string, r result, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: status %d, want %d; body %s", what, r.status, status, r.body)
		}
		if st := h.statusOf("cs_test_program", id); st != "pending" {
			t.Fatalf("%s: confirmation is %s, want pending", what, st)
		}
		if n := h.upstream.Count("DELETE", "/contacts/1"); n != 0 {
			t.Fatalf("%s: the call ran %d times", what, n)
		}
	}
	nothingDecided("approve without an assertion", ada.decide(link, "approve", "", nil), http.StatusForbidden)

	// grace has no passkey: her page tells her where to register one, and she cannot begin.
	if page := grace.get(link); !strings.Contains(page.text(), `href="/account/passkeys"`) || !strings.Contains(page.text(), `class="approve" disabled`) {
		t.Fatalf("grace's page does not send her to register a passkey:\n%s", page.body)
	}
	_, _, r := grace.begin(link, "approve")
	nothingDecided("grace begins without a passkey", r, http.StatusForbidden)
	if !strings.Contains(r.str("reason"), "/account/passkeys") {
		t.Fatalf("grace is not told where to register: %s", r.body)
	}
	graceKey := grace.register()

	cer, ch, r := ada.begin(link, "approve")
	if r.status != http.StatusOK || ch == "" {
		t.Fatalf("ada begins: %d %s", r.status, r.body)
	}
	nothingDecided("grace's passkey signs ada's challenge", ada.decide(link, "approve", cer, graceKey.Assert(t, ch)), http.StatusForbidden)

	cer, ch, _ = ada.begin(link, "reject")
	nothingDecided("an assertion made for a reject", ada.decide(link, "approve", cer, adaKey.Assert(t, ch)), http.StatusForbidden)

	id2, link2 := pauseVault(h, "vault", "2")
	cer, ch, _ = ada.begin(link2, "approve")
	nothingDecided("an assertion made for another confirmation", ada.decide(link, "approve", cer, adaKey.Assert(t, ch)), http.StatusForbidden)

	cer, _, _ = ada.begin(link, "approve")
	tampered := base64.RawURLEncoding.EncodeToString([]byte("a challenge the server never made"))
	nothingDecided("a tampered challenge", ada.decide(link, "approve", cer, adaKey.Assert(t, tampered)), http.StatusForbidden)

	cer, ch, _ = ada.begin(link, "approve")
	adaKey.NoUserVerification = true
	nothingDecided("no user verification", ada.decide(link, "approve", cer, adaKey.Assert(t, ch)), http.StatusForbidden)
	adaKey.NoUserVerification = false

	spare := ada.register()
	cer, ch, _ = ada.begin(link, "approve")
	csrf := csrfFieldRE.FindStringSubmatch(ada.get("/account/passkeys").text())[1]
	if rm := ada.post("/account/passkeys/remove", url.Values{"csrf": {csrf}, "id": {spare.CredentialID()}}, true); rm.status != http.StatusOK {
		t.Fatalf("remove: %d %s", rm.status, rm.body)
	}
	nothingDecided("a removed passkey", ada.decide(link, "approve", cer, spare.Assert(t, ch)), http.StatusForbidden)

	// Used once: an assertion refused for another reason (the form now
	// keeps no operation it signed) cannot be used again.
	cer, ch, _ = ada.begin(link, "approve")
	signed := adaKey.Assert(t, ch)
	f := form(t, link, "approve")
	f.Set("csrf", ada.approveCSRF(link))
	f.Set("op", "7")
	f.Set("passkey_ceremony", cer)
	f.Set("passkey_assertion", string(signed))
	nothingDecided("an assertion over other operations", ada.post(strings.SplitN(link, "?", 2)[0], f, true), http.StatusForbidden)
	nothingDecided("the same assertion again", ada.decide(link, "approve", cer, signed), http.StatusForbidden)

	// Sign-in ended: the same browser without its session cookie.
	cer, ch, _ = ada.begin(link, "approve")
	signed = adaKey.Assert(t, ch)
	outJar, _ := cookiejar.New(nil)
	signedOut := &person{t: t, base: ada.base, c: &http.Client{Jar: outJar, Timeout: 10 * time.Second}}
	nothingDecided("sign-in ended", signedOut.decide(link, "approve", cer, signed), http.StatusForbidden)

	cer, _, _ = ada.begin(link, "approve")
	nothingDecided("a malformed assertion", ada.decide(link, "approve", cer, []byte(`{"id":"x","type":"public-key","response":{`)), http.StatusBadRequest)
	cer, _, _ = ada.begin(link, "approve")
	nothingDecided("a huge assertion", ada.decide(link, "approve", cer, []byte(`{"id":"`+strings.Repeat("A", 20<<10)+`"}`)), http.StatusRequestEntityTooLarge)

	// The approval.
	cer, ch, _ = ada.begin(link, "approve")
	if r := ada.decide(link, "approve", cer, adaKey.Assert(t, ch)); r.status != http.StatusOK || r.str("status") != "approved" {
		t.Fatalf("ada's approval: %d %s", r.status, r.body)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("decided_by.method") != "passkey" || st.str("decided_by.email") != "ada@example.com" || st.str("decided_by.kind") != "person" {
		t.Fatalf("decided_by: %s", st.body)
	}
	ev := decidedOnce(h, id)
	if by := ev.Confirmation.DecidedBy; by == nil || by.Method != "passkey" || by.Email != "ada@example.com" {
		t.Fatalf("decided event names %+v", by)
	}
	expect(t, h.call("cs_test_program", map[string]any{"connection": "vault", "method": "DELETE", "path": "/contacts/1",
		"intent": "confirmed_write", "confirmation_id": id}), http.StatusOK, "")
	if n := h.upstream.Count("DELETE", "/contacts/1"); n != 1 {
		t.Fatalf("the approved call ran %d times, want once", n)
	}
	if keys := ada.get("/account/passkeys").text(); !strings.Contains(keys, "last used") {
		t.Fatalf("the passkey's use is not shown:\n%s", keys)
	}

	// A signature counter that went backwards (a cloned authenticator).
	cer, ch, _ = ada.begin(link2, "approve")
	if r := ada.decide(link2, "approve", cer, adaKey.AssertAt(t, ch, 1)); r.status != http.StatusForbidden || !strings.Contains(r.str("reason"), "cloned") {
		t.Fatalf("a counter that went backwards: %d %s", r.status, r.body)
	}
	if st := h.statusOf("cs_test_program", id2); st != "pending" {
		t.Fatalf("after the cloned counter: %s", st)
	}

	// A reject needs no passkey.
	if r := grace.decide(link2, "reject", "", nil); r.status != http.StatusOK || r.str("status") != "rejected" {
		t.Fatalf("grace's rejection: %d %s", r.status, r.body)
	}
	if st := h.statusOf("cs_test_program", id2); st != "rejected" {
		t.Fatalf("after the rejection: %s", st)
	}

	// A quorum of two, each approval a passkey's; a replay of the first
	// counts nobody.
	id3, link3 := pauseVault(h, "vault2", "3")
	cer, ch, _ = ada.begin(link3, "approve")
	first := adaKey.Assert(t, ch)
	if r := ada.decide(link3, "approve", cer, first); r.status != http.StatusOK || r.str("status") != "pending" {
		t.Fatalf("ada's approval in the quorum: %d %s", r.status, r.body)
	}
	if r := grace.decide(link3, "approve", cer, first); r.status != http.StatusForbidden {
		t.Fatalf("grace replays ada's assertion: %d %s", r.status, r.body)
	}
	if r := grace.decide(link3, "approve", "", nil); r.status != http.StatusForbidden {
		t.Fatalf("grace approves without a passkey: %d %s", r.status, r.body)
	}
	cer, ch, _ = grace.begin(link3, "approve")
	if r := grace.decide(link3, "approve", cer, graceKey.Assert(t, ch)); r.status != http.StatusOK || r.str("status") != "approved" {
		t.Fatalf("grace's approval completes the quorum: %d %s", r.status, r.body)
	}
	st = h.do(http.MethodGet, "/v1/confirmations/"+id3, "cs_test_program", nil, nil)
	if st.str("decided_by.method") != "passkey" || st.str("approvals.by.0.method") != "passkey" || st.str("approvals.by.1.method") != "passkey" {
		t.Fatalf("the quorum's record: %s", st.body)
	}
}

// TestPasskeyLoopbackAddress: with the default public_url on a loopback
// address (an IP, which browsers refuse as a relying party), passkeys
// work at localhost on the same port: the passkeys page there links to
// it, and an approval page opened at the IP address links to the same
// page at localhost, with Approve disabled, and no script.
func TestPasskeyLoopbackAddress(t *testing.T) {
	h := newHarness(t, harnessOptions{files: passkeyPolicy})
	local := strings.Replace(strings.TrimRight(h.stack.PublicURL, "/"), "127.0.0.1", "localhost", 1)
	ada := h.person("ada@example.com") // at http://127.0.0.1:<port>
	if r := ada.get("/account/passkeys"); r.status != http.StatusOK || !strings.Contains(r.text(), `href="`+local+`/account/passkeys"`) || strings.Contains(r.text(), "<script") {
		t.Fatalf("the passkeys page at the IP address: %d %s, want a link to %s", r.status, r.body, local+"/account/passkeys")
	}
	_, link := pauseVault(h, "vault", "9")
	page := ada.get(link).text()
	if !strings.Contains(page, `id="passkey-elsewhere"`) || !strings.Contains(page, `href="`+local+strings.ReplaceAll(link, "&", "&amp;")) ||
		!strings.Contains(page, `class="approve" disabled`) || strings.Contains(page, "navigator.credentials") {
		t.Fatalf("the approval page at the IP address:\n%s", page)
	}
}

// TestDemoPayoutWithPasskeys walks docs/approvers.md's "Try it on the
// local stack" on the shipped configuration: ada and grace register
// passkeys at localhost, an agent asks for a payout, the link (at
// 127.0.0.1) is opened at localhost, ada's passkey approval is counted,
// grace's approves it, decided_by says passkey, and the demo CRM receives
// the payout once when the agent redeems.
func TestDemoPayoutWithPasskeys(t *testing.T) {
	var console syncBuffer
	s, err := Start(context.Background(), Options{ConfigDir: "../../config", Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		DemoUpstream: "127.0.0.1:0", Stdout: &console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	local := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	if want := "people register passkeys (approval.passkey) at " + local + "/account/passkeys"; !strings.Contains(s.Banner(), want) {
		t.Errorf("the banner does not say %q:\n%s", want, s.Banner())
	}
	ada, grace := signedIn(t, local, "ada@example.com"), signedIn(t, local, "grace@example.com")
	adaKey, graceKey := ada.register(), grace.register()
	agent := &person{t: t, base: s.URL, c: http.DefaultClient}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/calls", strings.NewReader(
		`{"connection":"crm","method":"POST","path":"/payouts","body":{"amount":250,"currency":"EUR","to":"ACME Ltd"},"intent":"write"}`))
	req.Header.Set("Authorization", "Bearer cs_demo_ask")
	paused := agent.do(req)
	id := paused.str("confirmation.id")
	if paused.status != http.StatusAccepted || id == "" {
		t.Fatalf("the payout: %d %s", paused.status, paused.body)
	}
	linkRE := regexp.MustCompile(`http://\S+/approve/` + id + `\S*`)
	var link string
	for deadline := time.Now().Add(10 * time.Second); link == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		link = linkRE.FindString(console.String())
	}
	u, err := url.Parse(link)
	if err != nil || link == "" {
		t.Fatalf("no link for %s in the console:\n%s", id, console.String())
	}
	link = u.RequestURI()
	for i, who := range []struct {
		p   *person
		key *passkeytest.Authenticator
	}{{ada, adaKey}, {grace, graceKey}} {
		cer, ch, r := who.p.begin(link, "approve")
		if r.status != http.StatusOK {
			t.Fatalf("approval %d begins: %d %s", i+1, r.status, r.body)
		}
		want := []string{"pending", "approved"}[i]
		if r := who.p.decide(link, "approve", cer, who.key.Assert(t, ch)); r.status != http.StatusOK || r.str("status") != want {
			t.Fatalf("approval %d: %d %s, want %s", i+1, r.status, r.body, want)
		}
	}
	get, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/confirmations/"+id, nil)
	get.Header.Set("Authorization", "Bearer cs_demo_ask")
	st := agent.do(get)
	if st.str("decided_by.email") != "grace@example.com" || st.str("decided_by.method") != "passkey" || st.str("approvals.by.0.email") != "ada@example.com" {
		t.Fatalf("the payout's record: %s", st.body)
	}
	redeem, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/calls", strings.NewReader(
		`{"connection":"crm","method":"POST","path":"/payouts","body":{"amount":250,"currency":"EUR","to":"ACME Ltd"},"intent":"confirmed_write","confirmation_id":"`+id+`"}`))
	redeem.Header.Set("Authorization", "Bearer cs_demo_ask")
	if r := agent.do(redeem); r.status != http.StatusOK || r.str("status") != "executed" {
		t.Fatalf("redeem: %d %s", r.status, r.body)
	}
	n := 0
	for _, r := range s.Demo.Requests() {
		if r.Method == http.MethodPost && r.Path == "/payouts" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the demo CRM received %d payouts, want 1", n)
	}
}

// TestPasskeyURLMode: a person's MCP client in URL mode is sent to the
// approval page of a call whose endpoint asks for a passkey alone (the
// link given to the caller), where they approve with their passkey, and
// the gateway runs it once; a client with form elicitation is not asked
// in its dialog (it cannot sign): the call waits for the approvers.
func TestPasskeyURLMode(t *testing.T) {
	h := newHarness(t, harnessOptions{files: passkeyPolicy})
	local := strings.Replace(strings.TrimRight(h.stack.PublicURL, "/"), "127.0.0.1", "localhost", 1)
	dana := signedIn(t, local, "dana@example.com")
	key := dana.register()
	s, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "URL client", clientKind{url: true, protocol: "2025-11-25"})
	e := urlElicitationOf(t, s, "vault__delete_contacts_by_id", map[string]any{"id": "71"})
	link := h.link(e.URL)
	if r := dana.decide(link, "approve", "", nil); r.status != http.StatusForbidden {
		t.Fatalf("approval without a passkey: %d %s", r.status, r.body)
	}
	cer, ch, r := dana.begin(link, "approve")
	if r.status != http.StatusOK {
		t.Fatalf("begin: %d %s", r.status, r.body)
	}
	if r := dana.decide(link, "approve", cer, key.Assert(t, ch)); r.status != http.StatusOK {
		t.Fatalf("approval with the passkey: %d %s", r.status, r.body)
	}
	waitFor(t, func() bool { return h.upstream.Count("DELETE", "/contacts/71") == 1 })

	asked := false
	f, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "Form client", clientKind{elicit: func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = true
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	res := callTool(t, f, "vault__delete_contacts_by_id", map[string]any{"id": "72"}, nil)
	if asked || structured(t, res)["status"] != "confirmation_required" || h.upstream.Count("DELETE", "/contacts/72") != 0 {
		t.Fatalf("a form client: asked %v, result %q; want paused for the approvers, nothing run", asked, text(res))
	}
}

// TestPasskeysPageForms: every POST of /account/passkeys needs this
// browser's CSRF token for this person, signed in: none, another
// browser's (even the same person's), another person's, or no sign-in is
// 403 and changes nothing; a person removes only their own passkeys; GET
// changes nothing and a POST route answers GET with 405.
func TestPasskeysPageForms(t *testing.T) {
	h := newHarness(t, harnessOptions{localhost: true})
	ada, grace := h.person("ada@example.com"), h.person("grace@example.com")
	key := ada.register()
	token := func(p *person) string {
		m := csrfFieldRE.FindStringSubmatch(p.get("/account/passkeys").text())
		if m == nil {
			t.Fatal("no csrf token on the page")
		}
		return m[1]
	}
	adaToken, graceToken := token(ada), token(grace)
	adaElsewhere := h.person("ada@example.com") // ada in another browser
	token(adaElsewhere)
	jar, _ := cookiejar.New(nil)
	nobody := &person{t: t, base: ada.base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
	for _, tc := range []struct {
		name string
		p    *person
		form url.Values
	}{
		{"no token", ada, url.Values{"id": {key.CredentialID()}}},
		{"another person's token", grace, url.Values{"csrf": {adaToken}, "id": {key.CredentialID()}}},
		{"another browser's token", adaElsewhere, url.Values{"csrf": {adaToken}, "id": {key.CredentialID()}}},
		{"not signed in", nobody, url.Values{"csrf": {adaToken}, "id": {key.CredentialID()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/account/passkeys/begin", "/account/passkeys/remove"} {
				if r := tc.p.post(path, tc.form, true); r.status != http.StatusForbidden {
					t.Fatalf("%s: %d %s, want 403", path, r.status, r.body)
				}
			}
		})
	}
	if r := grace.post("/account/passkeys/remove", url.Values{"csrf": {graceToken}, "id": {key.CredentialID()}}, true); r.status != http.StatusNotFound {
		t.Fatalf("grace removes ada's passkey: %d %s, want 404", r.status, r.body)
	}
	if r := ada.get("/account/passkeys/begin"); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET begin: %d", r.status)
	}
	if page := ada.get("/account/passkeys").text(); !strings.Contains(page, `data-id="`+key.CredentialID()+`"`) {
		t.Fatalf("ada's passkey is gone:\n%s", page)
	}
	if r := ada.post("/account/passkeys/remove", url.Values{"csrf": {adaToken}, "id": {key.CredentialID()}}, false); r.status != http.StatusSeeOther {
		t.Fatalf("ada removes her passkey: %d %s", r.status, r.body)
	}
	if page := ada.get("/account/passkeys").text(); strings.Contains(page, `data-id="`) {
		t.Fatalf("the removed passkey is still listed:\n%s", page)
	}
}
