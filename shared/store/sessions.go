package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Session is a person's sign-in on one browser (an approver's, or a
// person's signing in for OAuth), kept server-side so that it can end
// before its cookie does: on sign-out, or when the person's credential is
// removed. The cookie holds the session's random id; the store holds its
// SHA-256 only.
type Session struct {
	// Person is PersonKey of the person's issuer and subject.
	Person string `json:"person"`
	// ID is the SHA-256 (hex) of the session id the cookie holds.
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt ends the session; the store's TTL deletes it after.
	ExpiresAt time.Time `json:"expires_at"`
}

// PersonKey names a person (issuer, subject) among the sessions: the hex
// SHA-256 of both, so neither length nor content shapes a store key.
func PersonKey(issuer, subject string) string {
	sum := sha256.Sum256([]byte(issuer + "\n" + subject))
	return hex.EncodeToString(sum[:])
}

// Sessions keeps people's sessions. Removing a credential
// (Store.DeleteCredential) that names a person (its Issuer and Subject)
// ends that person's sessions too.
type Sessions interface {
	// CreateSession stores a new session; ErrConflict if the person has
	// one with its ID.
	CreateSession(ctx context.Context, s Session) error
	// Session returns the person's session with the ID (consistently), or
	// ErrNotFound; an expired one is returned as stored (the caller checks
	// ExpiresAt: TTL deletion lags).
	Session(ctx context.Context, person, id string) (Session, error)
	// EndSession deletes the person's session with the ID; ErrNotFound if
	// there is none.
	EndSession(ctx context.Context, person, id string) error
	// EndSessions deletes every session of the person and says how many.
	EndSessions(ctx context.Context, person string) (int, error)
}
