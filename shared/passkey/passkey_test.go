package passkey_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/passkey"
	"github.com/countersign/countersign/shared/passkey/passkeytest"
	"github.com/countersign/countersign/shared/store/embedded"
)

const origin = "https://cs.example.com"

var (
	ada   = countersign.Person{Issuer: "https://idp.example", Subject: "ada", Email: "ada@example.com"}
	grace = countersign.Person{Issuer: "https://idp.example", Subject: "grace"}
)

type fixture struct {
	svc *passkey.Service
	now time.Time
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "s.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	f := &fixture{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f.svc = &passkey.Service{Store: st, PublicURL: func() string { return origin + "/" }, Now: func() time.Time { return f.now }}
	return f
}

// register registers a new software passkey for p.
func (f *fixture) register(tb testing.TB, p countersign.Person) *passkeytest.Authenticator {
	tb.Helper()
	ctx := context.Background()
	a := passkeytest.New(tb, origin)
	cer, opts, err := f.svc.BeginRegistration(ctx, p)
	if err != nil {
		tb.Fatalf("BeginRegistration: %v", err)
	}
	if _, err := f.svc.FinishRegistration(ctx, p, cer, "laptop", a.Register(tb, opts)); err != nil {
		tb.Fatalf("FinishRegistration: %v", err)
	}
	return a
}

func challengeOf(what string) func(nonce []byte) []byte {
	return func(nonce []byte) []byte {
		h := sha256.Sum256(append([]byte(what+"\n"), nonce...))
		return h[:]
	}
}

func TestRegisterListRemove(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.register(t, ada)
	keys, err := f.svc.List(ctx, ada)
	if err != nil || len(keys) != 1 || keys[0].ID != a.CredentialID() || keys[0].Name != "laptop" {
		t.Fatalf("List = %v, %v", keys, err)
	}
	if others, _ := f.svc.List(ctx, grace); len(others) != 0 {
		t.Fatalf("grace has %d passkeys", len(others))
	}
	// A registration's ceremony is used once.
	cer, opts, _ := f.svc.BeginRegistration(ctx, ada)
	b := passkeytest.New(t, origin)
	resp := b.Register(t, opts)
	if _, err := f.svc.FinishRegistration(ctx, ada, cer, "", resp); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.FinishRegistration(ctx, ada, cer, "", resp); fault.CodeOf(err) != fault.Forbidden {
		t.Fatalf("second FinishRegistration = %v, want forbidden", err)
	}
	if err := f.svc.Remove(ctx, ada, a.CredentialID()); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Remove(ctx, ada, a.CredentialID()); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("second Remove = %v", err)
	}
}

func TestRegistrationRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		do   func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error
		want fault.Code
	}{
		{"another person finishes it", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			_, err := f.svc.FinishRegistration(ctx, grace, cer, "", a.Register(t, opts))
			return err
		}, fault.Forbidden},
		{"expired", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			f.now = f.now.Add(passkey.CeremonyTTL)
			_, err := f.svc.FinishRegistration(ctx, ada, cer, "", a.Register(t, opts))
			return err
		}, fault.Forbidden},
		{"no user verification", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			a.NoUserVerification = true
			_, err := f.svc.FinishRegistration(ctx, ada, cer, "", a.Register(t, opts))
			return err
		}, fault.Forbidden},
		{"another origin", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			a.Origin = "https://evil.example.com"
			_, err := f.svc.FinishRegistration(ctx, ada, cer, "", a.Register(t, opts))
			return err
		}, fault.Forbidden},
		{"malformed", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			_, err := f.svc.FinishRegistration(ctx, ada, cer, "", []byte(`{"id":`))
			return err
		}, fault.InvalidRequest},
		{"huge", func(f *fixture, a *passkeytest.Authenticator, cer string, opts []byte) error {
			_, err := f.svc.FinishRegistration(ctx, ada, cer, "", []byte(strings.Repeat("x", passkey.MaxResponse+1)))
			return err
		}, fault.PayloadTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			cer, opts, err := f.svc.BeginRegistration(ctx, ada)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.do(f, passkeytest.New(t, origin), cer, opts); fault.CodeOf(err) != tc.want {
				t.Fatalf("got %v (%s), want %s", err, fault.CodeOf(err), tc.want)
			}
			if keys, _ := f.svc.List(ctx, ada); len(keys) != 0 {
				t.Fatalf("a passkey was stored: %v", keys)
			}
		})
	}
}

