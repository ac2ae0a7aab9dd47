package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestPageHeaders (finding 15): every page the server writes (consent,
// the development sign-in page, the error pages, the callback's failure)
// is sent with nosniff, a Referrer-Policy and no framing.
func TestPageHeaders(t *testing.T) {
	ts := newTestServer(t, false)
	_, reg := ts.register(t, `{"client_name": "Test client", "redirect_uris": ["`+redirect+`"]}`)
	dev := &DevSignIn{Issuer: ts.url + PathDevSignIn, Key: NewKey()}
	devServer, err := New(ts.store, Options{PublicURL: func() string { return ts.url }, SignIn: dev, SessionKey: NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(devServer)
	t.Cleanup(hs.Close)
	pages := []struct{ name, url string }{
		{"consent", ts.authorizeURL(reg["client_id"].(string), verifier, nil)},
		{"error page", ts.url + PathAuthorize + "?client_id=nobody"},
		{"development sign-in", hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape("/approve/cf_1")},
		{"development sign-in refusal", hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape("https://evil.example/")},
		{"callback without its flow", hs.URL + PathCallback},
	}
	for _, p := range pages {
		resp, err := ts.http.Get(p.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: %d %v, want nosniff, Referrer-Policy no-referrer, X-Frame-Options DENY", p.name, resp.StatusCode, h)
		}
	}
}

// TestDevSignInLoginCSRF (finding 11): the development sign-in's token is
// bound to the browser that loaded the form (a nonce cookie), lives ten
// minutes, signs in once, and no form from another site signs anyone in.
func TestDevSignInLoginCSRF(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d := &DevSignIn{Issuer: "http://127.0.0.1/oauth/dev-signin", Key: NewKey(), Now: func() time.Time { return now }}
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	returnTo := "/approve/cf_1"
	page := hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape(returnTo)
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	load := func(c *http.Client) string {
		t.Helper()
		resp, err := c.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))[1]
	}
	post := func(c *http.Client, token string, headers map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+PathDevSignIn, strings.NewReader(url.Values{"return_to": {returnTo}, "csrf": {token}, "email": {"mallory@example.com"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The token the page once gave every browser: an HMAC of return_to.
	m := hmac.New(sha256.New, d.Key)
	fmt.Fprintf(m, "dev-signin\n%s", returnTo)
	shared := base64.RawURLEncoding.EncodeToString(m.Sum(nil))

	attacker, victim := browser(), browser()
	lifted := load(attacker)
	load(victim)
	if st := post(victim, lifted, nil); st != http.StatusForbidden {
		t.Errorf("a token from another browser: %d, want 403", st)
	}
	if st := post(browser(), lifted, nil); st != http.StatusForbidden {
		t.Errorf("a token without the form's cookie: %d, want 403", st)
	}
	if st := post(victim, shared, nil); st != http.StatusForbidden {
		t.Errorf("the HMAC of return_to alone: %d, want 403", st)
	}
	own := load(victim)
	if st := post(victim, own, map[string]string{"Origin": "https://evil.example"}); st != http.StatusForbidden {
		t.Errorf("the browser's own token from another site: %d, want 403", st)
	}
	own = load(victim)
	now = now.Add(11 * time.Minute)
	if st := post(victim, own, nil); st != http.StatusForbidden {
		t.Errorf("a token eleven minutes old: %d, want 403", st)
	}
	own = load(victim)
	if st := post(victim, own, nil); st != http.StatusSeeOther {
		t.Fatalf("the browser's own fresh token: %d, want 303", st)
	}
	if st := post(victim, own, nil); st != http.StatusForbidden {
		t.Errorf("the same token again: %d, want 403 (signs in once)", st)
	}
}

// TestConsentShowsClaimsAndPunycode (finding 12): the consent page shows
// a client's name as its own claim, and the redirect's host as the
// browser sends it (punycode), so "Claude" returning to a Cyrillic
// look-alike of a known host reads xn--...
func TestConsentShowsClaimsAndPunycode(t *testing.T) {
	ts := newTestServer(t, false)
	const lookalike = "https://\u0430pple.com/cb" // a Cyrillic а
	tests := []struct {
		name, body string
		redirect   string
		want       []string
		not        []string
	}{
		{"a look-alike host", `{"client_name": "Claude", "redirect_uris": ["` + lookalike + `"]}`, lookalike,
			[]string{"calls itself", "Claude", "https://xn--pple-43d.com", "internationalized name", "own words, not checked"}, []string{"\u0430pple"}},
		{"an ASCII host", `{"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}`, "https://claude.ai/api/mcp/auth_callback",
			[]string{"calls itself", "https://claude.ai<"}, []string{"internationalized"}},
		{"a name that hides characters", `{"client_name": "Claude\u202e", "redirect_uris": ["` + redirect + `"]}`, redirect,
			[]string{"calls itself", `\u202E`, "http://127.0.0.1:9"}, []string{"\u202e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, reg := ts.register(t, tt.body)
			if st != http.StatusCreated {
				t.Fatalf("register: %d %v", st, reg)
			}
			resp, err := ts.http.Get(ts.authorizeURL(reg["client_id"].(string), verifier, func(q url.Values) { q.Set("redirect_uri", tt.redirect) }))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the consent page lacks %q:\n%s", w, body)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(body, n) {
					t.Errorf("the consent page shows %q:\n%s", n, body)
				}
			}
		})
	}
}

// TestPublicUnicast (finding 7): metadata documents are fetched from the
// allow-listed public unicast ranges only; shared address space,
// benchmarking, documentation, 6to4 and every other special block are
// refused, as an IPv4 address dressed as IPv6 is.
func TestPublicUnicast(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"223.255.255.254", true},
		{"2606:4700:4700::1111", true},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"198.18.0.1", false},
		{"198.19.255.254", false},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"192.168.1.1", false},
		{"127.0.0.1", false},
		{"169.254.169.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::1", false},
		{"::", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::a00:1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
		{"2001::1", false},
		{"2002:a00:1::1", false},
		{"fe80::1%eth0", false},
	}
	for _, tt := range tests {
		if got := publicUnicast(netip.MustParseAddr(tt.addr)); got != tt.public {
			t.Errorf("publicUnicast(%s) = %v, want %v", tt.addr, got, tt.public)
		}
	}
}

