package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store/embedded"
)

// fixedPerson is a SignIn where one person is always signed in (or
// nobody, when signedIn is false).
type fixedPerson struct {
	p        Person
	signedIn bool
}

func (f *fixedPerson) Person(*http.Request) (Person, bool) { return f.p, f.signedIn }
func (f *fixedPerson) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, "/signin?return_to="+url.QueryEscape(returnTo), http.StatusSeeOther)
}

type testServer struct {
	*Server
	url   string
	store *embedded.Store
	now   time.Time
	sign  *fixedPerson
	http  *http.Client
}

func newTestServer(tb testing.TB, allowLoopbackDocs bool) *testServer {
	tb.Helper()
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "s.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	ts := &testServer{store: st, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		sign: &fixedPerson{p: Person{Issuer: "https://idp.example", Subject: "ann", Email: "ann@example.com"}, signedIn: true},
		http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	hs := httptest.NewUnstartedServer(nil)
	ts.url = "http://" + hs.Listener.Addr().String()
	ts.Server, err = New(st, Options{PublicURL: func() string { return ts.url }, SignIn: ts.sign, SessionKey: NewKey(),
		Now: func() time.Time { return ts.now }, AllowLoopbackDocuments: allowLoopbackDocs})
	if err != nil {
		tb.Fatal(err)
	}
	hs.Config.Handler = ts.Server
	hs.Start()
	tb.Cleanup(hs.Close)
	return ts
}

func (ts *testServer) getJSON(tb testing.TB, path string) map[string]any {
	tb.Helper()
	resp, err := ts.http.Get(ts.url + path)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return out
}

// register registers a public client by RFC 7591.
func (ts *testServer) register(tb testing.TB, body string) (int, map[string]any) {
	tb.Helper()
	resp, err := ts.http.Post(ts.url+PathRegister, "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

const redirect = "http://127.0.0.1:9/cb"

// authorizeURL is a valid authorization request with the verifier's challenge.
func (ts *testServer) authorizeURL(clientID, verifier string, mod func(url.Values)) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st8"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}, "resource": {ts.url + "/mcp"}}
	if mod != nil {
		mod(q)
	}
	return ts.url + PathAuthorize + "?" + q.Encode()
}

// consent follows an authorization URL through the consent page and
// allows; it returns the redirect's query.
func (ts *testServer) consent(tb testing.TB, authURL string) url.Values {
	tb.Helper()
	resp, err := ts.http.Get(authURL)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusFound {
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc.Query()
	}
	m := requestField.FindStringSubmatch(string(body))
	if resp.StatusCode != 200 || m == nil {
		tb.Fatalf("GET authorize: %d %s", resp.StatusCode, body)
	}
	resp, err = ts.http.PostForm(ts.url+PathAuthorize, url.Values{"request": {m[1]}, "decision": {"allow"}})
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		tb.Fatalf("POST consent: %d %v", resp.StatusCode, err)
	}
	return loc.Query()
}

