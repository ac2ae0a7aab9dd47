package mcpclients

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/internal/testenv"
)

// chromiumPath finds a Chromium to drive the person's browser, installing
// Debian's with apt-get when it is missing and this runs as root (as CI
// does); it skips, naming the command, only when it cannot.
func chromiumPath(t *testing.T) string {
	t.Helper()
	return testenv.AptBinary(t, testenv.Chromium, "chromium", "chromium", "chromium-browser")
}

// signInWithChromium is the person: headless Chromium opens the
// authorization URL, signs in on the stack's development sign-in page by
// choosing email among the configured users, checks the consent page names the client, and allows it. The
// redirect to the client's loopback callback is caught by callback, which
// returns the code.
func signInWithChromium(t *testing.T, authURL, email, client string, codes <-chan url.Values) url.Values {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var consent string
	steps := []struct {
		name string
		a    chromedp.Action[chromedp.Void]
	}{
		{"open the authorization URL", chromedp.Navigate(authURL)},
		{"the development sign-in page lists the person", chromedp.WaitVisible(chromedp.CSS(`button[data-email="` + email + `"]`))},
		{"choose them", chromedp.Click(chromedp.CSS(`button[data-email="` + email + `"]`))},
		{"the consent page", chromedp.WaitVisible(chromedp.CSS("#allow"))},
		{"read it", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			var err error
			consent, err = chromedp.Text(chromedp.CSS("h1"))(ctx, tg)
			return err
		})},
		{"allow", chromedp.Click(chromedp.CSS("#allow"))},
	}
	for _, s := range steps {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := chromedp.Do(sctx, s.a)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if !strings.Contains(consent, client) {
		t.Errorf("the consent page asks %q, want it to name %s", consent, client)
	}
	select {
	case q := <-codes:
		return q
	case <-time.After(15 * time.Second):
		t.Fatal("the browser never came back to the client's callback")
	}
	return nil
}

// TestSDKOAuth: the official TypeScript SDK's OAuth client, with no key,
// connects to /mcp on the local stack: the 401 sends it through
// Protected Resource Metadata and the authorization server metadata to
// register (RFC 7591); headless Chromium signs the person in on the
// development sign-in page and allows the client on the consent page;
// the SDK exchanges the code with PKCE, lists and calls tools with its
// access token, refreshes when the access token is refused (the refresh
// token rotates), and is turned away once its grant is revoked (RFC 7009).
func TestSDKOAuth(t *testing.T) {
	need(t)
	e := startStack(t)
	codes := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			select {
			case codes <- r.URL.Query():
			default:
			}
		}
		fmt.Fprintln(w, "signed in; return to the client")
	}))
	defer cb.Close()
	r := startClient(t, map[string]any{"sdk": "v1", "url": e.mcpURL, "oauth": map[string]any{"redirect": cb.URL + "/callback"},
		"call": map[string]any{"name": "get_contacts_by_id", "arguments": map[string]any{"id": "12"}}, "refresh": true, "afterRevoke": true}, 90*time.Second)

	auth := r.next("authorize", "error")
	if auth == nil || auth.Event != "authorize" {
		t.Fatalf("the SDK did not start the authorization: %+v\nstderr: %s", auth, r.stderr.String())
	}
	u, err := url.Parse(auth.URL)
	if err != nil || !strings.HasPrefix(auth.URL, e.stack.URL+"/oauth/authorize?") || u.Query().Get("code_challenge_method") != "S256" ||
		u.Query().Get("resource") != e.mcpURL {
		t.Fatalf("authorization URL %q: want the stack's /oauth/authorize with PKCE S256 and resource %s", auth.URL, e.mcpURL)
	}
	q := signInWithChromium(t, auth.URL, "ada@example.com", "countersign-test-sdk-v1", codes)
	if q.Get("iss") != e.stack.URL || q.Get("code") == "" {
		t.Fatalf("callback query %v: want a code and iss %s", q, e.stack.URL)
	}
	fmt.Fprintln(r.in, q.Get("code"))

	res := r.next("result", "error")
	if res == nil || res.Event != "result" || !strings.HasPrefix(text(res.Result), "200") {
		t.Fatalf("tools/call with the access token: %+v", res)
	}
	// The first tokens came from the code, the second from the refresh.
	if ev := r.next("waiting", "error"); ev == nil || ev.Event != "waiting" {
		t.Fatalf("after the refresh: %+v", ev)
	}
	var refresh []string
	var clientID string
	r.mu.Lock()
	for _, ev := range r.all {
		if ev.Event == "tokens" {
			refresh, clientID = append(refresh, ev.RefreshToken), ev.ClientID
		}
	}
	r.mu.Unlock()
	if len(refresh) != 2 || refresh[0] == refresh[1] || refresh[1] == "" {
		t.Fatalf("refresh tokens %q: want one from the code and a different one from the refresh", refresh)
	}
	// Revoke the grant with the current refresh token.
	resp, err := http.PostForm(e.stack.URL+"/oauth/revoke", url.Values{"token": {refresh[1]}, "client_id": {clientID}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	fmt.Fprintln(r.in, "go")
	if ev := r.next("refused", "error"); ev == nil || ev.Event != "refused" {
		t.Fatalf("after the revocation: %+v, want the client refused", ev)
	}
	r.wait(t)
}
