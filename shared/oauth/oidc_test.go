package oauth

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/countersign/countersign/internal/oidctest"
	"github.com/countersign/countersign/shared/store/embedded"
)

// startProvider starts a real OpenID provider on 127.0.0.1 with
// countersign registered as a web client.
func startProvider(tb testing.TB, redirectURL string) (issuer string) {
	return oidctest.Start(tb, storage.WebClient("countersign", "provider-secret", redirectURL)).Issuer
}

// TestOIDCSignInThroughARealProvider: the authorize endpoint sends the
// person to the workspace's identity provider (a real zitadel/oidc
// provider process on loopback), the person signs in there with a
// password, the provider sends them back to /oauth/callback, countersign
// verifies the ID token and shows the consent page, and the code it issues
// gets a token whose credential is the provider's issuer and subject.
func TestOIDCSignInThroughARealProvider(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := httptest.NewUnstartedServer(nil)
	csURL := "http://" + cs.Listener.Addr().String()
	issuer := startProvider(t, csURL+PathCallback)
	signIn, err := NewOIDCSignIn(context.Background(), OIDCOptions{Issuer: issuer, ClientID: "countersign", ClientSecret: "provider-secret",
		RedirectURL: csURL + PathCallback, Key: NewKey()})
	if err != nil {
		t.Fatalf("NewOIDCSignIn: %v", err)
	}
	srv, err := New(st, Options{PublicURL: func() string { return csURL }, SignIn: signIn, SessionKey: NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	cs.Config.Handler = srv
	cs.Start()
	defer cs.Close()
	ts := &testServer{Server: srv, url: csURL, store: st}

	_, reg := (&testServer{url: csURL, http: http.DefaultClient}).register(t, `{"client_name": "OIDC test client", "redirect_uris": ["`+redirect+`"]}`)
	clientID := reg["client_id"].(string)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p := &oidctest.Provider{Issuer: issuer}
	end, sawProvider := p.Walk(t, browser, ts.authorizeURL(clientID, verifier, nil), "ada", redirect, func(at *url.URL, status int, body []byte) *url.URL {
		if !requestField.Match(body) { // not countersign's consent page
			t.Fatalf("GET %s: %d %s", at, status, body)
		}
		if !strings.Contains(string(body), "OIDC test client") {
			t.Fatalf("consent page does not name the client: %s", body)
		}
		resp, err := browser.PostForm(csURL+PathAuthorize, url.Values{"request": {requestField.FindStringSubmatch(string(body))[1]}, "decision": {"allow"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc
	})
	if e := end.Query().Get("error"); e != "" {
		t.Fatalf("refused: %s", end)
	}
	code := end.Query().Get("code")
	if !sawProvider || code == "" {
		t.Fatalf("sign-in did not go through the provider (%v) or gave no code", sawProvider)
	}
	status, tokens := (&testServer{url: csURL, http: http.DefaultClient}).tokenForm(t, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	if status != 200 {
		t.Fatalf("token: %d %v", status, tokens)
	}
	cred, ok, err := srv.Verify(context.Background(), tokens["access_token"].(string), "/mcp")
	if !ok || err != nil || cred.Issuer != issuer || cred.Subject != "id1" || cred.ID != CredentialID(Person{Issuer: issuer, Subject: "id1"}) || cred.Email != "ada@example.com" {
		t.Fatalf("credential %+v, %v, %v; want the provider's issuer and subject id1", cred, ok, err)
	}
}

func TestOIDCCallbackRefusals(t *testing.T) {
	cs := httptest.NewUnstartedServer(nil)
	csURL := "http://" + cs.Listener.Addr().String()
	issuer := startProvider(t, csURL+PathCallback)
	signIn, err := NewOIDCSignIn(context.Background(), OIDCOptions{Issuer: issuer, ClientID: "countersign", ClientSecret: "provider-secret",
		RedirectURL: csURL + PathCallback, Key: NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	cs.Config.Handler = signIn
	cs.Start()
	defer cs.Close()
	for name, target := range map[string]string{
		"no flow cookie":         csURL + PathCallback + "?code=x&state=y",
		"provider said no (too)": csURL + PathCallback + "?error=access_denied",
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Get(target)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 || len(resp.Cookies()) > 0 && resp.Cookies()[0].Name == sessionCookie {
				t.Fatalf("%d, cookies %v; want 400 and no session", resp.StatusCode, resp.Cookies())
			}
		})
	}
	t.Run("a state from another browser", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/oauth/authorize?x", nil)
		w := httptest.NewRecorder()
		signIn.Start(w, r, PathAuthorize+"?x")
		flowCk := w.Result().Cookies()[0]
		req, _ := http.NewRequest("GET", csURL+PathCallback+"?code=x&state=forged", nil)
		req.AddCookie(flowCk)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == sessionCookie && c.Value != "" {
				t.Fatal("a forged state signed someone in")
			}
		}
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("unreachable provider fails at start", func(t *testing.T) {
		if _, err := NewOIDCSignIn(context.Background(), OIDCOptions{Issuer: "http://127.0.0.1:1", ClientID: "c", Key: NewKey()}); err == nil {
			t.Fatal("no error for an unreachable provider")
		}
	})
}

// TestBoundedPerson: what a provider says of a person stays within bounds:
// a subject past 255 bytes refuses the sign-in, a long e-mail is dropped
// (never cut into another address), a long name is cut at a character,
// and groups stop at 1 KiB.
func TestBoundedPerson(t *testing.T) {
	if _, ok := boundedPerson(Person{Subject: strings.Repeat("s", 256)}); ok {
		t.Error("a 256-byte subject was kept")
	}
	if _, ok := boundedPerson(Person{}); ok {
		t.Error("an empty subject was kept")
	}
	long := strings.Repeat("a", 250) + "@example.com"
	p, ok := boundedPerson(Person{Subject: "id1", Email: long, EmailVerified: true, Name: strings.Repeat("é", 150),
		Groups: append([]string{strings.Repeat("g", 129)}, slices.Repeat([]string{strings.Repeat("h", 100)}, 20)...)})
	if !ok || p.Email != "" || p.EmailVerified || !utf8.ValidString(p.Name) || len(p.Name) > 200+len("…") || len(p.Groups) != 10 {
		t.Fatalf("bounded %+v, %v", p, ok)
	}
}