func (ts *testServer) tokenForm(tb testing.TB, f url.Values) (int, map[string]any) {
	tb.Helper()
	resp, err := ts.http.PostForm(ts.url+PathToken, f)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

// signedIn registers a client and runs the flow to tokens.
func (ts *testServer) signedIn(tb testing.TB) (clientID string, tokens map[string]any) {
	tb.Helper()
	st, reg := ts.register(tb, `{"client_name": "Test client", "redirect_uris": ["`+redirect+`"]}`)
	if st != http.StatusCreated {
		tb.Fatalf("register: %d %v", st, reg)
	}
	clientID = reg["client_id"].(string)
	q := ts.consent(tb, ts.authorizeURL(clientID, verifier, nil))
	st, tokens = ts.tokenForm(tb, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {clientID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {ts.url + "/mcp"}})
	if st != 200 {
		tb.Fatalf("token: %d %v", st, tokens)
	}
	return clientID, tokens
}

func TestMetadata(t *testing.T) {
	ts := newTestServer(t, false)
	for _, suffix := range []string{"", "/mcp"} {
		prm := ts.getJSON(t, PathResourceMetadata+suffix)
		if prm["resource"] != ts.url+suffix || prm["authorization_servers"].([]any)[0] != ts.url {
			t.Errorf("protected resource metadata%s = %v", suffix, prm)
		}
	}
	asm := ts.getJSON(t, PathServerMetadata)
	for k, want := range map[string]any{"issuer": ts.url, "registration_endpoint": ts.url + PathRegister, "token_endpoint": ts.url + PathToken,
		"revocation_endpoint": ts.url + PathRevoke, "client_id_metadata_document_supported": true,
		"authorization_response_iss_parameter_supported": true} {
		if asm[k] != want {
			t.Errorf("metadata %s = %v, want %v", k, asm[k], want)
		}
	}
	if _, ok := asm["jwks_uri"]; ok {
		t.Errorf("metadata has jwks_uri %v; tokens are opaque, there is none", asm["jwks_uri"])
	}
	if m := asm["code_challenge_methods_supported"].([]any); len(m) != 1 || m[0] != "S256" {
		t.Errorf("code_challenge_methods_supported = %v, want [S256] only", m)
	}
}

func TestCodeFlowIssuesBoundTokens(t *testing.T) {
	ts := newTestServer(t, false)
	_, tokens := ts.signedIn(t)
	access := tokens["access_token"].(string)
	cred, ok, err := ts.Verify(context.Background(), access, "/mcp")
	if !ok || err != nil || cred.ID != CredentialID(ts.sign.p) || !cred.IsPerson() || cred.Choice.String() != "ask_person" || cred.Origin.String() != "chat" {
		t.Fatalf("Verify = %+v, %v, %v; want the person's user credential on ask_person", cred, ok, err)
	}
	// Kept only as hashes.
	if _, err := ts.store.OAuthToken(context.Background(), access); err == nil {
		t.Fatal("the access token itself is a store key")
	}
	if _, err := ts.store.OAuthToken(context.Background(), hash(access)); err != nil {
		t.Fatalf("the access token's hash is not stored: %v", err)
	}
	// An API key is not a token: Verify leaves it to the key lookup.
	if _, ok, _ := ts.Verify(context.Background(), "cs_demo_ask", "/mcp"); ok {
		t.Fatal("Verify claimed an API key")
	}
	// Expired after AccessTTL.
	ts.now = ts.now.Add(DefaultAccessTTL + time.Second)
	if _, ok, err := ts.Verify(context.Background(), access, "/mcp"); !ok || fault.CodeOf(err) != fault.Unauthenticated {
		t.Fatalf("expired access token: ok %v err %v, want unauthenticated", ok, err)
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	ts := newTestServer(t, false)
	_, reg := ts.register(t, `{"client_name": "C", "redirect_uris": ["`+redirect+`"]}`)
	id := reg["client_id"].(string)
	cases := []struct {
		name      string
		mod       func(url.Values)
		status    int    // a page, never a redirect (RFC 9700 4.11.2)
		errorCode string // the error the page names
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "csc_nobody") }, 400, ""},
		{"unregistered redirect", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, 400, ""},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, 400, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, 400, "invalid_request"},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, 400, "unsupported_response_type"},
		{"another resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, 400, "invalid_target"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "admin") }, 400, "invalid_scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := ts.http.Get(ts.authorizeURL(id, verifier, c.mod))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("Location") != "" || !strings.Contains(string(body), c.errorCode) {
				t.Fatalf("%d Location %q, want %d on a page naming %q (never a redirect):\n%s", resp.StatusCode, resp.Header.Get("Location"), c.status, c.errorCode, body)
			}
		})
	}
	t.Run("nobody signed in goes to sign in", func(t *testing.T) {
		ts.sign.signedIn = false
		defer func() { ts.sign.signedIn = true }()
		resp, err := ts.http.Get(ts.authorizeURL(id, verifier, nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin?") {
			t.Fatalf("%d %s, want the sign-in", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("consent shown to another person", func(t *testing.T) {
		resp, _ := ts.http.Get(ts.authorizeURL(id, verifier, nil))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := requestField.FindStringSubmatch(string(body))
		ts.sign.p.Subject = "mallory"
		defer func() { ts.sign.p.Subject = "ann" }()
		resp, _ = ts.http.PostForm(ts.url+PathAuthorize, url.Values{"request": {m[1]}, "decision": {"allow"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("iss on success", func(t *testing.T) {
		q := ts.consent(t, ts.authorizeURL(id, verifier, nil))
		if q.Get("iss") != ts.url || q.Get("state") != "st8" || !strings.HasPrefix(q.Get("code"), codePrefix) {
			t.Fatalf("redirect query %v", q)
		}
	})
}

func TestTokenRefusals(t *testing.T) {
	ts := newTestServer(t, false)
	_, reg := ts.register(t, `{"client_name": "C", "redirect_uris": ["`+redirect+`"]}`)
	id := reg["client_id"].(string)
	exchange := func(code, v string) (int, map[string]any) {
		return ts.tokenForm(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {id}, "redirect_uri": {redirect}, "code_verifier": {v}})
	}
	t.Run("wrong verifier spends the code", func(t *testing.T) {
		code := ts.consent(t, ts.authorizeURL(id, verifier, nil)).Get("code")
		if st, out := exchange(code, strings.Repeat("x", 43)); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("wrong verifier: %d %v", st, out)
		}
		if st, out := exchange(code, verifier); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("the code after a wrong verifier: %d %v, want invalid_grant", st, out)
		}
	})
	t.Run("code used twice revokes its tokens", func(t *testing.T) {
		code := ts.consent(t, ts.authorizeURL(id, verifier, nil)).Get("code")
		st, first := exchange(code, verifier)
		if st != 200 {
			t.Fatalf("first use: %d %v", st, first)
		}
		if _, _, err := ts.Verify(context.Background(), first["access_token"].(string), "/mcp"); err != nil {
			t.Fatalf("the first use's token before the reuse: %v", err)
		}
		if st, out := exchange(code, verifier); st != 400 || out["error"] != "invalid_grant" || !strings.Contains(out["error_description"].(string), "revoked") {
			t.Fatalf("second use: %d %v", st, out)
		}
		// RFC 6749 4.1.2: the tokens issued for the code are revoked.
		if _, _, err := ts.Verify(context.Background(), first["access_token"].(string), "/mcp"); fault.CodeOf(err) != fault.Unauthenticated {
			t.Fatalf("the first use's access token after the reuse: %v, want refused", err)
		}
		if st, out := ts.tokenForm(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first["refresh_token"].(string)}, "client_id": {id}}); st != 400 {
			t.Fatalf("the first use's refresh token after the reuse: %d %v, want 400", st, out)
		}
		// The spent code's record is no token.
		if _, _, err := ts.Verify(context.Background(), code, "/mcp"); err != nil {
			t.Fatalf("Verify of a code: %v", err) // not an access token at all: ok false, no error
		}
	})
	t.Run("expired code", func(t *testing.T) {
		code := ts.consent(t, ts.authorizeURL(id, verifier, nil)).Get("code")
		ts.now = ts.now.Add(2 * time.Minute)
		if st, out := exchange(code, verifier); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("expired code: %d %v", st, out)
		}
	})
	t.Run("parameters in the query string", func(t *testing.T) {
		resp, err := ts.http.Post(ts.url+PathToken+"?grant_type=authorization_code", "application/x-www-form-urlencoded", strings.NewReader("client_id="+id))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("confidential client without its secret", func(t *testing.T) {
		st, reg := ts.register(t, `{"redirect_uris": ["`+redirect+`"], "token_endpoint_auth_method": "client_secret_post"}`)
		secret, _ := reg["client_secret"].(string)
		if st != 201 || !strings.HasPrefix(secret, secretPrefix) {
			t.Fatalf("register: %d %v", st, reg)
		}
		c, err := ts.store.OAuthClient(context.Background(), reg["client_id"].(string))
		if err != nil || c.SecretHash != hash(secret) {
			t.Fatalf("stored client %+v, %v: want the secret's hash only", c, err)
		}
		if st, out := ts.tokenForm(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {c.ID}, "client_secret": {"wrong"}}); st != 401 || out["error"] != "invalid_client" {
			t.Fatalf("wrong secret: %d %v", st, out)
		}
	})
}

func TestRegistrationRefusals(t *testing.T) {
	ts := newTestServer(t, false)
	for name, body := range map[string]string{
		"no redirect":          `{"client_name": "C"}`,
		"http not loopback":    `{"redirect_uris": ["http://evil.example/cb"]}`,
		"fragment":             `{"redirect_uris": ["https://a.example/cb#x"]}`,
		"implicit grant":       `{"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}`,
		"unknown auth method":  `{"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}`,
		"not JSON":             `redirect_uris=x`,
		"redirect_uris twice":  `{"redirect_uris": ["https://a.example/cb"], "redirect_uris": ["https://evil.example/cb"]}`,
		"nested too deep":      `{"redirect_uris": ["https://a.example/cb"], "x": ` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
		"eleven redirect URIs": `{"redirect_uris": [` + strings.TrimSuffix(strings.Repeat(`"https://a.example/cb",`, 11), ",") + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if st, out := ts.register(t, body); st != 400 || out["error"] == nil {
				t.Fatalf("%d %v, want 400 with an error", st, out)
			}
		})
	}
}

func TestRevocation(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer(t, false)
	id, tokens := ts.signedIn(t)
	access := tokens["access_token"].(string)
	resp, _ := ts.http.PostForm(ts.url+PathRevoke, url.Values{"token": {access}, "client_id": {id}})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if _, ok, err := ts.Verify(ctx, access, "/mcp"); !ok || fault.CodeOf(err) != fault.Unauthenticated {
		t.Fatalf("revoked access token: %v %v", ok, err)
	}
	// Revoking the refresh token ends the grant.
	resp, _ = ts.http.PostForm(ts.url+PathRevoke, url.Values{"token": {tokens["refresh_token"].(string)}, "client_id": {id}})
	resp.Body.Close()
	if st, out := ts.tokenForm(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)}, "client_id": {id}}); st != 400 {
		t.Fatalf("refresh after revocation: %d %v", st, out)
	}
	// An unknown token is answered 200 and changes nothing.
	resp, _ = ts.http.PostForm(ts.url+PathRevoke, url.Values{"token": {"csat_nothing"}, "client_id": {id}})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("unknown token: %d", resp.StatusCode)
	}
}

