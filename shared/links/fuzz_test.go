package links

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

var (
	fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fuzzKey = Key{ID: "k1", Secret: []byte(strings.Repeat("s", MinSecretLen))}
)

func fuzzSigner(tb testing.TB) *Signer {
	tb.Helper()
	s, err := NewSigner(fuzzKey, Key{ID: "k0", Secret: []byte(strings.Repeat("o", MinSecretLen))})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// FuzzParseLink: ParseLink never panics, what it accepts is well formed and
// survives its own Query, and Verify accepts a link only if it is exactly
// the one the signer would issue for its id, approver and expiry (a forged
// or altered link never verifies).
func FuzzParseLink(f *testing.F) {
	s := fuzzSigner(f)
	good := s.Sign("cf_123", "ops", fuzzNow.Add(10*time.Minute))
	f.Add("cf_123", good.Query().Encode())
	f.Add("cf_123", "a=ops&exp=1796040600&kid=k1&sig=AAAA")
	f.Add("cf_1\n", "a=ops&a=x&exp=01&kid=k1&sig=")
	f.Add("cf_123", "a=ops&exp=-9223372036854775808&kid=k0&sig="+strings.Repeat("A", 43))
	f.Fuzz(func(t *testing.T, id, rawQuery string) {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		l, err := ParseLink(id, q)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("ParseLink error %v is not ErrBadSignature", err)
			}
			return
		}
		if l.ID != id || l.Approver == "" || l.KID == "" || l.Sig == "" || len(l.ID) > maxIDLen || len(l.Sig) > maxSigLen {
			t.Fatalf("accepted a malformed link %+v", l)
		}
		again, err := ParseLink(id, l.Query())
		if err != nil || again != l {
			t.Fatalf("the link's own query parses to %+v, %v; want %+v", again, err, l)
		}
		err = s.Verify(l, fuzzNow)
		if err == nil || errors.Is(err, ErrExpired) {
			if want := s.signWith(l); want != l.Sig {
				t.Fatalf("Verify accepted %+v, which the signer did not issue", l)
			}
		}
	})
}

// signWith is the signature the signer issues for l's fields with l's key.
func (s *Signer) signWith(l Link) string {
	secret, ok := s.keys[l.KID]
	if !ok {
		return ""
	}
	issued := Link{ID: l.ID, Approver: l.Approver, Exp: l.Exp, KID: l.KID}
	return base64.RawURLEncoding.EncodeToString(mac(secret, issued))
}

// FuzzVerifyTampered: a genuine link with any one byte of one field changed
// never verifies.
func FuzzVerifyTampered(f *testing.F) {
	f.Add("cf_123", "ops", int64(600), uint8(0), uint16(0), byte('x'))
	f.Add("cf_abc", "console", int64(1), uint8(3), uint16(5), byte(0))
	f.Fuzz(func(t *testing.T, id, approver string, ttl int64, field uint8, at uint16, b byte) {
		if checkField("id", id) != nil || checkField("approver", approver) != nil || len(id) > maxIDLen {
			return
		}
		s := fuzzSigner(t)
		l := s.Sign(id, approver, fuzzNow.Add(time.Duration(ttl%100000+1)*time.Second))
		if ttl%100000+1 <= 0 {
			return // already expired
		}
		if err := s.Verify(l, fuzzNow); err != nil {
			t.Fatalf("a genuine link does not verify: %v", err)
		}
		flip := func(v string) string {
			if v == "" {
				return string(b)
			}
			i := int(at) % len(v)
			bs := []byte(v)
			if bs[i] == b {
				bs[i] ^= 1
			} else {
				bs[i] = b
			}
			return string(bs)
		}
		m := l
		switch field % 5 {
		case 0:
			m.ID = flip(m.ID)
		case 1:
			m.Approver = flip(m.Approver)
		case 2:
			m.Exp += int64(at) + 1
		case 3:
			m.KID = flip(m.KID)
		case 4:
			m.Sig = flip(m.Sig)
		}
		if err := s.Verify(m, fuzzNow); err == nil {
			t.Fatalf("tampered link %+v verifies (genuine %+v)", m, l)
		}
	})
}