// TestDocumentFetchErrorsAreOne (finding 7): whatever stops a metadata
// document's fetch (an address that is not public, a refused port, a TLS
// error, an untrusted certificate, a timeout, a status other than 200),
// the answer is one generic sentence that names no address.
func TestDocumentFetchErrorsAreOne(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	t.Cleanup(plain.Close)
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsServer.Close)
	closed := httptest.NewServer(nil)
	closedURL := closed.URL
	closed.Close()
	public, err := New(newTestServer(t, false).store, Options{PublicURL: func() string { return "http://127.0.0.1:1" }, SignIn: &fixedPerson{}, SessionKey: NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	loopback, err := New(newTestServer(t, false).store, Options{PublicURL: func() string { return "http://127.0.0.1:1" }, SignIn: &fixedPerson{},
		SessionKey: NewKey(), AllowLoopbackDocuments: true})
	if err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	https := func(u string) string { return strings.Replace(u, "http://", "https://", 1) + "/client.json" }
	tests := []struct {
		name string
		s    *Server
		ctx  context.Context
		id   string
	}{
		{"a loopback address, from a deployment", public, context.Background(), https(tlsServer.URL)},
		{"a refused port", loopback, context.Background(), https(closedURL)},
		{"TLS to a plain HTTP server", loopback, context.Background(), https(plain.URL)},
		{"an untrusted certificate", loopback, context.Background(), https(tlsServer.URL)},
		{"a timeout", loopback, expired, https(tlsServer.URL)},
		{"status 404", loopback, context.Background(), plain.URL + "/client.json"},
	}
	for _, tt := range tests {
		_, err := tt.s.fetchDocument(tt.ctx, tt.id)
		if err == nil || err.Error() != errDocumentFetch {
			t.Errorf("%s: %v, want the one generic error", tt.name, err)
		}
	}
}

// TestRegistrationBounded (finding 4): new clients are counted per
// address (an IPv6 /64) and in all; past either limit registration is
// refused with 429 and Retry-After and stores nothing; a registered
// client nobody signs in with expires (and the sweep deletes it), one
// that is used lives as long as its grant.
func TestRegistrationBounded(t *testing.T) {
	ts := newTestServer(t, false)
	srv, err := New(ts.store, Options{PublicURL: func() string { return ts.url }, SignIn: ts.sign, SessionKey: NewKey(),
		Now: func() time.Time { return ts.now }, ClientsPerAddress: 3, MaxUnusedClients: 7})
	if err != nil {
		t.Fatal(err)
	}
	register := func(addr string) (int, http.Header, string) {
		r := httptest.NewRequest("POST", PathRegister, strings.NewReader(`{"client_name": "x", "redirect_uris": ["`+redirect+`"]}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w.Code, w.Header(), w.Body.String()
	}
	for i := range 3 {
		if st, _, body := register("192.0.2.7:4000"); st != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, st, body)
		}
	}
	if st, h, body := register("192.0.2.7:4001"); st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("a fourth registration from the address: %d %v %s, want 429 with Retry-After", st, h, body)
	}
	for i := 5; i < 8; i++ {
		if st, _, body := register(fmt.Sprintf("[2001:db8:1:2::%d]:4000", i)); st != http.StatusCreated {
			t.Fatalf("another address, %d: %d %s", i, st, body)
		}
	}
	if st, _, body := register("[2001:db8:1:2::99]:4000"); st != http.StatusTooManyRequests || !strings.Contains(body, "this address") {
		t.Fatalf("a fourth from the same IPv6 /64: %d %s, want 429 for the address", st, body)
	}
	if st, _, body := register("198.51.100.9:4000"); st != http.StatusCreated {
		t.Fatalf("the seventh new client: %d %s", st, body)
	}
	if st, h, body := register("203.0.113.5:4000"); st != http.StatusTooManyRequests || !strings.Contains(body, "as many new clients") || h.Get("Retry-After") == "" {
		t.Fatalf("past the cap on new clients: %d %s, want 429", st, body)
	}

	// Expiry: a fresh server's client, used and unused.
	ts = newTestServer(t, false)
	usedID, tokens := ts.signedIn(t)
	_, reg := ts.register(t, `{"client_name": "unused", "redirect_uris": ["`+redirect+`"]}`)
	unusedID := reg["client_id"].(string)
	ts.now = ts.now.Add(25 * time.Hour)
	if _, err := ts.client(context.Background(), unusedID); err == nil {
		t.Errorf("an unused client a day later is still accepted")
	}
	if n, err := ts.store.Sweep(ts.now); err != nil || n == 0 {
		t.Errorf("sweep: %d %v, want the unused client deleted", n, err)
	}
	if _, err := ts.store.OAuthClient(context.Background(), unusedID); err == nil {
		t.Errorf("the unused client is still stored after the sweep")
	}
	st, out := ts.tokenForm(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)}, "client_id": {usedID}})
	if st != http.StatusOK {
		t.Fatalf("the used client's refresh a day later: %d %v", st, out)
	}
}

// TestSessionsEnd (finding 13): a sign-in is a stored session: signing out
// ends it for every copy of its cookie, a cross-site sign-out is refused,
// and removing the person's credential ends their sessions.
func TestSessionsEnd(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &DevSignIn{Issuer: "http://127.0.0.1/oauth/dev-signin", Key: NewKey(), Sessions: st}
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	returnTo := "/approve/cf_1"
	signIn := func(email string) (*http.Client, []*http.Cookie) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape(returnTo))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))[1]
		resp, err = c.PostForm(hs.URL+PathDevSignIn, url.Values{"return_to": {returnTo}, "csrf": {tok}, "email": {email}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign in: %d", resp.StatusCode)
		}
		return c, jar.Cookies(mustURL(hs.URL + "/"))
	}
	signedIn := func(cookies []*http.Cookie) bool {
		r := httptest.NewRequest("GET", "/approve/cf_1", nil)
		for _, ck := range cookies {
			r.AddCookie(ck)
		}
		_, ok := d.Person(r)
		return ok
	}
	signOutForm := func(c *http.Client) string {
		t.Helper()
		resp, err := c.Get(hs.URL + PathSignOut)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
		if m == nil {
			t.Fatalf("GET %s: %d, no form:\n%s", PathSignOut, resp.StatusCode, body)
		}
		return html.UnescapeString(m[1])
	}

	ada, copied := signIn("ada@example.com")
	if !signedIn(copied) {
		t.Fatal("ada is not signed in after signing in")
	}
	tok := signOutForm(ada)
	req, _ := http.NewRequest("POST", hs.URL+PathSignOut, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := ada.Do(req); err != nil || resp.StatusCode != http.StatusForbidden || !signedIn(copied) {
		t.Fatalf("a cross-site sign-out: %v %v, want 403 and the session on", resp, err)
	}
	resp, err := ada.PostForm(hs.URL+PathSignOut, url.Values{"csrf": {tok}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sign out: %v %v", resp, err)
	}
	resp.Body.Close()
	if signedIn(copied) {
		t.Error("a copy of the cookie still signs ada in after she signed out")
	}

	// Removing the person's credential ends their sessions.
	_, graceCookies := signIn("grace@example.com")
	if err := st.CreateCredential(context.Background(), countersign.Credential{ID: "user_grace", Choice: countersign.AskPerson,
		Issuer: d.Issuer, Subject: "grace@example.com"}); err != nil {
		t.Fatal(err)
	}
	if !signedIn(graceCookies) {
		t.Fatal("grace is not signed in")
	}
	if err := st.DeleteCredential(context.Background(), "user_grace"); err != nil {
		t.Fatal(err)
	}
	if signedIn(graceCookies) {
		t.Error("grace is still signed in after her credential was removed")
	}
}

// TestConsentRefusesCrossSitePost: the consent form posted from another
// site allows nothing, even with the person's session and a valid form.
func TestConsentRefusesCrossSitePost(t *testing.T) {
	ts := newTestServer(t, false)
	_, reg := ts.register(t, `{"client_name": "C", "redirect_uris": ["`+redirect+`"]}`)
	resp, err := ts.http.Get(ts.authorizeURL(reg["client_id"].(string), verifier, nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := requestField.FindStringSubmatch(string(body))
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		req, _ := http.NewRequest("POST", ts.url+PathAuthorize, strings.NewReader(url.Values{"request": {m[1]}, "decision": {"allow"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := ts.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("%v: %d %s, want 403 and no redirect", h, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}