func TestVerifyRefusesOtherAudience(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer(t, false)
	_, tokens := ts.signedIn(t)
	tok, _ := ts.store.OAuthToken(ctx, hash(tokens["access_token"].(string)))
	g, _ := ts.store.OAuthGrant(ctx, tok.Grant)
	g.Resource = "https://other.example/mcp"
	if err := ts.store.UpdateOAuthGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ts.Verify(ctx, tokens["access_token"].(string), "/mcp"); !ok || fault.CodeOf(err) != fault.Unauthenticated || !strings.Contains(err.Error(), "another resource") {
		t.Fatalf("token of another resource: %v %v", ok, err)
	}
}

// TestAudiencePerResource (finding 6): a token issued for /mcp works on
// /mcp only, one issued for the JSON API (the public URL) on the JSON API
// only (RFC 8707).
func TestAudiencePerResource(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer(t, false)
	_, mcpTokens := ts.signedIn(t)
	_, reg := ts.register(t, `{"client_name": "API client", "redirect_uris": ["`+redirect+`"]}`)
	apiClient := reg["client_id"].(string)
	q := ts.consent(t, ts.authorizeURL(apiClient, verifier, func(q url.Values) { q.Set("resource", ts.url) }))
	st, apiTokens := ts.tokenForm(t, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {apiClient},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {ts.url}})
	if st != 200 {
		t.Fatalf("token for the JSON API: %d %v", st, apiTokens)
	}
	tests := []struct {
		name, token, path string
		ok                bool
	}{
		{"an /mcp token on /mcp", mcpTokens["access_token"].(string), "/mcp", true},
		{"an /mcp token on the JSON API", mcpTokens["access_token"].(string), "", false},
		{"a JSON API token on the JSON API", apiTokens["access_token"].(string), "", true},
		{"a JSON API token on /mcp", apiTokens["access_token"].(string), "/mcp", false},
	}
	for _, tt := range tests {
		_, ok, err := ts.Verify(ctx, tt.token, tt.path)
		if !ok || (err == nil) != tt.ok || !tt.ok && !strings.Contains(err.Error(), "another resource") {
			t.Errorf("%s: %v %v, want accepted %v", tt.name, ok, err, tt.ok)
		}
	}
}

