package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrTooLarge is returned when a record is over MaxItemBytes: DynamoDB's
// item limit, which the embedded store enforces too so local tests see it.
var ErrTooLarge = errors.New("store: record too large")

// MaxItemBytes is the largest record a store accepts: DynamoDB's 400 KB
// item, less room for the key and index attributes.
const MaxItemBytes = 400*1024 - 2*1024

// ErrBadCursor is returned when a listing's cursor is not one the store
// returned for the same listing.
var ErrBadCursor = errors.New("store: bad cursor")

// ErrQuotaFull is returned by TakeQuota when the limit is reached.
var ErrQuotaFull = errors.New("store: quota full")

// QuotaFullError is TakeQuota's refusal: the limit is reached until Free,
// when the earliest counted use stops counting.
type QuotaFullError struct {
	Key   string
	Limit int
	Free  time.Time
}

func (e *QuotaFullError) Error() string {
	return fmt.Sprintf("quota %s: %d uses counted until %s", e.Key, e.Limit, e.Free.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrQuotaFull) hold.
func (e *QuotaFullError) Unwrap() error { return ErrQuotaFull }

// ErrConflict is returned when a conditional write fails: the record already
// exists (create) or changed since it was read (update).
var ErrConflict = errors.New("store: conflict")

// Store is every method the adapters implement. Every write that guards a
// state transition is conditional, so two racing writers never both win.
// Adapters: embedded (bbolt) and dynamostore (DynamoDB); storetest holds the
// contract suite both must pass. Consumers hold their own small interfaces
// (confirm.Store, calls.Store, app.Store), never this one.
type Store interface {
	// PutCredential creates or replaces a credential (keyed by ID, looked up by KeyHash).
	PutCredential(ctx context.Context, c countersign.Credential) error
	// CredentialByKeyHash returns the credential whose key hashes to keyHash
	// (lowercase hex SHA-256), or ErrNotFound.
	CredentialByKeyHash(ctx context.Context, keyHash string) (countersign.Credential, error)
	// SetLastClient records the client last seen with a credential;
	// ErrNotFound if the credential does not exist (a revoked credential is
	// never brought back by a late write).
	SetLastClient(ctx context.Context, credentialID string, c countersign.Client) error
	// CreateCredential stores a new credential; ErrConflict if one with the
	// same ID exists, which is left as it was (creating never replaces a key).
	CreateCredential(ctx context.Context, c countersign.Credential) error
	// GetCredential returns the credential with the ID, or ErrNotFound.
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
	// ListCredentials returns a page of the credentials, ordered by ID (q's
	// Status and Newest do not apply). On DynamoDB the list comes from an
	// eventually consistent index; each listed credential is read whole,
	// consistently.
	ListCredentials(ctx context.Context, q countersign.ListQuery) (countersign.Page[countersign.Credential], error)
	// DeleteCredential removes the credential and its key hash, so its key
	// no longer authenticates from the next lookup on, and ends the
	// sessions of the person it names (Issuer and Subject, when set);
	// ErrNotFound if it does not exist.
	DeleteCredential(ctx context.Context, id string) error

	// CreateConfirmation stores a new confirmation with Version 1; ErrConflict if the ID exists.
	CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error
	// GetConfirmation returns the confirmation or ErrNotFound.
	GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error)
	// UpdateConfirmation replaces the record's state only if its stored
	// Version equals c.Version; on success c.Version is incremented.
	// ErrConflict otherwise, ErrNotFound if it does not exist. The state is
	// everything but what is fixed at creation: ID, Kind, Credential,
	// Reason, Asker, CreatedAt, ExpiresAt, GatewayRuns, TTL and each operation's
	// call (Connection, Method, Path, Endpoint, Args, Binding, ContentType,
	// Payload, RawQuery, Negotiation) keep their stored values whatever c holds (on
	// DynamoDB they are not even written again), and an update with another
	// number of operations fails.
	UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error

	// PutTaskToken stores the workflow's callback token for confirmation id
	// (the notify task), replacing any earlier one, in a record of its own:
	// the confirmation's transitions never rewrite it (on DynamoDB a task
	// token of about 1 KB would double the write units of every one). ttl
	// is when the store may delete it (unix seconds; 0 never).
	PutTaskToken(ctx context.Context, id, token string, ttl int64) error
	// TaskToken returns the token stored for confirmation id, or
	// ErrNotFound.
	TaskToken(ctx context.Context, id string) (string, error)

	// CreateIdempotency stores a new record with Version 1; ErrConflict if
	// (Credential, Key) exists and has not expired (an expired one is replaced).
	CreateIdempotency(ctx context.Context, r *countersign.Idempotency) error
	// GetIdempotency returns the record or ErrNotFound (also when expired).
	GetIdempotency(ctx context.Context, credentialID, key string) (*countersign.Idempotency, error)
	// UpdateIdempotency replaces the record only if its stored Version equals
	// r.Version; on success r.Version is incremented.
	UpdateIdempotency(ctx context.Context, r *countersign.Idempotency) error

	// ListConfirmations returns a page of the confirmations not yet
	// deleted, review items excluded (ListReviews lists those), in creation
	// order (oldest first, or newest first with q.Newest), then by ID; with
	// q.Status only those whose stored status is q.Status. Each listed
	// confirmation is read whole and consistently, and one whose status no
	// longer matches is left out. On DynamoDB the list comes from an
	// eventually consistent index: a confirmation created or changed a
	// moment ago may be missing.
	ListConfirmations(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error)
	// ListReviews is ListConfirmations for the review items
	// (confirmations of KindReview). Read an item with GetConfirmation
	// before acting on it.
	ListReviews(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error)

	// AppendAudit stores r at (r.Chain, r.Seq) unless a record is there
	// (ErrConflict: another writer appended first; read the last record and
	// try again), then moves the chain's head to it (Seq, Hash, and TTL as
	// Expires) unless the head is already at a higher Seq. A record with a
	// TTL is deleted once it passes (DynamoDB's TTL, the embedded store's
	// Sweep); a head never is.
	AppendAudit(ctx context.Context, r *countersign.AuditRecord) error
	// AddAudit stores r (its Chain, At and ID set; Seq, Prev and Hash not
	// yet) as a pending record of its chain, under a key of its own
	// (At, then ID): writers never conflict. SealAudit moves it into the
	// chain.
	AddAudit(ctx context.Context, r *countersign.AuditRecord) error
	// PendingAudit returns up to limit (1 to 1000) of the chain's pending
	// records, oldest first.
	PendingAudit(ctx context.Context, chain string, limit int) ([]countersign.PendingAudit, error)
	// SealAudit appends the records rs in order, each at (Chain, Seq) as
	// AppendAudit does, deleting the pending record keys[i] with rs[i], and
	// moves the chain's head to the last one appended. It stops at the first
	// slot taken (another sealer went first) and returns how many it
	// appended with ErrConflict. In the embedded store the batch is one
	// transaction; on DynamoDB each record is its own writes (a sealer
	// stopped between a record and its pending delete leaves the pending
	// record, which the next sealer finds sealed already, by its ID, and
	// drops with DropPendingAudit).
	SealAudit(ctx context.Context, rs []*countersign.AuditRecord, keys []string) (int, error)
	// DropPendingAudit deletes the chain's pending record key (absent: no error).
	DropPendingAudit(ctx context.Context, chain, key string) error
	// LastAudit returns the chain's record with the highest Seq, or ErrNotFound.
	LastAudit(ctx context.Context, chain string) (*countersign.AuditRecord, error)
	// AuditHead returns the chain's head, or ErrNotFound.
	AuditHead(ctx context.Context, chain string) (countersign.AuditHead, error)
	// ListAudit returns the records of q.Chain with Seq above q.After, in
	// ascending Seq order (descending with q.Newest), at most q.Limit (0:
	// all of them).
	ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error)
	// AuditChains returns a page of the names of the chains that have a
	// head, sorted (q's Status and Newest do not apply). Every append moves
	// its chain's head, so a chain with a record has one unless the head
	// was deleted (which audit verification reports). On DynamoDB the list
	// comes from an eventually consistent index.
	AuditChains(ctx context.Context, q countersign.ListQuery) (countersign.Page[string], error)

	// TakeQuota counts one use of the limit key until the time until,
	// unless limit uses are still counted at now: then it takes nothing and
	// returns ErrQuotaFull, wrapped in a *QuotaFullError that says when the
	// earliest counted use stops counting. The count is exact: however many
	// writers take at once, at most limit uses are counted at any time
	// (against the limit in force when each was taken). Uses of one key do
	// not all update one record (on DynamoDB each use is an item of its own,
	// a slot), so concurrent takers do not serialize on it.
	TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error

	// CreateScriptRun stores a new script journal header with Version 1;
	// ErrConflict if the ID exists.
	CreateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	// GetScriptRun returns a script journal header or ErrNotFound.
	GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error)
	// UpdateScriptRun replaces the header only if its stored Version equals
	// r.Version; on success r.Version is incremented. ErrConflict otherwise,
	// ErrNotFound if it does not exist.
	UpdateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	// PutScriptCall stores one journaled call. With Version 0 it creates it
	// (ErrConflict if the run already has a call at c.Index); otherwise it
	// replaces it only if the stored Version equals c.Version (ErrConflict
	// otherwise, ErrNotFound if there is none). On success c.Version is
	// incremented.
	PutScriptCall(ctx context.Context, c *countersign.ScriptCall) error
	// ScriptCalls returns a run's journaled calls in Index order; a run
	// without calls has an empty list, not an error.
	ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error)
	// PutScriptPart creates or replaces one part of a large journal value.
	PutScriptPart(ctx context.Context, p *countersign.ScriptPart) error
	// ScriptParts returns the parts of a run whose Key starts with prefix,
	// in Key order.
	ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error)

	// OAuth keeps the authorization server's clients, codes, tokens and
	// grants.
	OAuth
	// OAuthGrants returns the grants of a credential, ordered by ID (at
	// most MaxOAuthGrants). It is for the operator's tools and the
	// credential's page; on DynamoDB it queries the list index, never
	// scans.
	OAuthGrants(ctx context.Context, credentialID string) ([]*countersign.OAuthGrant, error)
	// ListOAuthGrants returns a page of a credential's grants in ID order
	// (ErrBadCursor for a cursor not of this listing).
	ListOAuthGrants(ctx context.Context, credentialID string, q countersign.ListQuery) (countersign.Page[*countersign.OAuthGrant], error)

	// Counts and ApprovalGrants: velocity counts and remembered approvals
	// (approvalgrants.go).
	Counts
	ApprovalGrants
	// Sessions keeps people's sign-ins (sessions.go).
	Sessions
	// Passkeys keeps people's passkeys and the WebAuthn ceremonies under way.
	Passkeys

	// Close flushes and releases the store.
	Close() error
}

