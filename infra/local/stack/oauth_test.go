package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/shared/views"
)

// signInBrowser is a person's browser in the OAuth flow: it follows the
// authorization URL to the development sign-in page, signs in as email,
// allows the client on the consent page, and returns what the redirect to
// the client carried (never following it: the client is not listening).
type signInBrowser struct {
	tb    testing.TB
	email string
	// deny presses Deny on the consent page.
	deny   bool
	client *http.Client
	// consent is the last consent page's HTML.
	consent string
	// clientID is the client_id of the last authorization URL.
	clientID string
	// provider, when set, is the identity provider people sign in at: the
	// browser signs in on its login form as email (a username there).
	provider *oidctest.Provider
}

func newSignInBrowser(tb testing.TB, email string) *signInBrowser {
	jar, _ := cookiejar.New(nil)
	return &signInBrowser{tb: tb, email: email, client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var (
	csrfRE    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	requestRE = regexp.MustCompile(`name="request" value="([^"]+)"`)
	returnRE  = regexp.MustCompile(`name="return_to" value="([^"]+)"`)
)

// fetch is an auth.AuthorizationCodeFetcher.
func (b *signInBrowser) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	next := args.URL
	start, err := url.Parse(next)
	if err != nil {
		return nil, err
	}
	b.clientID = start.Query().Get("client_id")
	visited := map[string]bool{start.Host: true} // countersign, and its provider
	if b.provider != nil {
		p, _ := url.Parse(b.provider.Issuer)
		visited[p.Host] = true
	}
	for range 16 {
		resp, err := b.client.Get(next)
		if err != nil {
			return nil, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		base, _ := url.Parse(next)
		switch {
		case resp.StatusCode/100 == 3:
			loc, err := base.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, err
			}
			if !visited[loc.Host] { // back to the client
				return b.result(loc)
			}
			next = loc.String()
		case b.provider != nil && oidctest.IsLoginForm(body): // the provider's sign-in
			next = b.provider.LogIn(b.tb, b.client, body, b.email).String()
		case csrfRE.Match(body): // the sign-in page
			f := url.Values{"csrf": {formValue(csrfRE, body)}, "return_to": {formValue(returnRE, body)}, "email": {b.email}}
			loc, err := b.post(base, f)
			if err != nil {
				return nil, err
			}
			next = loc.String()
		case requestRE.Match(body): // the consent page
			b.consent = string(body)
			decision := "allow"
			if b.deny {
				decision = "deny"
			}
			loc, err := b.post(base, url.Values{"request": {formValue(requestRE, body)}, "decision": {decision}})
			if err != nil {
				return nil, err
			}
			return b.result(loc)
		default:
			return nil, fmt.Errorf("GET %s: HTTP %d: %s", next, resp.StatusCode, body)
		}
	}
	return nil, errors.New("too many steps")
}

func (b *signInBrowser) post(base *url.URL, f url.Values) (*url.URL, error) {
	resp, err := b.client.PostForm(base.String(), f)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		return nil, fmt.Errorf("POST %s: HTTP %d: %s", base, resp.StatusCode, body)
	}
	return base.Parse(resp.Header.Get("Location"))
}

func (b *signInBrowser) result(loc *url.URL) (*auth.AuthorizationResult, error) {
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s (%s), iss %q", e, q.Get("error_description"), q.Get("iss"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

func formValue(re *regexp.Regexp, body []byte) string {
	s := string(re.FindSubmatch(body)[1])
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// oauthSession connects the MCP Go SDK's client to /mcp with no key: it
// walks OAuth discovery from the 401, registers (RFC 7591), and the
// browser signs in and consents.
func (h *harness) oauthSession(b *signInBrowser, name string, k clientKind) (*mcp.ClientSession, *auth.AuthorizationCodeHandler) {
	h.t.Helper()
	redirect := "http://127.0.0.1:1/callback"
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: name, RedirectURIs: []string{redirect}}},
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: b.fetch,
		RequestRefreshToken:      true,
	})
	if err != nil {
		h.t.Fatalf("NewAuthorizationCodeHandler: %v", err)
	}
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if k.elicit != nil {
		elicit := k.elicit
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return elicit(r) }
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	if k.url {
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, opts)
	t := &mcp.StreamableClientTransport{Endpoint: h.stack.URL + "/mcp", DisableStandaloneSSE: true, OAuthHandler: handler,
		HTTPClient: &http.Client{Timeout: 30 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: k.protocol})
	if err != nil {
		h.t.Fatalf("connect %s with OAuth: %v", name, err)
	}
	h.t.Cleanup(func() { _ = s.Close() })
	return s, handler
}

