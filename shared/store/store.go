package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/tier"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrTooLarge is returned when a record is over MaxItemBytes: DynamoDB's
// item limit, which the embedded store enforces too so local tests see it.
var ErrTooLarge = errors.New("store: record too large")

// MaxItemBytes is the largest record a store accepts: DynamoDB's 400 KB
// item, less room for the key and index attributes.
const MaxItemBytes = 400*1024 - 2*1024

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
	PutCredential(ctx context.Context, c Credential) error
	// CredentialByKeyHash returns the credential whose key hashes to keyHash
	// (lowercase hex SHA-256), or ErrNotFound.
	CredentialByKeyHash(ctx context.Context, keyHash string) (Credential, error)
	// SetLastClient records the client last seen with a credential;
	// ErrNotFound if the credential does not exist (a revoked credential is
	// never brought back by a late write).
	SetLastClient(ctx context.Context, credentialID string, c Client) error
	// CreateCredential stores a new credential; ErrConflict if one with the
	// same ID exists, which is left as it was (creating never replaces a key).
	CreateCredential(ctx context.Context, c Credential) error
	// GetCredential returns the credential with the ID, or ErrNotFound.
	GetCredential(ctx context.Context, id string) (Credential, error)
	// ListCredentials returns every credential, ordered by ID. It is for the
	// operator's tools, not the request path: on DynamoDB it scans the table.
	ListCredentials(ctx context.Context) ([]Credential, error)
	// DeleteCredential removes the credential and its key hash, so its key
	// no longer authenticates from the next lookup on; ErrNotFound if it does
	// not exist.
	DeleteCredential(ctx context.Context, id string) error

	// CreateConfirmation stores a new confirmation with Version 1; ErrConflict if the ID exists.
	CreateConfirmation(ctx context.Context, c *Confirmation) error
	// GetConfirmation returns the confirmation or ErrNotFound.
	GetConfirmation(ctx context.Context, id string) (*Confirmation, error)
	// UpdateConfirmation replaces the record's state only if its stored
	// Version equals c.Version; on success c.Version is incremented.
	// ErrConflict otherwise, ErrNotFound if it does not exist. The state is
	// everything but what is fixed at creation: ID, Kind, Credential,
	// Reason, CreatedAt, ExpiresAt, GatewayRuns, TTL and each operation's
	// call (Connection, Method, Path, Endpoint, Args, Binding, ContentType,
	// Payload, RawQuery) keep their stored values whatever c holds (on
	// DynamoDB they are not even written again), and an update with another
	// number of operations fails.
	UpdateConfirmation(ctx context.Context, c *Confirmation) error

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
	CreateIdempotency(ctx context.Context, r *Idempotency) error
	// GetIdempotency returns the record or ErrNotFound (also when expired).
	GetIdempotency(ctx context.Context, credentialID, key string) (*Idempotency, error)
	// UpdateIdempotency replaces the record only if its stored Version equals
	// r.Version; on success r.Version is incremented.
	UpdateIdempotency(ctx context.Context, r *Idempotency) error

	// CreateReview stores a new review item; ErrConflict if the ID exists.
	CreateReview(ctx context.Context, r *Review) error
	// ListReviews returns review items in creation order (oldest first).
	ListReviews(ctx context.Context) ([]*Review, error)

	// GetQuota returns the quota record of key, or ErrNotFound.
	GetQuota(ctx context.Context, key string) (*Quota, error)
	// PutQuota creates the record when q.Version is 0 (ErrConflict if it
	// exists), else replaces it only if its stored Version equals
	// q.Version; on success q.Version is incremented.
	PutQuota(ctx context.Context, q *Quota) error

	// Close flushes and releases the store.
	Close() error
}

// Credential is a stored credential. The key itself is never stored.
type Credential struct {
	ID          string      `json:"id"`
	KeyHash     string      `json:"key_sha256"`
	Choice      tier.Choice `json:"choice"`
	Origin      tier.Origin `json:"origin"`
	ReadOnly    bool        `json:"read_only"`
	Connections []string    `json:"connections,omitempty"`
	Operator    bool        `json:"operator,omitempty"`
	LastClient  *Client     `json:"last_client,omitempty"`
}

// Client is a client seen with a credential.
type Client struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	CanAsk  bool      `json:"can_ask"`
	SeenAt  time.Time `json:"seen_at"`
}

// Status is the stored status of a confirmation. The effective status also
// depends on the clock (see confirm.Effective).
type Status string

// Confirmation statuses (API.md section 4).
const (
	StatusPending           Status = "pending"
	StatusApproved          Status = "approved"
	StatusRejected          Status = "rejected"
	StatusExpired           Status = "expired"
	StatusRedeemed          Status = "redeemed"
	StatusExecuted          Status = "executed"
	StatusPartiallyExecuted Status = "partially_executed"
	StatusFailed            Status = "failed"
)

// Kind is what a confirmation covers.
type Kind string

// Confirmation kinds.
const (
	KindCall   Kind = "call"
	KindScript Kind = "script"
)

