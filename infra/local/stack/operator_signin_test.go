package stack

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// browserFrom is a browser whose connections come from the loopback
// address ip (the whole of 127.0.0.0/8 is this host), so the gateway sees
// another client address.
func browserFrom(t *testing.T, h *harness, ip string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{t: t, h: h, client: &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}}
}

func sessionCookieOf(t *testing.T, b *browser) string {
	t.Helper()
	u, _ := url.Parse(b.h.stack.URL + "/operator")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "cs_operator" {
			return c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// TestOperatorSignInIsNotAGlobalLockout: 55 wrong keys from 11 addresses
// used to make the right key answer 429 from a new address. Each of those
// addresses is throttled; the right key from a twelfth signs in (slowed by
// the global budget, never refused).
func TestOperatorSignInIsNotAGlobalLockout(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): 55 sign-ins, the last ones slowed by a second each")
	}
	h := newHarness(t, harnessOptions{})
	for a := range 11 {
		b := browserFrom(t, h, fmt.Sprintf("127.0.0.%d", 10+a))
		for i := range 5 {
			if r := b.login(b.get("/operator"), fmt.Sprintf("cs_wrong_%d_%d", a, i)); r.status != http.StatusUnauthorized {
				t.Fatalf("address %d, wrong key %d: %d", a, i, r.status)
			}
		}
		if a == 0 {
			// This address is throttled now, even for the right key.
			if r := b.login(b.get("/operator"), operatorKey); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || b.hasSession() {
				t.Fatalf("the right key from a throttled address: %d", r.status)
			}
		}
	}
	b := browserFrom(t, h, "127.0.0.30")
	start := time.Now()
	r := b.login(b.get("/operator"), operatorKey)
	expect(t, r, http.StatusOK, "")
	if !b.hasSession() || !strings.Contains(string(r.body), "Review queue") {
		t.Fatalf("the right key from a new address did not sign in: %d\n%s", r.status, r.body)
	}
	t.Logf("the right key from a 12th address signed in after %v (the global budget slows it)", time.Since(start).Round(time.Millisecond))
}

// TestOperatorSessionCookieHoldsNothingFromTheKey: the cookie used to carry
// the first 64 bits of the key's unsalted SHA-256. It names a session now:
// neither that prefix nor any other piece of the hash is in it, raw or
// decoded.
func TestOperatorSessionCookieHoldsNothingFromTheKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := newBrowser(t, h)
	expect(t, b.login(b.get("/operator"), operatorKey), http.StatusOK, "")
	cookie := sessionCookieOf(t, b)
	sum := sha256.Sum256([]byte(operatorKey))
	full := hex.EncodeToString(sum[:])
	oldPrefix := full[:16] // what the cookie used to hold
	seen := cookie
	for _, part := range strings.Split(cookie, ".") {
		if dec, err := base64.RawURLEncoding.DecodeString(part); err == nil {
			seen += "\n" + string(dec) + "\n" + hex.EncodeToString(dec)
		}
	}
	for i := 0; i+8 <= len(full); i += 8 {
		if strings.Contains(strings.ToLower(seen), full[i:i+8]) {
			t.Errorf("the cookie holds %q of the key's hash (old prefix %s): %s", full[i:i+8], oldPrefix, seen)
		}
	}
	if strings.Contains(seen, string(sum[:8])) || strings.Contains(seen, operatorKey) {
		t.Errorf("the cookie holds the key or its hash's bytes: %q", seen)
	}
}

// TestOperatorSessionEndsWithTheKey: revoking the operator's key (the
// credential is deleted), changing it, or taking the role away ends a
// session already signed in; signing out ends it for good, even for a
// copy of the cookie.
func TestOperatorSessionEndsWithTheKey(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, harnessOptions{})
	signIn := func() *browser {
		b := newBrowser(t, h)
		expect(t, b.login(b.get("/operator"), operatorKey), http.StatusOK, "")
		if r := b.get("/operator"); !strings.Contains(string(r.body), "Review queue") {
			t.Fatalf("not signed in: %d", r.status)
		}
		return b
	}
	signedOut := func(b *browser, why string) {
		t.Helper()
		if r := b.get("/operator"); strings.Contains(string(r.body), "Review queue") {
			t.Fatalf("%s: the session still works", why)
		}
	}
	root, err := h.stack.store.GetCredential(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}

	// Signing out ends the session in the store: a copy of the cookie is
	// no session either.
	b := signIn()
	cookie := sessionCookieOf(t, b)
	dash := b.get("/operator")
	expect(t, b.post("/operator/logout", url.Values{"csrf": {csrfOf(t, dash)}}), http.StatusOK, "")
	copyOf := newBrowser(t, h)
	u, _ := url.Parse(h.stack.URL + "/operator")
	copyOf.client.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_operator", Value: cookie, Path: "/operator"}})
	signedOut(copyOf, "a copy of a signed-out cookie")

	// The role taken away: refused.
	b = signIn()
	noRole := root
	noRole.Operator = false
	if err := h.stack.store.PutCredential(ctx, noRole); err != nil {
		t.Fatal(err)
	}
	if r := b.get("/operator"); r.status != http.StatusForbidden {
		t.Fatalf("a session whose credential lost the role: %d", r.status)
	}
	if err := h.stack.store.PutCredential(ctx, root); err != nil {
		t.Fatal(err)
	}

	// The key changed: the session ends.
	b = signIn()
	changed := root
	changed.KeyHash = hashOf("cs_test_op_rotated")
	if err := h.stack.store.PutCredential(ctx, changed); err != nil {
		t.Fatal(err)
	}
	signedOut(b, "after the key changed")
	if err := h.stack.store.PutCredential(ctx, root); err != nil {
		t.Fatal(err)
	}

	// The key revoked: the session ends, and stays ended when the
	// credential comes back with another key.
	b = signIn()
	if err := h.stack.store.DeleteCredential(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	signedOut(b, "after the key was revoked")
	if err := h.stack.store.PutCredential(ctx, changed); err != nil {
		t.Fatal(err)
	}
	signedOut(b, "after the credential came back with another key")
}