// TestOAuthMCPClientSignsInAndCalls: the MCP Go SDK's OAuth client, with
// no key, gets a 401 pointing at the Protected Resource Metadata, finds
// the authorization server, registers, sends the person through the
// development sign-in and the consent page naming the client, exchanges
// the code with PKCE, and lists and calls tools as the person's user
// credential (origin chat, ask_person).
func TestOAuthMCPClientSignsInAndCalls(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := newSignInBrowser(t, "ann@example.com")
	s, handler := h.oauthSession(b, "oauth-test-client", clientKind{})
	if !strings.Contains(b.consent, "oauth-test-client") || !strings.Contains(b.consent, "Allow") {
		t.Fatalf("the consent page does not name the client: %s", b.consent)
	}
	ctx := context.Background()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("no tools listed for the signed-in person")
	}
	res := callTool(t, s, "crm__get_contacts_by_id", map[string]any{"id": "5"}, nil)
	if res.IsError {
		t.Fatalf("crm__get_contacts_by_id as the person: %s", text(res))
	}

	// The credential is the person's: GET /v1/credentials/me with the token.
	ts, err := handler.TokenSource(ctx)
	if err != nil {
		t.Fatalf("token source: %v", err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if !strings.HasPrefix(tok.AccessToken, "csat_") || tok.RefreshToken == "" {
		t.Fatalf("token = %q / refresh %q, want an access token csat_... and a refresh token", tok.AccessToken, tok.RefreshToken)
	}
	// The MCP client's token is for /mcp only (RFC 8707); the JSON API
	// takes a token requested for it.
	if me := h.do("GET", "/v1/credentials/me", tok.AccessToken, nil, nil); me.status != http.StatusUnauthorized {
		t.Fatalf("/v1/credentials/me with the /mcp token: %d %s, want 401", me.status, me.body)
	}
	apiToken, _ := h.apiToken(b)
	me := h.do("GET", "/v1/credentials/me", apiToken, nil, nil)
	if me.status != 200 || !strings.HasPrefix(me.str("id"), "user_") || me.str("choice") != "ask_person" || me.str("user") != "ann@example.com" ||
		me.get("asks_in_client") != true || me.get("last_client.name") != "oauth-test-client" {
		t.Fatalf("/v1/credentials/me with the access token: %d %s", me.status, me.body)
	}
	// Never from the query string.
	for _, q := range []string{"access_token", "token", "key"} {
		if r := h.do("GET", "/v1/credentials/me?"+q+"="+url.QueryEscape(apiToken), "", nil, nil); r.status != http.StatusUnauthorized {
			t.Errorf("the token in ?%s: %d %s, want 401", q, r.status, r.body)
		}
	}
}

// tokenRequest posts a form to /oauth/token.
func (h *harness) tokenRequest(f url.Values) (int, map[string]any) {
	h.t.Helper()
	resp, err := http.PostForm(h.stack.URL+"/oauth/token", f)
	if err != nil {
		h.t.Fatalf("POST /oauth/token: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestOAuthRefreshRotatesAndReuseRevokes: a refresh token works once and
// is replaced; presenting the old one again revokes the whole grant, so
// the access token issued by the rotation and the new refresh token stop
// working from the next call on. RFC 7009 revocation of a refresh token
// does the same.
func TestOAuthRefreshRotatesAndReuseRevokes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := newSignInBrowser(t, "bob@example.com")
	_, handler := h.oauthSession(b, "rotation-client", clientKind{})
	ts, _ := handler.TokenSource(context.Background())
	first, err := ts.Token()
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	clientID := b.clientID

	st, out := h.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {clientID}})
	if st != 200 || out["refresh_token"] == first.RefreshToken || out["access_token"] == nil {
		t.Fatalf("refresh: %d %v", st, out)
	}
	second := &oauth2.Token{AccessToken: out["access_token"].(string), RefreshToken: out["refresh_token"].(string)}
	list := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	if r := h.raw(rawMCP{key: second.AccessToken, protocol: "2025-06-18", body: list}); r.status != 200 {
		t.Fatalf("the rotated access token is refused: %d %s", r.status, r.body)
	}
	// Reuse of the first refresh token: refused, and the grant is revoked.
	st, out = h.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {clientID}})
	if st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v, want 400 invalid_grant", st, out)
	}
	me := h.raw(rawMCP{key: second.AccessToken, protocol: "2025-06-18", body: list})
	if me.status != 401 || !strings.Contains(me.header.Get("WWW-Authenticate"), `resource_metadata="`+h.stack.URL+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("after reuse, the family's access token: %d %v %s, want 401 with resource_metadata", me.status, me.header, me.body)
	}
	st, out = h.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {second.RefreshToken}, "client_id": {clientID}})
	if st != 400 {
		t.Fatalf("after reuse, the family's newest refresh token: %d %v, want 400", st, out)
	}
}

