// Package passkey registers people's passkeys and verifies the WebAuthn
// assertions that approve a call where the policy asks for one
// (approval.passkey), with github.com/go-webauthn/webauthn: no CBOR or
// attestation is parsed here. A person is their (issuer, subject); their
// passkeys are theirs alone. Every ceremony (a registration's session, an
// approval's nonce) is stored server-side, taken once and expires; the
// challenge of an approval is derived by the caller from what is approved
// (confirm.PasskeyChallenge), so an assertion approves nothing else.
package passkey
