// Package oidctest runs a real OpenID provider on 127.0.0.1 for tests:
// zitadel/oidc's op package (certified) with its example's in-memory
// storage and login form, and a few people who sign in with a password.
// It replaces nothing of countersign's: the tests sign people in through
// it exactly as they would through a workspace's provider.
package oidctest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// Password is every test person's password.
const Password = "verysecure"

// People are who can sign in at the provider, by username; their subject
// is their ID.
var People = []storage.User{
	{ID: "id1", Username: "ada", Email: "ada@example.com", EmailVerified: true, FirstName: "Ada", LastName: "Lovelace"},
	{ID: "id2", Username: "grace", Email: "grace@example.com", EmailVerified: true, FirstName: "Grace", LastName: "Hopper"},
	{ID: "id3", Username: "mallory", Email: "mallory@elsewhere.test", EmailVerified: true, FirstName: "Mallory", LastName: "Outsider"},
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL, http://127.0.0.1:<port>.
	Issuer string
}

// Start starts a provider with clients registered (storage.WebClient for a
// confidential client, storage.NativeClient for a public one with PKCE)
// and closes it when tb ends. Each provider has its own clients: tests
// running side by side do not see each other's.
func Start(tb testing.TB, clients ...*storage.Client) *Provider {
	tb.Helper()
	hs := httptest.NewUnstartedServer(nil)
	issuer := "http://" + hs.Listener.Addr().String()
	reg := make(map[string]*storage.Client, len(clients))
	for _, c := range clients {
		reg[c.GetID()] = c
	}
	hs.Config.Handler = exampleop.SetupServer(issuer, storage.NewStorageWithClients(users{}, reg), nil, false)
	hs.Start()
	tb.Cleanup(hs.Close)
	return &Provider{Issuer: issuer}
}

// users is the provider's user store: People, each with Password.
type users struct{}

func (users) find(match func(storage.User) bool) *storage.User {
	for _, p := range People {
		if match(p) {
			p.Password = Password
			return &p
		}
	}
	return nil
}

func (u users) GetUserByID(id string) *storage.User {
	return u.find(func(p storage.User) bool { return p.ID == id })
}

func (u users) GetUserByUsername(name string) *storage.User {
	return u.find(func(p storage.User) bool { return p.Username == name })
}

func (users) ExampleClientID() string { return "" }

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// IsLoginForm reports whether body is the provider's login form.
func IsLoginForm(body []byte) bool {
	return strings.Contains(string(body), `name="username"`) && loginID.Match(body)
}

// Walk is a person's browser going from start: it GETs each address with
// c (whose jar keeps the cookies and which must not follow redirects
// itself), follows redirects, and signs in as username with Password when
// the provider's login form appears. It stops at the first address that
// starts with stop, and returns it with whether the login form was seen.
// Any other page goes to page, which returns where the browser goes next
// (a form it posted, say), or nil to stop there. At most 20 steps.
func (p *Provider) Walk(tb testing.TB, c *http.Client, start, username, stop string, page func(at *url.URL, status int, body []byte) *url.URL) (end *url.URL, sawLogin bool) {
	tb.Helper()
	next, err := url.Parse(start)
	if err != nil {
		tb.Fatal(err)
	}
	for step := 0; step < 20; step++ {
		if strings.HasPrefix(next.String(), stop) {
			return next, sawLogin
		}
		resp, err := c.Get(next.String())
		if err != nil {
			tb.Fatalf("GET %s: %v", next, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 3:
			loc, err := next.Parse(resp.Header.Get("Location"))
			if err != nil {
				tb.Fatalf("GET %s: Location %q: %v", next, resp.Header.Get("Location"), err)
			}
			next = loc
		case IsLoginForm(body):
			sawLogin = true
			next = p.LogIn(tb, c, body, username)
		default:
			if next = page(next, resp.StatusCode, body); next == nil {
				return nil, sawLogin
			}
		}
	}
	tb.Fatalf("more than 20 steps from %s", start)
	return nil, sawLogin
}

// LogIn posts the provider's login form (body) as username and returns
// where the provider sends the browser next.
func (p *Provider) LogIn(tb testing.TB, c *http.Client, body []byte, username string) *url.URL {
	tb.Helper()
	m := loginID.FindSubmatch(body)
	if m == nil {
		tb.Fatalf("not the provider's login form: %s", body)
	}
	resp, err := c.PostForm(p.Issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {username}, "password": {Password}})
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		tb.Fatalf("signing in as %s at the provider: HTTP %d", username, resp.StatusCode)
	}
	base, _ := url.Parse(p.Issuer + "/login/username")
	loc, err := base.Parse(resp.Header.Get("Location"))
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}