func TestClientMetadataDocument(t *testing.T) {
	doc := httptest.NewServer(nil)
	defer doc.Close()
	docURL := doc.URL + "/client.json"
	body := `{"client_id": "` + docURL + `", "client_name": "Doc client", "redirect_uris": ["` + redirect + `"]}`
	doc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/client.json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		case "/other.json":
			io.WriteString(w, `{"client_id": "https://someone.else/c.json", "redirect_uris": ["`+redirect+`"]}`)
		case "/big.json":
			io.WriteString(w, strings.Repeat(" ", maxDocument+1))
		default:
			http.NotFound(w, r)
		}
	})
	ts := newTestServer(t, true)
	q := ts.consent(t, ts.authorizeURL(docURL, verifier, nil))
	if st, out := ts.tokenForm(t, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {docURL},
		"redirect_uri": {redirect}, "code_verifier": {verifier}}); st != 200 {
		t.Fatalf("token for a metadata document client: %d %v", st, out)
	}
	for _, path := range []string{"/other.json", "/big.json", "/missing.json"} {
		resp, _ := ts.http.Get(ts.authorizeURL(doc.URL+path, verifier, nil))
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("document %s: %d, want 400", path, resp.StatusCode)
		}
	}
	// Without the test switch, an http document is refused unfetched.
	strict := newTestServer(t, false)
	resp, _ := strict.http.Get(strict.authorizeURL(docURL, verifier, nil))
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("http document without the test switch: %d, want 400", resp.StatusCode)
	}
}

