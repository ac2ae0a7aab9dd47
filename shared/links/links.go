package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MinSecretLen is the shortest secret a Key may have, in bytes.
const MinSecretLen = 32

// maxKIDLen bounds a key id; key ids travel in every link.
const maxKIDLen = 64

// Field limits applied by ParseLink, so an oversized query is refused before
// any work is done on it.
const (
	maxIDLen       = 256
	maxApproverLen = 128
	maxExpLen      = 20 // len("-9223372036854775808")
	maxSigLen      = 64 // a SHA-256 MAC is 43 characters in unpadded base64url
)

// macPrefix separates link MACs from any other use of the same key.
const macPrefix = "countersign-approve-v1\n"

// ErrBadSignature is returned (wrapped) when a link is malformed, signed with
// an unknown key, or does not carry a valid signature. The wrapping message
// says which, for logs; pages show no detail.
var ErrBadSignature = errors.New("links: bad signature")

// ErrExpired is returned (wrapped) by Verify when a correctly signed link is
// past its expiry.
var ErrExpired = errors.New("links: expired")

// Key is one signing key.
type Key struct {
	// ID names the key in links (kid=). 1 to 64 characters from
	// [A-Za-z0-9._-].
	ID string
	// Secret is the HMAC-SHA256 key, at least MinSecretLen bytes.
	Secret []byte
}

func (k Key) validate() error {
	if err := checkKID(k.ID); err != nil {
		return err
	}
	if len(k.Secret) < MinSecretLen {
		return fmt.Errorf("key %q: secret is %d bytes, want at least %d", k.ID, len(k.Secret), MinSecretLen)
	}
	return nil
}

func checkKID(kid string) error {
	if kid == "" {
		return errors.New("key id is empty")
	}
	if len(kid) > maxKIDLen {
		return fmt.Errorf("key id is %d characters, want at most %d", len(kid), maxKIDLen)
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("key id %q: character %q not allowed (want A-Z a-z 0-9 . _ -)", kid, c)
		}
	}
	return nil
}

// checkField rejects values that would make the MAC input ambiguous or a link
// unreadable: empty values and control characters (newline among them).
func checkField(name, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", name)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s contains a control character", name)
		}
	}
	return nil
}

// Signer signs links with its current key and verifies them with any of its
// keys. It is safe for concurrent use.
type Signer struct {
	current Key
	keys    map[string][]byte
	macs    map[string]*sync.Pool // key id -> *macState of that key
}

// NewSigner returns a Signer that signs with current and verifies links
// signed with current or any of others (older keys kept during a rotation).
// Every key needs a valid ID and a secret of at least MinSecretLen bytes, and
// key ids must be distinct. The secrets are copied.
func NewSigner(current Key, others ...Key) (*Signer, error) {
	s := &Signer{keys: make(map[string][]byte, 1+len(others)), macs: make(map[string]*sync.Pool, 1+len(others))}
	for i, k := range append([]Key{current}, others...) {
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("links: new signer: %w", err)
		}
		if _, dup := s.keys[k.ID]; dup {
			return nil, fmt.Errorf("links: new signer: key id %q given twice", k.ID)
		}
		secret := append([]byte(nil), k.Secret...)
		s.keys[k.ID] = secret
		s.macs[k.ID] = &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, secret)} }}
		if i == 0 {
			s.current = Key{ID: k.ID, Secret: secret}
		}
	}
	return s, nil
}

// PrincipalApprover is the approver channel of a link given to the person
// who made the call (an MCP client's URL-mode elicitation): the page decides
// only for that person signed in. The colon keeps it apart from every
// configured approver name ([a-z0-9][a-z0-9_-]*).
const PrincipalApprover = "mcp:principal"

// Link is a signed approval link, without the public URL it is served under.
type Link struct {
	ID       string // the confirmation id (path segment)
	Approver string // a=: the approver channel the link was sent to
	Exp      int64  // exp=: expiry, Unix seconds
	KID      string // kid=: the key that signed it
	Sig      string // sig=: unpadded base64url HMAC-SHA256
}

// Sign returns a link for confirmation id, sent to approver, valid until exp
// (truncated to the second). id and approver come from the gateway (generated
// ids, approver names validated when the settings are loaded), so an empty
// value or one with a control character (a newline would make the MAC input
// ambiguous) is a programming error and Sign panics.
func (s *Signer) Sign(id, approver string, exp time.Time) Link {
	if err := checkField("id", id); err != nil {
		panic("links: sign: " + err.Error())
	}
	if err := checkField("approver", approver); err != nil {
		panic("links: sign: " + err.Error())
	}
	l := Link{ID: id, Approver: approver, Exp: exp.Unix(), KID: s.current.ID}
	var sum [sha256.Size]byte
	s.mac(s.current.ID, l, &sum)
	l.Sig = base64.RawURLEncoding.EncodeToString(sum[:])
	return l
}

