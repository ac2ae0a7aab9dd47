package links

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	now     = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	keyA    = Key{ID: "ka", Secret: bytes.Repeat([]byte{'a'}, 32)}
	keyB    = Key{ID: "kb", Secret: bytes.Repeat([]byte{'b'}, 32)}
	expires = now.Add(10 * time.Minute)
)

func newSigner(tb testing.TB, current Key, others ...Key) *Signer {
	tb.Helper()
	s, err := NewSigner(current, others...)
	if err != nil {
		tb.Fatalf("NewSigner: %v", err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	s := newSigner(t, keyA)
	l := s.Sign("cf_123", "ops", expires)
	if l.KID != "ka" || l.Exp != expires.Unix() || l.ID != "cf_123" || l.Approver != "ops" {
		t.Fatalf("Sign = %+v", l)
	}
	if len(l.Sig) != 43 || strings.ContainsAny(l.Sig, "=+/") {
		t.Fatalf("sig %q is not unpadded base64url of 32 bytes", l.Sig)
	}
	u, err := url.Parse(l.URL("http://127.0.0.1:8080/"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/approve/cf_123" {
		t.Errorf("path = %q", u.Path)
	}
	parsed, err := ParseLink("cf_123", u.Query())
	if err != nil {
		t.Fatalf("ParseLink: %v", err)
	}
	if diff := cmp.Diff(l, parsed); diff != "" {
		t.Errorf("parsed link differs (-signed +parsed):\n%s", diff)
	}
	if err := s.Verify(parsed, now); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestURLFormat(t *testing.T) {
	l := Link{ID: "cf/1 x", Approver: "ops", Exp: 1700000000, KID: "ka", Sig: "abc"}
	want := "http://h/approve/cf%2F1%20x?a=ops&exp=1700000000&kid=ka&sig=abc"
	if got := l.URL("http://h"); got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}

func TestVerifyTampered(t *testing.T) {
	s := newSigner(t, keyA, keyB)
	good := s.Sign("cf_123", "ops", expires)
	other := newSigner(t, Key{ID: "ka", Secret: bytes.Repeat([]byte{'z'}, 32)}).Sign("cf_123", "ops", expires)
	tests := []struct {
		name   string
		change func(*Link)
		want   error
	}{
		{"id", func(l *Link) { l.ID = "cf_124" }, ErrBadSignature},
		{"approver", func(l *Link) { l.Approver = "console" }, ErrBadSignature},
		{"exp later", func(l *Link) { l.Exp += 3600 }, ErrBadSignature},
		{"exp earlier", func(l *Link) { l.Exp -= 3600 }, ErrBadSignature},
		{"kid to another known key", func(l *Link) { l.KID = "kb" }, ErrBadSignature},
		{"kid unknown", func(l *Link) { l.KID = "kz" }, ErrBadSignature},
		{"sig one character", func(l *Link) { l.Sig = flip(l.Sig) }, ErrBadSignature},
		{"sig truncated", func(l *Link) { l.Sig = l.Sig[:42] }, ErrBadSignature},
		{"sig truncated to 40", func(l *Link) { l.Sig = l.Sig[:40] }, ErrBadSignature},
		{"sig with padding", func(l *Link) { l.Sig += "=" }, ErrBadSignature},
		{"sig standard base64", func(l *Link) { l.Sig = strings.NewReplacer("-", "+", "_", "/").Replace(l.Sig) + "+" }, ErrBadSignature},
		{"sig empty", func(l *Link) { l.Sig = "" }, ErrBadSignature},
		{"sig from another secret", func(l *Link) { l.Sig = other.Sig }, ErrBadSignature},
		{"id with newline", func(l *Link) { l.ID = "cf_123\nops" }, ErrBadSignature},
		{"approver empty", func(l *Link) { l.Approver = "" }, ErrBadSignature},
		{"untouched", func(l *Link) {}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := good
			tt.change(&l)
			err := s.Verify(l, now)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrExpired) {
				t.Fatalf("Verify = %v, must not be ErrExpired", err)
			}
		})
	}
}

// flip changes the first character of a base64url string to another valid one.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestNonCanonicalSigRejected(t *testing.T) {
	// The last of 43 characters carries 2 unused bits; a decoder that ignores
	// them would accept 4 spellings of one signature.
	s := newSigner(t, keyA)
	l := s.Sign("cf_1", "ops", expires)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, l.Sig[42])
	for _, d := range []int{1, 2, 3} {
		m := l
		m.Sig = l.Sig[:42] + string(alphabet[last^d])
		if err := s.Verify(m, now); !errors.Is(err, ErrBadSignature) {
			t.Errorf("variant %q: Verify = %v, want ErrBadSignature", m.Sig, err)
		}
	}
}

func TestUnknownKID(t *testing.T) {
	l := newSigner(t, keyB).Sign("cf_1", "ops", expires)
	err := newSigner(t, keyA).Verify(l, now)
	if !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), "unknown key id") {
		t.Fatalf("Verify = %v, want ErrBadSignature saying unknown key id", err)
	}
}