// requestField finds the sealed request in the consent page.
var requestField = regexp.MustCompile(`name="request" value="([^"]+)"`)

// TestConfiguredUsers: a person whose verified e-mail is a configured
// user's signs in as that user; when users are configured, anyone else is
// refused at the consent, and an unverified e-mail matches nobody.
func TestConfiguredUsers(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer(t, false)
	ada := countersign.Credential{ID: "ada", Email: "ada@example.com", Choice: countersign.AskPerson, Origin: countersign.OriginChat}
	if err := ts.store.PutCredential(ctx, ada); err != nil {
		t.Fatal(err)
	}
	ts.o.Users = func() []countersign.Credential {
		return []countersign.Credential{ada, {ID: "a-key", KeyHash: hash("cs_k")}}
	}
	_, reg := ts.register(t, `{"client_name": "C", "redirect_uris": ["`+redirect+`"]}`)
	id := reg["client_id"].(string)
	allow := func() (int, url.Values) {
		resp, _ := ts.http.Get(ts.authorizeURL(id, verifier, nil))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := requestField.FindStringSubmatch(string(body))
		if m == nil {
			t.Fatalf("no consent page: %d %s", resp.StatusCode, body)
		}
		resp, _ = ts.http.PostForm(ts.url+PathAuthorize, url.Values{"request": {m[1]}, "decision": {"allow"}})
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return resp.StatusCode, loc.Query()
	}
	ts.sign.p = Person{Issuer: "https://idp.example", Subject: "s-ada", Email: "ADA@example.com", EmailVerified: true}
	st, q := allow()
	if st != http.StatusFound || q.Get("code") == "" {
		t.Fatalf("ada: %d %v", st, q)
	}
	_, tokens := ts.tokenForm(t, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {id}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	cred, ok, err := ts.Verify(ctx, tokens["access_token"].(string), "/mcp")
	if !ok || err != nil || cred.ID != "ada" {
		t.Fatalf("ada's token is %+v, %v, %v; want the configured user ada", cred, ok, err)
	}
	for name, p := range map[string]Person{
		"someone else":     {Issuer: "https://idp.example", Subject: "s-eve", Email: "eve@example.com", EmailVerified: true},
		"unverified email": {Issuer: "https://idp.example", Subject: "s-x", Email: "ada@example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			ts.sign.p = p
			if st, q := allow(); st != http.StatusForbidden || q.Get("code") != "" {
				t.Fatalf("%d %v, want 403 and no code", st, q)
			}
		})
	}
}
