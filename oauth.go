package countersign

import (
	"time"
)

// OAuthClient is a client registered with countersign's authorization
// server: by RFC 7591 registration (a random ID), or by its Client ID
// Metadata Document (the ID is the document's https URL, cached here).
type OAuthClient struct {
	ID           string   `json:"id"`
	Name         string   `json:"name,omitempty"`
	RedirectURIs []string `json:"redirect_uris"`
	// SecretHash is the lowercase hex SHA-256 of a confidential client's
	// secret; empty for a public client (PKCE only). The secret itself is
	// never stored.
	SecretHash string    `json:"secret_sha256,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// ExpiresAt is when the store may forget the record (a metadata
	// document's cache; zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// OAuthCode is an authorization code, stored by the SHA-256 of the code
// (the code itself is never stored) and taken once.
type OAuthCode struct {
	Hash        string `json:"hash"`
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	// Challenge is the PKCE S256 code challenge.
	Challenge string `json:"code_challenge"`
	// Resource is the RFC 8707 resource the token will be bound to.
	Resource   string    `json:"resource"`
	Scope      string    `json:"scope,omitempty"`
	Credential string    `json:"credential"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// TokenKind is what an OAuthToken is.
type TokenKind string

// Token kinds.
const (
	TokenAccess  TokenKind = "access"
	TokenRefresh TokenKind = "refresh"
)

// OAuthToken is an access or refresh token, stored by the SHA-256 of the
// token (never the token). It belongs to a grant: revoking the grant
// revokes every token of it from the next call on.
type OAuthToken struct {
	Hash      string    `json:"hash"`
	Kind      TokenKind `json:"kind"`
	Grant     string    `json:"grant"`
	ExpiresAt time.Time `json:"expires_at"`
}

// OAuthGrant is one client a user authorized: the family of tokens an
// authorization code started. Its RefreshHash is the one refresh token
// that may be used next; presenting an earlier one (a reuse: someone
// kept a copy) revokes the grant.
type OAuthGrant struct {
	ID          string    `json:"id"`
	ClientID    string    `json:"client_id"`
	ClientName  string    `json:"client_name,omitempty"`
	Credential  string    `json:"credential"`
	Resource    string    `json:"resource"`
	Scope       string    `json:"scope,omitempty"`
	RefreshHash string    `json:"refresh_sha256,omitempty"`
	Revoked     bool      `json:"revoked,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// ExpiresAt ends the grant (the refresh token's lifetime from its
	// last rotation).
	ExpiresAt time.Time `json:"expires_at"`
	// Version is the optimistic-concurrency counter (UpdateOAuthGrant).
	Version int64 `json:"version"`
}
