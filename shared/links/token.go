package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// tokenPrefix separates token MACs from link MACs made with the same key.
const tokenPrefix = "countersign-token-v1\n"

// maxTokenLen bounds a token Open accepts, so an oversized one is refused
// before any work is done on it.
const maxTokenLen = 16 << 10

// Seal returns a token that carries payload for purpose until exp
// (truncated to the second), signed with the current key:
//
//	<kid>.<exp>.<base64url payload>.<base64url HMAC-SHA256>
//
// The MAC covers the purpose, the key id, the expiry and the payload, so a
// token made for one purpose (an MCP request state) is refused as another
// (the card's decision token), and none of its parts can be changed. The
// payload is signed, not encrypted: it must hold nothing secret. purpose is
// chosen by the caller's code; an empty one or one with a control character
// is a programming error and Seal panics.
func (s *Signer) Seal(purpose string, payload []byte, exp time.Time) string {
	if err := checkField("purpose", purpose); err != nil {
		panic("links: seal: " + err.Error())
	}
	e := exp.Unix()
	p := base64.RawURLEncoding.EncodeToString(payload)
	sig := tokenMAC(s.current.Secret, purpose, s.current.ID, e, p)
	return s.current.ID + "." + strconv.FormatInt(e, 10) + "." + p + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Open verifies a token made by Seal for purpose at now and returns its
// payload. A malformed token, one signed with an unknown key, for another
// purpose or changed in any way is ErrBadSignature; a correctly signed token
// from its exp second on is ErrExpired (the signature is checked first, so a
// changed exp is ErrBadSignature).
func (s *Signer) Open(purpose, token string, now time.Time) ([]byte, error) {
	if len(token) > maxTokenLen {
		return nil, fmt.Errorf("%w: token too long", ErrBadSignature)
	}
	rest, sig, ok1 := cutLast(token)
	rest, payload, ok2 := cutLast(rest)
	kid, expStr, ok3 := cutLast(rest)
	if !ok1 || !ok2 || !ok3 || kid == "" {
		return nil, fmt.Errorf("%w: malformed token", ErrBadSignature)
	}
	secret, ok := s.keys[kid]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id %q", ErrBadSignature, truncate(kid, maxKIDLen))
	}
	exp, err := strconv.ParseInt(expStr, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != expStr {
		return nil, fmt.Errorf("%w: exp is not a canonical integer", ErrBadSignature)
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: malformed signature", ErrBadSignature)
	}
	if !hmac.Equal(got, tokenMAC(secret, purpose, kid, exp, payload)) {
		return nil, fmt.Errorf("%w: signature does not match", ErrBadSignature)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed payload", ErrBadSignature)
	}
	if !now.Before(time.Unix(exp, 0)) {
		return nil, fmt.Errorf("%w: token expired at %s", ErrExpired, time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return b, nil
}

// cutLast splits s around its last ".".
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// tokenMAC computes HMAC-SHA256 over
// "countersign-token-v1\n" + purpose + "\n" + kid + "\n" + exp + "\n" + payload,
// the payload in its base64url form. Neither the purpose nor the key id can
// hold a newline, so the encoding is unambiguous.
func tokenMAC(secret []byte, purpose, kid string, exp int64, payload string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(tokenPrefix))
	h.Write([]byte(purpose))
	h.Write([]byte{'\n'})
	h.Write([]byte(kid))
	h.Write([]byte{'\n'})
	h.Write([]byte(strconv.FormatInt(exp, 10)))
	h.Write([]byte{'\n'})
	h.Write([]byte(payload))
	return h.Sum(nil)
}
