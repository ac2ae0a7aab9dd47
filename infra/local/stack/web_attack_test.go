package stack

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// The web findings of the attack pass (issue 26): each test replays one
// through the stack's real routes.

// rawHTTP sends one request with an explicit Host and headers and returns
// the status, headers and body.
func (h *harness) rawHTTP(method, path, host string, body string, headers map[string]string) (int, http.Header, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.stack.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestDNSRebindingEverySurface (finding 1): a page that rebinds its own
// name to 127.0.0.1 reaches no surface of the local stack (the sign-in
// page, OAuth, approvals, the operator routes, /v1); the same requests
// naming this machine are served.
func TestDNSRebindingEverySurface(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	rows := []struct {
		name, method, path, body string
		headers                  map[string]string
	}{
		{"development sign-in page", "GET", "/oauth/dev-signin?return_to=%2Fapprove%2Fcf_x", "", nil},
		{"development sign-in", "POST", "/oauth/dev-signin", "return_to=%2Fapprove%2Fcf_x&email=a%40example.com", form},
		{"client registration", "POST", "/oauth/register", `{"redirect_uris": ["https://evil.example/cb"]}`, map[string]string{"Content-Type": "application/json"}},
		{"authorize", "GET", "/oauth/authorize?response_type=code&client_id=x", "", nil},
		{"token", "POST", "/oauth/token", "grant_type=authorization_code&code=x", form},
		{"server metadata", "GET", "/.well-known/oauth-authorization-server", "", nil},
		{"approval page", "GET", "/approve/cf_x", "", nil},
		{"approval POST", "POST", "/approve/cf_x", "decision=approve", form},
		{"operator page", "GET", "/operator", "", nil},
		{"operator API", "GET", "/v1/operator/confirmations", "", map[string]string{"Authorization": "Bearer cs_test_op"}},
		{"/v1", "GET", "/v1/credentials/me", "", map[string]string{"Authorization": "Bearer cs_test_run"}},
		{"/v1/calls", "POST", "/v1/calls", `{"connection":"crm","method":"DELETE","path":"/contacts/3","intent":"write"}`,
			map[string]string{"Authorization": "Bearer cs_test_run", "Content-Type": "application/json"}},
	}
	port := h.stack.URL[strings.LastIndex(h.stack.URL, ":"):]
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			st, hd, body := h.rawHTTP(r.method, r.path, "rebound.attacker.example"+port, r.body, r.headers)
			if st != http.StatusForbidden || !strings.Contains(body, "does not name this machine") || hd.Get("Set-Cookie") != "" {
				t.Errorf("rebound Host: %d %v %s, want 403 naming the Host and no cookie", st, hd, body)
			}
			for _, host := range []string{"", "localhost" + port} {
				if st, _, body := h.rawHTTP(r.method, r.path, host, r.body, r.headers); st == http.StatusForbidden && strings.Contains(body, "does not name this machine") {
					t.Errorf("Host %q refused: %s", host, body)
				}
			}
		})
	}
	if n := h.upstream.Count("DELETE", "/contacts/3"); n != 2 {
		t.Errorf("the DELETE ran %d times, want twice (the two Hosts naming this machine), never for the rebound one", n)
	}
}

// TestApprovalPostCSRF (finding 8): a signed-in approver's cookie decides
// nothing for a form on another site: a POST with another Origin, or
// without the page's CSRF token, is refused and the call stays pending;
// the page's own form decides.
func TestApprovalPostCSRF(t *testing.T) {
	h := newHarness(t, harnessOptions{approverSignIn: "optional"})
	id, link := pauseForApprovers(h)
	grace := newApproverBrowser(h, "grace@example.com")
	page := grace.open(link + "&signin=1")
	if page.status != http.StatusOK || !strings.Contains(string(page.body), `name="csrf"`) {
		t.Fatalf("grace's page: %d, want a form with a csrf field:\n%s", page.status, page.body)
	}
	action, form := pageForm(t, page, "approve")
	post := func(form url.Values, headers map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, h.stack.URL+action, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := grace.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	noToken := url.Values{}
	for k, v := range form {
		if k != "csrf" {
			noToken[k] = v
		}
	}
	for _, c := range []struct {
		name    string
		form    url.Values
		headers map[string]string
	}{
		{"the page's form from another origin", form, map[string]string{"Origin": "https://evil.example"}},
		{"the page's form, fetch metadata cross-site", form, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"the link's fields with the cookie and no token", noToken, nil},
	} {
		if st := post(c.form, c.headers); st != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, st)
		}
		if got := h.statusOf("cs_test_program", id); got != "pending" {
			t.Fatalf("%s: status %s, want pending", c.name, got)
		}
	}
	if st := post(form, map[string]string{"Origin": h.stack.URL}); st != http.StatusOK {
		t.Fatalf("the page's own form: %d", st)
	}
	if got := h.statusOf("cs_test_program", id); got != "approved" {
		t.Fatalf("after the page's form: %s, want approved", got)
	}
}