// TestAskPersonKeyCannotApproveItself is the self-approval the demo key
// allowed: a program holding a plain ask_person key, whose MCP client
// declares form elicitation and MCP Apps and answers "accept", is never
// asked in the client. The call pauses for the approvers' links, the
// card's tools are not offered to it, DELETE /contacts/55 does not run,
// and it runs once when an approver approves. The same call by a person
// signed in with OAuth is asked in their client.
func TestAskPersonKeyCannotApproveItself(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if me := h.do("GET", "/v1/credentials/me", "cs_test_program", nil, nil); me.status != 200 || me.get("asks_in_client") != false || me.get("user") != nil {
		t.Fatalf("/v1/credentials/me of the key: %d %s, want asks_in_client false and no user", me.status, me.body)
	}
	asked := 0
	selfApprove := func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return accept(true)(r)
	}
	for i, k := range []clientKind{
		{name: "Program MRTR", elicit: selfApprove, apps: true},
		{name: "Program legacy", elicit: selfApprove, apps: true, protocol: "2025-11-25"},
	} {
		contact := fmt.Sprint(55 + 10*i)
		t.Run(k.name, func(t *testing.T) {
			s := h.mcpSession("cs_test_program", k, nil)
			tools, err := s.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range tools.Tools {
				if tool.Name == "review_pending" || tool.Name == "card_decide" {
					t.Errorf("the card's tool %s is offered to a key", tool.Name)
				}
			}
			r := callTool(t, s, "crm__deleteContact", map[string]any{"id": contact}, nil)
			if asked != 0 {
				t.Fatalf("the key's client was asked %d times", asked)
			}
			if !strings.Contains(text(r), "not a person signed in to this client") || structured(t, r)["status"] != "confirmation_required" {
				t.Fatalf("result %q, want paused for the approvers", text(r))
			}
			if n := h.upstream.Count("DELETE", "/contacts/"+contact); n != 0 {
				t.Fatalf("DELETE /contacts/%s ran %d times with nobody asked", contact, n)
			}
			id := structured(t, r)["confirmation_id"].(string)
			if got := h.post(h.approvalLink(id), "approve", nil, ""); got.status != http.StatusOK {
				t.Fatalf("approver's approval: %d %s", got.status, got.body)
			}
			var d *mcp.CallToolResult
			for range 20 { // redeemed (running) comes before executed
				d = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, nil)
				if structured(t, d)["status"] == "executed" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if structured(t, d)["status"] != "executed" {
				t.Fatalf("after the approvers approved: %q", text(d))
			}
			if n := h.upstream.Count("DELETE", "/contacts/"+contact); n != 1 {
				t.Fatalf("DELETE /contacts/%s ran %d times after one approval, want 1", contact, n)
			}
		})
	}
	t.Run("a person is asked in their client", func(t *testing.T) {
		personAsked := 0
		s, _ := h.oauthSession(newSignInBrowser(t, "carol@example.com"), "Person client", clientKind{elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			personAsked++
			return accept(true)(r)
		}})
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "56"}, nil)
		if personAsked != 1 || !strings.HasPrefix(text(r), "404") || h.upstream.Count("DELETE", "/contacts/56") != 1 {
			t.Fatalf("person: asked %d times, result %q, DELETE ran %d times; want asked once and run once", personAsked, text(r), h.upstream.Count("DELETE", "/contacts/56"))
		}
		// The record names carol, who answered in her client, as a person.
		list := h.do(http.MethodGet, "/v1/operator/confirmations?limit=1", operatorKey, nil, nil)
		if list.str("confirmations.0.operations.0.path") != "/contacts/56" {
			t.Fatalf("the newest confirmation is not the answer in the client: %s", list.body)
		}
		c, err := h.stack.app.Confirm.Get(context.Background(), list.str("confirmations.0.id"))
		if by := views.DecidedBy(c); err != nil || by == nil || by.Kind != "person" || by.Email != "carol@example.com" || by.Channel != "client:Person client" {
			t.Fatalf("the answer in the client is recorded as %+v (%v), want carol, a person, in her client", by, err)
		}
	})
}
