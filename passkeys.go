package countersign

import (
	"encoding/json"
	"time"
)

// Passkey is one WebAuthn credential a person registered
// (/account/passkeys): theirs alone, by issuer and subject, for the
// approvals that ask for one (approval.passkey).
type Passkey struct {
	// ID is the credential id, base64url without padding.
	ID      string `json:"id"`
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	// Name is the person's label for it ("laptop"), bounded.
	Name string `json:"name,omitempty"`
	// Credential is the WebAuthn credential record as the library keeps it
	// (public key, sign counter, flags, AAGUID): shared/passkey reads it.
	Credential json.RawMessage `json:"credential"`
	CreatedAt  time.Time       `json:"created_at"`
	LastUsedAt *time.Time      `json:"last_used_at,omitempty"`
	// Version is the optimistic-concurrency counter: the sign counter is
	// advanced by a conditional write, so two uses of one assertion
	// cannot both pass.
	Version int64 `json:"version"`
}

// PasskeyCeremony is a WebAuthn ceremony begun and not yet finished: a
// registration's session, or an approval's nonce. It is used once (the
// store's take deletes it) and expires.
type PasskeyCeremony struct {
	// ID names it; only the browser that began it holds it.
	ID      string `json:"id"`
	Purpose string `json:"purpose"` // "register" or "approve"
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	// Confirmation is the confirmation an approval's nonce is for.
	Confirmation string `json:"confirmation,omitempty"`
	// Nonce is the server's random part of an approval's challenge.
	Nonce []byte `json:"nonce,omitempty"`
	// Session is a registration's WebAuthn session data.
	Session   json.RawMessage `json:"session,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
}

// MaxPasskeysPerPerson is how many passkeys one person may register.
const MaxPasskeysPerPerson = 10
