package awsenv

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
)

// TestDerivedKeysDiffer: the OAuth session key and the sign-in cookie key
// are derived from the link signing key, each with its own label: neither
// is the signing key, they differ from each other, every instance derives
// the same ones, and a rotated signing key (new id) changes them.
func TestDerivedKeysDiffer(t *testing.T) {
	k := links.Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, 48)}
	a, err := deriveKey(k, labelOAuthSession)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := deriveKey(k, labelOAuthSignIn)
	again, _ := deriveKey(k, labelOAuthSession)
	rotated, _ := deriveKey(links.Key{ID: "k2", Secret: k.Secret}, labelOAuthSession)
	switch {
	case len(a) != 32 || len(b) != 32:
		t.Fatalf("key lengths %d, %d; want 32", len(a), len(b))
	case bytes.Equal(a, b):
		t.Fatal("the session and sign-in keys are the same")
	case bytes.Contains(k.Secret, a[:16]) || bytes.Equal(a, k.Secret[:32]):
		t.Fatal("a derived key is the signing key")
	case !bytes.Equal(a, again):
		t.Fatal("two derivations differ: instances would not open each other's forms")
	case bytes.Equal(a, rotated):
		t.Fatal("a rotated signing key leaves the derived key unchanged")
	}
}

// TestFromEnvSignIn: with NeedOAuth the sign-in issuer and client id are
// both given or neither, the issuer is a URL, and the signing key is
// required.
func TestFromEnvSignIn(t *testing.T) {
	base := map[string]string{"COUNTERSIGN_TABLE": "t", "COUNTERSIGN_SIGNING_KEY_SECRET": "s"}
	get := func(extra map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) {
			if v, ok := extra[n]; ok {
				return v, true
			}
			v, ok := base[n]
			return v, ok
		}
	}
	e, err := FromEnv(get(map[string]string{VarSignInIssuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc", VarSignInClientID: "c1"}), NeedOAuth)
	if err != nil || e.SignInIssuer != "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc" || e.SignInClientID != "c1" {
		t.Fatalf("FromEnv: %+v, %v", e, err)
	}
	if e, err := FromEnv(get(nil), NeedOAuth); err != nil || e.SignInIssuer != "" {
		t.Fatalf("no provider: %+v, %v; want none and no error", e, err)
	}
	for name, extra := range map[string]map[string]string{
		VarSignInClientID:   {VarSignInIssuer: "https://idp.example"},
		VarSignInIssuer:     {VarSignInClientID: "c1"},
		VarSigningKeySecret: {VarSigningKeySecret: ""},
	} {
		_, err := FromEnv(get(extra), NeedOAuth)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: error %v, want one naming %s", extra, err, name)
		}
	}
	if _, err := FromEnv(get(map[string]string{VarSignInIssuer: "not a url", VarSignInClientID: "c1"}), NeedOAuth); err == nil {
		t.Error("an issuer that is not a URL was taken")
	}
}

// TestNoDevSignInOnAWS: a deployment's sign-in answers the provider's
// callback only; the development sign-in page is not found, to a loopback
// peer too (infra/awstest checks it through the gateway function).
func TestNoDevSignInOnAWS(t *testing.T) {
	s := &deployedSignIn{d: &Deployment{}, key: bytes.Repeat([]byte{1}, 32)}
	for _, p := range []string{oauth.PathDevSignIn, "/oauth/anything"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+p, nil)
		r.RemoteAddr = "127.0.0.1:5555"
		s.ServeHTTP(w, r)
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, w.Code)
		}
	}
}

// TestApproverProviderFromTheStack: the approval page of a deployment
// signs approvers in through its sign-in, and counts the stack's provider
// (COUNTERSIGN_SIGNIN_ISSUER) as configured, so approvers.sign_in
// defaults to "required" there; without one it does not.
func TestApproverProviderFromTheStack(t *testing.T) {
	si := &deployedSignIn{d: &Deployment{}, key: bytes.Repeat([]byte{1}, 32)}
	for _, issuer := range []string{"", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc"} {
		d := &Deployment{App: &app.App{}, Env: Env{SignInIssuer: issuer, SignInClientID: "c1"}, SignIn: si}
		a := d.Approver()
		if a.Provider != (issuer != "") || a.SignIn != si {
			t.Errorf("issuer %q: Provider %v, SignIn %v; want Provider %v and the deployment's sign-in", issuer, a.Provider, a.SignIn, issuer != "")
		}
	}
}

// TestSignInAvailable: the approval page offers sign-in only where there
// is a provider to send people to: the stack's, or settings.json's
// sign_in; a deployment with neither has no sign-in to offer.
func TestSignInAvailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      Env
		settings config.SignIn
		want     bool
	}{
		{"neither", Env{}, config.SignIn{}, false},
		{"the stack's", Env{SignInIssuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc", SignInClientID: "c1"}, config.SignIn{}, true},
		{"settings.json's", Env{}, config.SignIn{Issuer: "https://idp.example.com", ClientID: "c2", ClientSecret: "s"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Settings: config.Settings{SignIn: tc.settings}}
			d := &Deployment{App: app.New(cfg, app.Adapters{}, app.Options{}), Env: tc.env}
			s := &deployedSignIn{d: d, key: bytes.Repeat([]byte{1}, 32)}
			if got := s.Available(); got != tc.want {
				t.Errorf("Available() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSignInOnlyWithWithSignIn: a deployment signs people in through its
// provider only when its function asks for it (WithSignIn: the gateway,
// approve and operator functions); without it (the scripts function, which
// checks access tokens only) nobody is signed in and a sign-in asked of it
// is not found, rather than sent to a provider.
func TestSignInOnlyWithWithSignIn(t *testing.T) {
	var o options
	WithSignIn()(&o)
	if o.signIn == nil {
		t.Fatal("WithSignIn sets no sign-in")
	}
	if _, ok := o.signIn(&Deployment{}, bytes.Repeat([]byte{1}, 32), nil).(*deployedSignIn); !ok {
		t.Fatal("WithSignIn's sign-in is not the deployment's provider")
	}
	var none options
	if none.signIn != nil {
		t.Fatal("a sign-in without WithSignIn")
	}
	var si oauth.SignIn = noSignIn{}
	r := httptest.NewRequest(http.MethodGet, "https://example.com/oauth/authorize", nil)
	if p, ok := si.Person(r); ok {
		t.Errorf("noSignIn found %+v signed in", p)
	}
	w := httptest.NewRecorder()
	si.Start(w, r, "/oauth/authorize")
	if w.Code != http.StatusNotFound || w.Header().Get("Location") != "" {
		t.Errorf("noSignIn's Start: %d, Location %q; want 404 and no redirect", w.Code, w.Header().Get("Location"))
	}
}