// TestAuthorizeNeverRedirectsAnInvalidRequest (finding 5): a client that
// registered itself with any https redirect URI and sends an invalid
// authorization request (response_type=token, no PKCE) gets an error page,
// never a redirect to that URI, signed in or not (RFC 9700 4.11.2).
func TestAuthorizeNeverRedirectsAnInvalidRequest(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	st, _, body := h.rawHTTP("POST", "/oauth/register", "", `{"client_name": "x", "redirect_uris": ["https://evil.example/land"], "token_endpoint_auth_method": "none"}`,
		map[string]string{"Content-Type": "application/json"})
	m := regexp.MustCompile(`"client_id":"([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusCreated || m == nil {
		t.Fatalf("register: %d %s", st, body)
	}
	for _, q := range []url.Values{
		{"response_type": {"token"}, "client_id": {m[1]}, "redirect_uri": {"https://evil.example/land"}},
		{"response_type": {"code"}, "client_id": {m[1]}, "redirect_uri": {"https://evil.example/land"}},
		{"client_id": {m[1]}},
	} {
		st, hd, body := h.rawHTTP("GET", "/oauth/authorize?"+q.Encode(), "", "", nil)
		if st != http.StatusBadRequest || hd.Get("Location") != "" || !strings.Contains(body, "Nothing was sent back") {
			t.Errorf("%s: %d Location %q, want 400 on a page:\n%s", q.Encode(), st, hd.Get("Location"), body)
		}
	}
}

// apiToken runs the authorization code flow for the JSON API (resource
// <url>, RFC 8707) as b, for the client b last signed in to, and returns
// the access and refresh tokens.
func (h *harness) apiToken(b *signInBrowser) (access, refresh string) {
	h.t.Helper()
	const redirect, verifier = "http://127.0.0.1:1/callback", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	q := url.Values{"response_type": {"code"}, "client_id": {b.clientID}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}, "resource": {h.stack.URL}}
	res, err := b.fetch(context.Background(), &auth.AuthorizationArgs{URL: h.stack.URL + "/oauth/authorize?" + q.Encode()})
	if err != nil {
		h.t.Fatalf("authorize for the JSON API: %v", err)
	}
	st, out := h.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {res.Code}, "client_id": {b.clientID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {h.stack.URL}})
	access, _ = out["access_token"].(string)
	refresh, _ = out["refresh_token"].(string)
	if st != http.StatusOK || access == "" {
		h.t.Fatalf("token for the JSON API: %d %v", st, out)
	}
	return access, refresh
}

// TestAudiencePerResourceOnTheStack (finding 6): the MCP client's token
// (resource <url>/mcp) calls /mcp and is refused on /v1; a token for the
// JSON API (resource <url>) calls /v1 and is refused on /mcp.
func TestAudiencePerResourceOnTheStack(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := newSignInBrowser(t, "ann@example.com")
	_, handler := h.oauthSession(b, "audience-client", clientKind{})
	ts, _ := handler.TokenSource(context.Background())
	mcpTok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	apiTok, _ := h.apiToken(b)
	list := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	if r := h.raw(rawMCP{key: mcpTok.AccessToken, protocol: "2025-06-18", body: list}); r.status != http.StatusOK {
		t.Errorf("the /mcp token on /mcp: %d %s", r.status, r.body)
	}
	if r := h.raw(rawMCP{key: apiTok, protocol: "2025-06-18", body: list}); r.status != http.StatusUnauthorized || !strings.Contains(r.body, "another resource") {
		t.Errorf("the JSON API token on /mcp: %d %s, want 401 naming the resource", r.status, r.body)
	}
	if me := h.do("GET", "/v1/credentials/me", mcpTok.AccessToken, nil, nil); me.status != http.StatusUnauthorized || !strings.Contains(string(me.body), "another resource") {
		t.Errorf("the /mcp token on /v1: %d %s, want 401 naming the resource", me.status, me.body)
	}
	if me := h.do("GET", "/v1/credentials/me", apiTok, nil, nil); me.status != http.StatusOK {
		t.Errorf("the JSON API token on /v1: %d %s", me.status, me.body)
	}
}

// TestApproverSignsOut (finding 13): the approval page offers sign-out;
// signing out ends the session on the server, so a copy of the cookie
// taken before signs nobody in.
func TestApproverSignsOut(t *testing.T) {
	h := newHarness(t, harnessOptions{approverSignIn: "optional"})
	_, link := pauseForApprovers(h)
	grace := newApproverBrowser(h, "grace@example.com")
	page := grace.open(link + "&signin=1")
	if page.status != http.StatusOK || !strings.Contains(string(page.body), "Signed in as") || !strings.Contains(string(page.body), `id="signout"`) {
		t.Fatalf("grace's page: %d, want signed in with a sign-out link:\n%s", page.status, page.body)
	}
	copied := grace.cookie
	out := grace.open("/oauth/signout")
	m := csrfRE.FindSubmatch(out.body)
	if out.status != http.StatusOK || m == nil {
		t.Fatalf("GET /oauth/signout: %d\n%s", out.status, out.body)
	}
	resp, err := grace.client.PostForm(h.stack.URL+"/oauth/signout", url.Values{"csrf": {formValue(csrfRE, out.body)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, h.stack.URL+link, nil)
	req.AddCookie(copied)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "Signed in as") {
		t.Errorf("the copied cookie still signs grace in after she signed out:\n%s", body)
	}
}

// TestPublicURLHostIsServed (finding 1): behind a reverse proxy that
// names the stack by public_url's host, every surface answers that Host;
// any other name is still refused.
func TestPublicURLHostIsServed(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s, err := Start(context.Background(), Options{ConfigDir: h.configDir, Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		PublicURL: "https://countersign.example.test", Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	get := func(host, path, key string) int {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Host = host
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/v1/credentials/me", "/.well-known/oauth-authorization-server", "/oauth/dev-signin?return_to=%2Fapprove%2Fcf_1"} {
		if st := get("countersign.example.test", path, "cs_test_run"); st != http.StatusOK {
			t.Errorf("%s with public_url's Host: %d, want 200", path, st)
		}
		if st := get("other.example.test", path, "cs_test_run"); st != http.StatusForbidden {
			t.Errorf("%s with another Host: %d, want 403", path, st)
		}
	}
}