// Confirmation is one request for a person's approval.
type Confirmation struct {
	ID         string `json:"id"`
	Kind       Kind   `json:"kind"`
	Credential string `json:"credential"`
	Status     Status `json:"status"`
	// Reason is why the call needs confirmation.
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt ends the wait for a decision.
	ExpiresAt time.Time `json:"expires_at"`
	// DecidedAt is when a person approved or rejected; DecidedBy names the approver.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	// RedeemBy ends the window in which an approval can be redeemed.
	RedeemBy   *time.Time  `json:"redeem_by,omitempty"`
	RedeemedAt *time.Time  `json:"redeemed_at,omitempty"`
	Operations []Operation `json:"operations"`
	// GatewayRuns is set when the gateway runs the approved operations
	// itself instead of waiting for the agent to redeem (the MCP card).
	GatewayRuns bool `json:"gateway_runs,omitempty"`
	// Result is a script's stored result (code mode).
	Result json.RawMessage `json:"result,omitempty"`
	// Version is the optimistic-concurrency counter; see UpdateConfirmation.
	Version int64 `json:"version"`
	// TTL is when the store may delete the record (unix seconds).
	TTL int64 `json:"ttl"`
}

// Args are a call's arguments, the part of the binding the approver sees.
type Args struct {
	Path  map[string]string `json:"path"`
	Query map[string]any    `json:"query"`
	Body  json.RawMessage   `json:"body"`
}

// OpState tracks the execution of one operation.
type OpState string

// Operation execution states: not yet run, claimed by an executor (the
// upstream call may be in flight), or done with an outcome stored.
const (
	OpWaiting OpState = ""
	OpClaimed OpState = "claimed"
	OpDone    OpState = "done"
)

// Operation is one call inside a confirmation.
type Operation struct {
	Connection string `json:"connection"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Endpoint   string `json:"endpoint"`
	Args       Args   `json:"args"`
	// Binding is the hex SHA-256 over credential, connection, method,
	// endpoint and the canonical arguments (canon.Binding).
	Binding string `json:"binding"`
	// ContentType is the body's media type as the agent sent it.
	ContentType string `json:"content_type,omitempty"`
	// Payload is the body's bytes when Args.Body does not give them back
	// exactly (text, binary, or JSON with other spacing): replay sends
	// Payload when set, else Args.Body.
	Payload []byte `json:"payload,omitempty"`
	// RawQuery is the query as the agent sent it (REST), replayed as it is.
	RawQuery string   `json:"raw_query,omitempty"`
	Selected bool     `json:"selected"`
	State    OpState  `json:"state,omitempty"`
	Outcome  *Outcome `json:"outcome,omitempty"`
}

// Body returns the bytes to send upstream when the operation is replayed:
// Payload when set, else the JSON of Args.Body, nil for no body.
func (op *Operation) Body() []byte {
	if op.Payload != nil {
		return op.Payload
	}
	if len(op.Args.Body) == 0 || string(op.Args.Body) == "null" {
		return nil
	}
	return op.Args.Body
}

// Outcome is the stored result of an upstream call.
type Outcome struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// Error is set when the upstream could not be reached.
	Error string `json:"error,omitempty"`
	// Truncated is set when Body holds only the beginning of the answer
	// (as a JSON string), so the record fits a store item; BodyBytes and
	// BodySHA256 then describe the whole body.
	Truncated  bool   `json:"truncated,omitempty"`
	BodyBytes  int    `json:"body_bytes,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
}

// Bounded returns o with a body of at most max bytes: a longer one is cut
// (at a UTF-8 boundary), kept as a JSON string, and marked Truncated with
// the whole body's length and SHA-256.
func (o Outcome) Bounded(max int) Outcome {
	if len(o.Body) <= max {
		return o
	}
	sum := sha256.Sum256(o.Body)
	o.Truncated, o.BodyBytes, o.BodySHA256 = true, len(o.Body), hex.EncodeToString(sum[:])
	n := max
	for {
		cut := o.Body[:n]
		for len(cut) > 0 && !utf8.Valid(cut) {
			cut = cut[:len(cut)-1]
		}
		b, _ := json.Marshal(string(cut))
		if len(b) <= max || n == 0 {
			o.Body = b
			return o
		}
		n = n * max / len(b) // escapes made it longer: cut more
	}
}

// Idempotency remembers an agent's call under its Idempotency-Key.
type Idempotency struct {
	Credential string `json:"credential"`
	Key        string `json:"key"`
	// RequestHash identifies the call; the same key with another call is refused.
	RequestHash string            `json:"request_hash"`
	Done        bool              `json:"done"`
	Status      int               `json:"status,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        []byte            `json:"body,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	Version     int64             `json:"version"`
}

// Review is a call at the review tier queued for the operator surface.
type Review struct {
	ID         string    `json:"id"`
	Credential string    `json:"credential"`
	Operation  Operation `json:"operation"`
	Reason     string    `json:"reason"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	TTL        int64     `json:"ttl"`
}

// Quota counts the recent uses of one per-credential limit, e.g. the
// confirmations a credential created that may still be pending. Changed
// only by conditional writes on Version.
type Quota struct {
	Key string `json:"key"`
	// Until holds, for each use still counted, when it stops counting.
	Until   []time.Time `json:"until"`
	Version int64       `json:"version"`
	// TTL is when the store may delete the record (unix seconds).
	TTL int64 `json:"ttl"`
}
