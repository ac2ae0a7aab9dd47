package links

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	s := newSigner(t, Key{ID: "k.1", Secret: keyA.Secret})
	tok := s.Seal("mcp-state", []byte(`{"id":"cf_1"}`), expires)
	if !strings.HasPrefix(tok, "k.1.") {
		t.Fatalf("token %q does not start with its key id", tok)
	}
	got, err := s.Open("mcp-state", tok, now)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if string(got) != `{"id":"cf_1"}` {
		t.Errorf("payload = %s", got)
	}
	// A rotated signer still opens tokens of its older key.
	rotated := newSigner(t, keyB, Key{ID: "k.1", Secret: keyA.Secret})
	if _, err := rotated.Open("mcp-state", tok, now); err != nil {
		t.Errorf("Open after rotation: %v", err)
	}
}

func TestTokenRefused(t *testing.T) {
	s := newSigner(t, keyA)
	tok := s.Seal("mcp-state", []byte(`{"id":"cf_1"}`), expires)
	parts := strings.Split(tok, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name    string
		purpose string
		token   string
		at      time.Time
		want    error
	}{
		{"another purpose", "mcp-card", tok, now, ErrBadSignature},
		{"changed payload", "mcp-state", strings.Join([]string{parts[0], parts[1], flip(parts[2]), parts[3]}, "."), now, ErrBadSignature},
		{"changed exp", "mcp-state", strings.Join([]string{parts[0], "9999999999", parts[2], parts[3]}, "."), now, ErrBadSignature},
		{"changed signature", "mcp-state", strings.Join([]string{parts[0], parts[1], parts[2], flip(parts[3])}, "."), now, ErrBadSignature},
		{"unknown key", "mcp-state", strings.Join([]string{"kz", parts[1], parts[2], parts[3]}, "."), now, ErrBadSignature},
		{"signed by another key", "mcp-state", newSigner(t, Key{ID: "ka", Secret: keyB.Secret}).Seal("mcp-state", []byte("x"), expires), now, ErrBadSignature},
		{"malformed", "mcp-state", "nonsense", now, ErrBadSignature},
		{"empty", "mcp-state", "", now, ErrBadSignature},
		{"too long", "mcp-state", strings.Repeat("a", maxTokenLen+1), now, ErrBadSignature},
		{"expired", "mcp-state", tok, expires, ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Open(tt.purpose, tt.token, tt.at)
			if !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTokenAndLinkMACsDiffer(t *testing.T) {
	// The same key signs links and tokens; one can never stand for the other.
	s := newSigner(t, keyA)
	l := s.Sign("cf_1", "ops", expires)
	tok := s.Seal("approve", []byte("cf_1"), expires)
	if strings.HasSuffix(tok, "."+l.Sig) {
		t.Errorf("a token and a link share a signature")
	}
}