func TestRotation(t *testing.T) {
	old := newSigner(t, keyA)
	l := old.Sign("cf_1", "ops", expires)
	rotated := newSigner(t, keyB, keyA)
	if err := rotated.Verify(l, now); err != nil {
		t.Fatalf("old link after rotation: %v", err)
	}
	fresh := rotated.Sign("cf_1", "ops", expires)
	if fresh.KID != "kb" {
		t.Errorf("new links signed with %q, want kb", fresh.KID)
	}
	if err := old.Verify(fresh, now); !errors.Is(err, ErrBadSignature) {
		t.Errorf("new link on a signer without the new key: %v", err)
	}
	if err := newSigner(t, keyB).Verify(l, now); !errors.Is(err, ErrBadSignature) {
		t.Errorf("old link once the old key is dropped: %v", err)
	}
}

func TestExpiryBoundary(t *testing.T) {
	s := newSigner(t, keyA)
	l := s.Sign("cf_1", "ops", expires.Add(999*time.Millisecond)) // truncated to the second
	if l.Exp != expires.Unix() {
		t.Fatalf("Exp = %d, want %d", l.Exp, expires.Unix())
	}
	tests := []struct {
		name string
		at   time.Time
		want error
	}{
		{"well before", now, nil},
		{"1ns before", expires.Add(-time.Nanosecond), nil},
		{"at exp", expires, ErrExpired},
		{"after", expires.Add(time.Second), ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Verify(l, tt.at)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseLink(t *testing.T) {
	good := url.Values{"a": {"ops"}, "exp": {"1700000000"}, "kid": {"ka"}, "sig": {"abc"}, "decision": {"approve"}, "op": {"0", "1"}}
	with := func(k string, v ...string) url.Values {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = vv
		}
		if v == nil {
			delete(q, k)
		} else {
			q[k] = v
		}
		return q
	}
	tests := []struct {
		name string
		id   string
		q    url.Values
		ok   bool
	}{
		{"good, extra fields ignored", "cf_1", good, true},
		{"missing a", "cf_1", with("a"), false},
		{"missing exp", "cf_1", with("exp"), false},
		{"missing kid", "cf_1", with("kid"), false},
		{"missing sig", "cf_1", with("sig"), false},
		{"duplicate a", "cf_1", with("a", "ops", "console"), false},
		{"duplicate sig", "cf_1", with("sig", "abc", "abc"), false},
		{"empty kid", "cf_1", with("kid", ""), false},
		{"exp not a number", "cf_1", with("exp", "soon"), false},
		{"exp with plus", "cf_1", with("exp", "+1700000000"), false},
		{"exp with leading zero", "cf_1", with("exp", "01700000000"), false},
		{"exp overflow", "cf_1", with("exp", "99999999999999999999"), false},
		{"approver with newline", "cf_1", with("a", "ops\nx"), false},
		{"sig too long", "cf_1", with("sig", strings.Repeat("A", 100)), false},
		{"empty id", "", good, false},
		{"id with newline", "cf\n1", good, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseLink(tt.id, tt.q)
			if tt.ok {
				if err != nil {
					t.Fatalf("ParseLink: %v", err)
				}
				want := Link{ID: "cf_1", Approver: "ops", Exp: 1700000000, KID: "ka", Sig: "abc"}
				if diff := cmp.Diff(want, l); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("ParseLink = %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestNewSignerRejects(t *testing.T) {
	tests := []struct {
		name   string
		cur    Key
		others []Key
	}{
		{"short secret", Key{ID: "k1", Secret: make([]byte, 31)}, nil},
		{"empty id", Key{ID: "", Secret: make([]byte, 32)}, nil},
		{"id with newline", Key{ID: "k\n1", Secret: make([]byte, 32)}, nil},
		{"id with space", Key{ID: "k 1", Secret: make([]byte, 32)}, nil},
		{"duplicate id", keyA, []Key{keyA}},
		{"bad other", keyA, []Key{{ID: "kb", Secret: []byte("short")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewSigner(tt.cur, tt.others...); err == nil {
				t.Fatal("NewSigner succeeded")
			}
		})
	}
}

func TestSignerCopiesSecret(t *testing.T) {
	k := Key{ID: "k1", Secret: bytes.Repeat([]byte{'x'}, 32)}
	s := newSigner(t, k)
	l := s.Sign("cf_1", "ops", expires)
	k.Secret[0] = 'y'
	if err := s.Verify(l, now); err != nil {
		t.Fatalf("changing the caller's slice changed the signer: %v", err)
	}
}

func TestSignPanicsOnBadInput(t *testing.T) {
	s := newSigner(t, keyA)
	for _, in := range [][2]string{{"cf\n1", "ops"}, {"cf_1", "ops\n"}, {"", "ops"}, {"cf_1", ""}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Sign(%q, %q) did not panic", in[0], in[1])
				}
			}()
			s.Sign(in[0], in[1], expires)
		}()
	}
}

// The newline-separated MAC input must not let fields shift into each other.
func TestFieldsDoNotShift(t *testing.T) {
	s := newSigner(t, keyA)
	l := s.Sign("cf_1", "ops", expires)
	shifted := l
	shifted.ID, shifted.Approver = "cf_", "1ops"
	if err := s.Verify(shifted, now); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("shifted fields verified: %v", err)
	}
}