func TestApprovalVerify(t *testing.T) {
	ctx := context.Background()
	type env struct {
		f   *fixture
		a   *passkeytest.Authenticator
		cer string
		ch  string // the challenge the options carry
	}
	begin := func(t *testing.T, f *fixture, p countersign.Person, conf string) (string, string) {
		cer, opts, err := f.svc.BeginApproval(ctx, p, conf, time.Time{}, challengeOf(conf+" approve"))
		if err != nil {
			t.Fatalf("BeginApproval: %v", err)
		}
		return cer, passkeytest.ReadOptions(t, opts).PublicKey.Challenge
	}
	verify := func(e *env, p countersign.Person, conf, what string, resp []byte) error {
		_, err := e.f.svc.VerifyApproval(ctx, p, conf, e.cer, resp, challengeOf(what))
		return err
	}
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, e *env) error
		want fault.Code
	}{
		{"valid", func(t *testing.T, e *env) error { return verify(e, ada, "cf_1", "cf_1 approve", e.a.Assert(t, e.ch)) }, ""},
		{"replayed", func(t *testing.T, e *env) error {
			resp := e.a.Assert(t, e.ch)
			if err := verify(e, ada, "cf_1", "cf_1 approve", resp); err != nil {
				t.Fatal(err)
			}
			return verify(e, ada, "cf_1", "cf_1 approve", resp)
		}, fault.Forbidden},
		{"for another confirmation", func(t *testing.T, e *env) error {
			return verify(e, ada, "cf_2", "cf_2 approve", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"over another decision", func(t *testing.T, e *env) error {
			return verify(e, ada, "cf_1", "cf_1 reject", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"tampered challenge", func(t *testing.T, e *env) error {
			return verify(e, ada, "cf_1", "cf_1 approve", e.a.Assert(t, base64.RawURLEncoding.EncodeToString([]byte("another challenge, 32 bytes long"))))
		}, fault.Forbidden},
		{"no user verification", func(t *testing.T, e *env) error {
			e.a.NoUserVerification = true
			return verify(e, ada, "cf_1", "cf_1 approve", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"counter backwards", func(t *testing.T, e *env) error {
			if err := verify(e, ada, "cf_1", "cf_1 approve", e.a.AssertAt(t, e.ch, 5)); err != nil {
				t.Fatal(err)
			}
			e.cer, e.ch = begin(t, e.f, ada, "cf_1")
			return verify(e, ada, "cf_1", "cf_1 approve", e.a.AssertAt(t, e.ch, 3))
		}, fault.Forbidden},
		{"another person's passkey", func(t *testing.T, e *env) error {
			g := e.f.register(t, grace)
			return verify(e, ada, "cf_1", "cf_1 approve", g.Assert(t, e.ch))
		}, fault.Forbidden},
		{"the ceremony of another person", func(t *testing.T, e *env) error {
			e.f.register(t, grace)
			return verify(e, grace, "cf_1", "cf_1 approve", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"removed passkey", func(t *testing.T, e *env) error {
			if err := e.f.svc.Remove(ctx, ada, e.a.CredentialID()); err != nil {
				t.Fatal(err)
			}
			return verify(e, ada, "cf_1", "cf_1 approve", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"expired", func(t *testing.T, e *env) error {
			e.f.now = e.f.now.Add(passkey.CeremonyTTL)
			return verify(e, ada, "cf_1", "cf_1 approve", e.a.Assert(t, e.ch))
		}, fault.Forbidden},
		{"malformed", func(t *testing.T, e *env) error {
			return verify(e, ada, "cf_1", "cf_1 approve", []byte(`{"type":"public-key"`))
		}, fault.InvalidRequest},
		{"huge", func(t *testing.T, e *env) error {
			return verify(e, ada, "cf_1", "cf_1 approve", []byte(`{"x":"`+strings.Repeat("a", passkey.MaxResponse)+`"}`))
		}, fault.PayloadTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{f: newFixture(t)}
			e.a = e.f.register(t, ada)
			e.cer, e.ch = begin(t, e.f, ada, "cf_1")
			err := tc.do(t, e)
			if tc.want == "" && err != nil || tc.want != "" && fault.CodeOf(err) != tc.want {
				t.Fatalf("got %v (%s), want %q", err, fault.CodeOf(err), tc.want)
			}
		})
	}
}

func TestNoPasskeyNoApproval(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.svc.BeginApproval(context.Background(), ada, "cf_1", time.Time{}, challengeOf("x"))
	if fault.CodeOf(err) != fault.Forbidden || !strings.Contains(fault.ReasonOf(err), "/account/passkeys") {
		t.Fatalf("BeginApproval without a passkey = %v", err)
	}
}

func TestRelyingParty(t *testing.T) {
	for _, tc := range []struct{ url, rpID, origin string }{
		{"https://cs.example.com/", "cs.example.com", "https://cs.example.com"},
		{"https://CS.example.com:8443/base", "cs.example.com", "https://cs.example.com:8443"},
		{"http://localhost:8080", "localhost", "http://localhost:8080"},
		{"http://127.0.0.1:8080", "localhost", "http://localhost:8080"},
		{"http://[::1]:8080/", "localhost", "http://localhost:8080"},
		{"https://192.0.2.7", "", ""},
		{"http://cs.example.com", "", ""},
		{"", "", ""},
	} {
		rp, o, err := passkey.RelyingParty(tc.url)
		if rp != tc.rpID || o != tc.origin || (err == nil) != (tc.rpID != "") {
			t.Errorf("RelyingParty(%q) = %q, %q, %v", tc.url, rp, o, err)
		}
	}
}

// TestCeremoniesBounded: a person begins at most MaxCeremonies ceremonies
// within CeremonyTTL (429 rate_limited past it), whatever they begin;
// another person is not held back, and the quota frees as time passes.
func TestCeremoniesBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(t, ada)
	for i := 1; i < passkey.MaxCeremonies; i++ { // the registration took one
		if _, _, err := f.svc.BeginApproval(ctx, ada, "cf_1", time.Time{}, challengeOf("x")); err != nil {
			t.Fatalf("ceremony %d: %v", i+1, err)
		}
	}
	if _, _, err := f.svc.BeginRegistration(ctx, ada); fault.CodeOf(err) != fault.RateLimited {
		t.Fatalf("ceremony %d: %v, want rate_limited", passkey.MaxCeremonies+1, err)
	}
	if _, _, err := f.svc.BeginRegistration(ctx, grace); err != nil {
		t.Fatalf("grace's: %v", err)
	}
	f.now = f.now.Add(passkey.CeremonyTTL)
	if _, _, err := f.svc.BeginRegistration(ctx, ada); err != nil {
		t.Fatalf("after %s: %v", passkey.CeremonyTTL, err)
	}
}
