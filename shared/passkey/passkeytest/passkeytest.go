// Package passkeytest is a software authenticator for tests: an ECDSA
// P-256 key that answers registration and approval options as a browser
// with a platform authenticator would (attestation "none", user verified
// unless told otherwise, a counter that advances), so the relying party's
// checks run on real signatures without a browser. Its CBOR goes through
// the WebAuthn library's encoder.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// Authenticator is one passkey on a software authenticator.
type Authenticator struct {
	// Origin is the origin the "browser" reports (clientDataJSON.origin);
	// RPID the relying party whose hash authenticatorData carries.
	Origin, RPID string
	Key          *ecdsa.PrivateKey
	ID           []byte
	// Counter is the signature counter; each assertion adds one first.
	Counter uint32
	// UserHandle is the user id the registration options gave.
	UserHandle []byte
	// NoUserVerification clears the UV flag (a tap without a PIN).
	NoUserVerification bool
}

var b64 = base64.RawURLEncoding

// New returns an authenticator for origin (its host is the RP ID).
func New(tb testing.TB, origin string) *Authenticator {
	tb.Helper()
	u, err := url.Parse(origin)
	if err != nil {
		tb.Fatalf("passkeytest: origin %q: %v", origin, err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &Authenticator{Origin: u.Scheme + "://" + u.Host, RPID: u.Hostname(), Key: k, ID: id}
}

// CredentialID is the credential id as the server keeps it.
func (a *Authenticator) CredentialID() string { return b64.EncodeToString(a.ID) }

// Options are the fields of creation or request options it reads.
type Options struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		User      struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"publicKey"`
}

// ReadOptions decodes options (the JSON the server sent).
func ReadOptions(tb testing.TB, options []byte) Options {
	tb.Helper()
	var o Options
	if err := json.Unmarshal(options, &o); err != nil {
		tb.Fatalf("passkeytest: options %s: %v", options, err)
	}
	return o
}

func (a *Authenticator) clientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	return b
}

func (a *Authenticator) authData(flags byte, attested []byte) []byte {
	h := sha256.Sum256([]byte(a.RPID))
	out := append(h[:], flags)
	out = binary.BigEndian.AppendUint32(out, a.Counter)
	return append(out, attested...)
}

const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

func (a *Authenticator) flags() byte {
	if a.NoUserVerification {
		return flagUP
	}
	return flagUP | flagUV
}

// Register answers creation options: the browser's JSON of the new
// credential (attestation "none").
func (a *Authenticator) Register(tb testing.TB, options []byte) []byte {
	tb.Helper()
	o := ReadOptions(tb, options)
	if uh, err := b64.DecodeString(o.PublicKey.User.ID); err == nil {
		a.UserHandle = uh
	}
	x, y := a.Key.X.FillBytes(make([]byte, 32)), a.Key.Y.FillBytes(make([]byte, 32))
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		tb.Fatal(err)
	}
	attested := make([]byte, 16) // AAGUID: none
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.ID)))
	attested = append(append(attested, a.ID...), cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(a.flags()|flagAT, attested)})
	if err != nil {
		tb.Fatal(err)
	}
	out, _ := json.Marshal(map[string]any{"id": a.CredentialID(), "rawId": a.CredentialID(), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64.EncodeToString(a.clientData("webauthn.create", o.PublicKey.Challenge)),
			"attestationObject": b64.EncodeToString(att)},
		"clientExtensionResults": map[string]any{}})
	return out
}

// Assert signs challenge (base64url, as the options carry it): the
// browser's JSON of the assertion. The counter advances by one first.
func (a *Authenticator) Assert(tb testing.TB, challenge string) []byte {
	tb.Helper()
	a.Counter++
	return a.AssertAt(tb, challenge, a.Counter)
}

// AssertAt signs challenge with the counter set to counter (a clone's).
func (a *Authenticator) AssertAt(tb testing.TB, challenge string, counter uint32) []byte {
	tb.Helper()
	saved := a.Counter
	a.Counter = counter
	ad := a.authData(a.flags(), nil)
	a.Counter = saved
	cd := a.clientData("webauthn.get", challenge)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte(nil), ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.Key, digest[:])
	if err != nil {
		tb.Fatal(err)
	}
	resp := map[string]any{"clientDataJSON": b64.EncodeToString(cd), "authenticatorData": b64.EncodeToString(ad),
		"signature": b64.EncodeToString(sig)}
	if a.UserHandle != nil {
		resp["userHandle"] = b64.EncodeToString(a.UserHandle)
	}
	out, _ := json.Marshal(map[string]any{"id": a.CredentialID(), "rawId": a.CredentialID(), "type": "public-key",
		"response": resp, "clientExtensionResults": map[string]any{}})
	return out
}

// AssertOptions answers request options: Assert over their challenge.
func (a *Authenticator) AssertOptions(tb testing.TB, options []byte) []byte {
	tb.Helper()
	return a.Assert(tb, ReadOptions(tb, options).PublicKey.Challenge)
}
