package oauth

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestDevSignIn(t *testing.T) {
	d := &DevSignIn{Issuer: "http://127.0.0.1/oauth/dev-signin", Key: NewKey(), People: []string{"ann@example.com"}}
	returnTo := PathAuthorize + "?client_id=c"

	t.Run("refused off loopback", func(t *testing.T) {
		r := httptest.NewRequest("GET", PathDevSignIn+"?return_to="+url.QueryEscape(returnTo), nil)
		r.RemoteAddr = "203.0.113.7:5000"
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 8080}))
		w := httptest.NewRecorder()
		d.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Fatalf("status %d, want 403", w.Code)
		}
	})

	hs := httptest.NewServer(d)
	defer hs.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape(returnTo)
	resp, err := c.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Development sign-in") || !strings.Contains(string(body), "ann@example.com") {
		t.Fatalf("page: %d %s", resp.StatusCode, body)
	}
	csrfField := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	if !csrfField.Match(body) {
		t.Fatalf("page without a csrf field: %s", body)
	}

	t.Run("another return URL is refused", func(t *testing.T) {
		resp, _ := c.Get(hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape("https://evil.example/"))
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("a form without the right csrf is refused", func(t *testing.T) {
		resp, _ := c.PostForm(hs.URL+PathDevSignIn, url.Values{"return_to": {returnTo}, "csrf": {"forged"}, "email": {"mallory@example.com"}})
		resp.Body.Close()
		if resp.StatusCode != 403 || len(jar.Cookies(mustURL(hs.URL+"/oauth/"))) != 0 {
			t.Fatalf("status %d, cookies %v; want 403 and no session", resp.StatusCode, jar.Cookies(mustURL(hs.URL+"/oauth/")))
		}
	})
	// The refused form was answered with a new form (a new nonce): its token is the one that works now.
	resp, err = c.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := csrfField.FindStringSubmatch(string(body))[1]
	resp, err = c.PostForm(hs.URL+PathDevSignIn, url.Values{"return_to": {returnTo}, "csrf": {csrf}, "email": {"Ann@Example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != returnTo {
		t.Fatalf("sign in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := jar.Cookies(mustURL(hs.URL + "/oauth/"))
	r := httptest.NewRequest("GET", "/oauth/authorize", nil)
	for _, ck := range cookies {
		r.AddCookie(ck)
	}
	if p, ok := d.Person(r); !ok || p.Subject != "ann@example.com" || p.Issuer != d.Issuer {
		t.Fatalf("Person = %+v, %v", p, ok)
	}
	t.Run("a tampered session is nobody", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/oauth/authorize", nil)
		r.AddCookie(&http.Cookie{Name: devCookie, Value: strings.Replace(cookies[0].Value, "a", "b", 1)})
		if p, ok := d.Person(r); ok {
			t.Fatalf("tampered cookie signed in %+v", p)
		}
	})
}

func mustURL(s string) *url.URL {
	u, _ := url.Parse(s)
	return u
}