// Verify checks l at now. The signature is checked first, in constant time,
// so a changed exp is ErrBadSignature, not ErrExpired; an unknown kid is
// ErrBadSignature too. A correctly signed link is expired from its exp second
// on: now >= exp gives ErrExpired.
func (s *Signer) Verify(l Link, now time.Time) error {
	if err := checkField("id", l.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if err := checkField("approver", l.Approver); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if _, ok := s.keys[l.KID]; !ok {
		return fmt.Errorf("%w: unknown key id %q", ErrBadSignature, truncate(l.KID, maxKIDLen))
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(l.Sig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: malformed signature", ErrBadSignature)
	}
	var sum [sha256.Size]byte
	s.mac(l.KID, l, &sum)
	if !hmac.Equal(got, sum[:]) {
		return fmt.Errorf("%w: signature does not match", ErrBadSignature)
	}
	if !now.Before(time.Unix(l.Exp, 0)) {
		return fmt.Errorf("%w: link expired at %s", ErrExpired, time.Unix(l.Exp, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// mac computes HMAC-SHA256 over
// "countersign-approve-v1\n" + id + "\n" + approver + "\n" + exp + "\n" + kid.
// None of the fields can hold a newline, so the encoding is unambiguous.
func mac(secret []byte, l Link) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(appendMACInput(nil, l))
	return h.Sum(nil)
}

func appendMACInput(b []byte, l Link) []byte {
	b = append(b, macPrefix...)
	b = append(b, l.ID...)
	b = append(b, '\n')
	b = append(b, l.Approver...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, l.Exp, 10)
	b = append(b, '\n')
	return append(b, l.KID...)
}

// macState is one key's HMAC and the buffers of one computation, reused
// through the Signer's pool: a link is signed for every pause and checked
// on every approval page, and hmac.New with its per-call buffers was most
// of a link's allocations.
type macState struct {
	h        hash.Hash
	msg, sum []byte
}

// mac writes mac(key kid's secret, l) to out. kid is one of s's keys.
func (s *Signer) mac(kid string, l Link, out *[sha256.Size]byte) {
	p := s.macs[kid]
	st := p.Get().(*macState)
	st.h.Reset()
	st.msg = appendMACInput(st.msg[:0], l)
	st.h.Write(st.msg)
	st.sum = st.h.Sum(st.sum[:0])
	copy(out[:], st.sum)
	p.Put(st)
}

// Query returns the link's query: a, exp, kid and sig.
func (l Link) Query() url.Values {
	return url.Values{
		"a":   {l.Approver},
		"exp": {strconv.FormatInt(l.Exp, 10)},
		"kid": {l.KID},
		"sig": {l.Sig},
	}
}

// URL returns publicURL + "/approve/" + the escaped id + "?" + the query.
// A trailing slash on publicURL is dropped.
func (l Link) URL(publicURL string) string {
	return strings.TrimSuffix(publicURL, "/") + "/approve/" + url.PathEscape(l.ID) + "?" + l.Query().Encode()
}

// ParseLink reads a link for confirmation id from a GET query or a POST form.
// Each of a, exp, kid and sig must be present exactly once, non-empty and
// well formed (exp a canonical decimal integer); other fields (decision, op)
// are ignored. Any problem is an ErrBadSignature-wrapped error. The
// signature itself is checked by Verify.
func ParseLink(id string, q url.Values) (Link, error) {
	if err := checkField("id", id); err != nil {
		return Link{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if len(id) > maxIDLen {
		return Link{}, fmt.Errorf("%w: id too long", ErrBadSignature)
	}
	get := func(name string, max int) (string, error) {
		vs := q[name]
		switch {
		case len(vs) == 0:
			return "", fmt.Errorf("%w: missing %s", ErrBadSignature, name)
		case len(vs) > 1:
			return "", fmt.Errorf("%w: %s given %d times", ErrBadSignature, name, len(vs))
		case len(vs[0]) > max:
			return "", fmt.Errorf("%w: %s too long", ErrBadSignature, name)
		}
		if err := checkField(name, vs[0]); err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadSignature, err)
		}
		return vs[0], nil
	}
	l := Link{ID: id}
	var err error
	if l.Approver, err = get("a", maxApproverLen); err != nil {
		return Link{}, err
	}
	expStr, err := get("exp", maxExpLen)
	if err != nil {
		return Link{}, err
	}
	if l.Exp, err = strconv.ParseInt(expStr, 10, 64); err != nil || strconv.FormatInt(l.Exp, 10) != expStr {
		return Link{}, fmt.Errorf("%w: exp is not a canonical integer", ErrBadSignature)
	}
	if l.KID, err = get("kid", maxKIDLen); err != nil {
		return Link{}, err
	}
	if l.Sig, err = get("sig", maxSigLen); err != nil {
		return Link{}, err
	}
	return l, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