// MaxOAuthGrants bounds how many OAuth grants of one credential
// OAuthGrants returns.
const MaxOAuthGrants = 10_000

// All pages through a listing (q gives its filters) and returns every item,
// for the tools that need the whole list: the command line, the local
// stack's console. It fails once the list holds more than max items.
func All[T any](ctx context.Context, list func(context.Context, countersign.ListQuery) (countersign.Page[T], error), q countersign.ListQuery, max int) ([]T, error) {
	q.Limit = countersign.MaxPageSize
	var out []T
	for len(out) <= max {
		p, err := list(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if p.Next == "" {
			if len(out) > max {
				break
			}
			return out, nil
		}
		q.Cursor = p.Next
	}
	return nil, fmt.Errorf("the list holds more than %d items", max)
}

// OAuth is what the OAuth authorization server (shared/oauth) keeps: its
// registered clients, authorization codes, tokens and grants.
type OAuth interface {
	// CreateOAuthClient stores a registered client; ErrConflict if its ID exists.
	CreateOAuthClient(ctx context.Context, c countersign.OAuthClient) error
	// PutOAuthClient creates or replaces a client (a metadata document's
	// cache, refreshed when fetched again).
	PutOAuthClient(ctx context.Context, c countersign.OAuthClient) error
	// OAuthClient returns the client with the ID, or ErrNotFound.
	OAuthClient(ctx context.Context, id string) (countersign.OAuthClient, error)
	// CreateOAuthCode stores an authorization code by its hash; ErrConflict if it exists.
	CreateOAuthCode(ctx context.Context, c countersign.OAuthCode) error
	// TakeOAuthCode deletes the code with the hash and returns it, in one
	// conditional step: of two racing takers one gets it, the other
	// ErrNotFound, as does every later taker.
	TakeOAuthCode(ctx context.Context, hash string) (countersign.OAuthCode, error)
	// CreateOAuthToken stores a token by its hash; ErrConflict if it exists.
	CreateOAuthToken(ctx context.Context, t countersign.OAuthToken) error
	// OAuthToken returns the token with the hash (consistently), or ErrNotFound.
	OAuthToken(ctx context.Context, hash string) (countersign.OAuthToken, error)
	// DeleteOAuthToken deletes the token with the hash; ErrNotFound if there is none.
	DeleteOAuthToken(ctx context.Context, hash string) error
	// CreateOAuthGrant stores a new grant with Version 1; ErrConflict if its ID exists.
	CreateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error
	// OAuthGrant returns the grant (consistently), or ErrNotFound.
	OAuthGrant(ctx context.Context, id string) (*countersign.OAuthGrant, error)
	// UpdateOAuthGrant replaces the grant only if its stored Version equals
	// g.Version; on success g.Version is incremented. ErrConflict
	// otherwise, ErrNotFound if it does not exist.
	UpdateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error
}

// Passkeys is what shared/passkey keeps: each person's registered
// passkeys, and the ceremonies begun and not yet finished.
type Passkeys interface {
	// CreatePasskey stores a new passkey of its person (Issuer, Subject)
	// with Version 1; ErrConflict if that person has one with its ID.
	CreatePasskey(ctx context.Context, p *countersign.Passkey) error
	// PersonPasskeys returns the person's passkeys, ordered by ID, read
	// consistently; none is an empty list.
	PersonPasskeys(ctx context.Context, issuer, subject string) ([]*countersign.Passkey, error)
	// UpdatePasskey replaces the passkey only if its stored Version equals
	// p.Version; on success p.Version is incremented. ErrConflict
	// otherwise, ErrNotFound if it does not exist (removed).
	UpdatePasskey(ctx context.Context, p *countersign.Passkey) error
	// DeletePasskey removes the person's passkey id; ErrNotFound if there
	// is none.
	DeletePasskey(ctx context.Context, issuer, subject, id string) error
	// CreatePasskeyCeremony stores a ceremony begun; ErrConflict if its ID
	// exists. It is deleted once expired (TTL, Sweep).
	CreatePasskeyCeremony(ctx context.Context, c countersign.PasskeyCeremony) error
	// TakePasskeyCeremony deletes the ceremony and returns it, in one
	// conditional step: of two racing takers one gets it, the other
	// ErrNotFound, as does every later taker. The caller checks its expiry.
	TakePasskeyCeremony(ctx context.Context, id string) (countersign.PasskeyCeremony, error)
}
