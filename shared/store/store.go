package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/shared/tier"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("store: not found")

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
	// SetLastClient records the client last seen with a credential.
	SetLastClient(ctx context.Context, credentialID string, c Client) error

	// CreateConfirmation stores a new confirmation with Version 1; ErrConflict if the ID exists.
	CreateConfirmation(ctx context.Context, c *Confirmation) error
	// GetConfirmation returns the confirmation or ErrNotFound.
	GetConfirmation(ctx context.Context, id string) (*Confirmation, error)
	// UpdateConfirmation replaces the record only if its stored Version equals
	// c.Version; on success c.Version is incremented. ErrConflict otherwise,
	// ErrNotFound if it does not exist.
	UpdateConfirmation(ctx context.Context, c *Confirmation) error

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

	// CreateScriptRun stores a new script journal header with Version 1;
	// ErrConflict if the ID exists.
	CreateScriptRun(ctx context.Context, r *ScriptRun) error
	// GetScriptRun returns a script journal header or ErrNotFound.
	GetScriptRun(ctx context.Context, id string) (*ScriptRun, error)
	// UpdateScriptRun replaces the header only if its stored Version equals
	// r.Version; on success r.Version is incremented. ErrConflict otherwise,
	// ErrNotFound if it does not exist.
	UpdateScriptRun(ctx context.Context, r *ScriptRun) error
	// PutScriptCall stores one journaled call. With Version 0 it creates it
	// (ErrConflict if the run already has a call at c.Index); otherwise it
	// replaces it only if the stored Version equals c.Version (ErrConflict
	// otherwise, ErrNotFound if there is none). On success c.Version is
	// incremented.
	PutScriptCall(ctx context.Context, c *ScriptCall) error
	// ScriptCalls returns a run's journaled calls in Index order; a run
	// without calls has an empty list, not an error.
	ScriptCalls(ctx context.Context, runID string) ([]*ScriptCall, error)
	// PutScriptPart creates or replaces one part of a large journal value.
	PutScriptPart(ctx context.Context, p *ScriptPart) error
	// ScriptParts returns the parts of a run whose Key starts with prefix,
	// in Key order.
	ScriptParts(ctx context.Context, runID, prefix string) ([]*ScriptPart, error)

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
	RedeemBy   *time.Time `json:"redeem_by,omitempty"`
	RedeemedAt *time.Time `json:"redeemed_at,omitempty"`
	// TaskToken is the workflow's callback token, stored by the notify task.
	TaskToken  string      `json:"task_token,omitempty"`
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
	// Truncated is set when Body was too large to keep and was dropped.
	Truncated bool `json:"truncated,omitempty"`
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

// ScriptStatus is where a script's journal stands.
type ScriptStatus string

// Script journal statuses.
const (
	// ScriptPending: the first run collected calls into a batch; the
	// journal waits for the run after approval.
	ScriptPending ScriptStatus = "pending"
	// ScriptRunning: a run after approval holds the journal (Owner, until
	// LeaseUntil).
	ScriptRunning ScriptStatus = "running"
	// ScriptCompleted: the run after approval finished; Result holds its value.
	ScriptCompleted ScriptStatus = "completed"
	// ScriptFailed: the run after approval failed; Error says why.
	ScriptFailed ScriptStatus = "failed"
)

// ScriptRun is the header of a script's journal (code mode): the script,
// who ran it, and how its run after approval ended. Its ID is the id of the
// batch confirmation of the calls it collected; the calls are ScriptCall
// records, large values ScriptPart records.
type ScriptRun struct {
	ID string `json:"id"`
	// Credential is the credential that submitted the script, as it was
	// then (without its key hash or last client): the run after approval
	// decides new calls for it.
	Credential Credential `json:"credential"`
	Source     string     `json:"source"`
	// SourceHash is the hex SHA-256 of Source.
	SourceHash string `json:"source_hash"`
	// Seed seeds Math.random, and StartedAt starts Date's clock, on every
	// run, so that a script replays the same way.
	Seed      int64        `json:"seed"`
	StartedAt time.Time    `json:"started_at"`
	Status    ScriptStatus `json:"status"`
	// Owner and LeaseUntil name the run holding the journal (ScriptRunning).
	Owner      string     `json:"owner,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Attempts counts the runs after approval that took the journal.
	Attempts int `json:"attempts"`
	// Result is the script's value as JSON (ScriptCompleted); when
	// ResultParts is set it is in that many parts under the key "result/".
	Result      json.RawMessage `json:"result,omitempty"`
	ResultParts int             `json:"result_parts,omitempty"`
	// Error is why the run after approval failed (ScriptFailed).
	Error *ScriptError `json:"error,omitempty"`
	// Logs are the console.log lines of the last run that ended.
	Logs []string `json:"logs,omitempty"`
	// Reached is how many calls the last run that ended made: the
	// journal's first Reached calls are that run's.
	Reached    int        `json:"reached"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	// Version is the optimistic-concurrency counter; see UpdateScriptRun.
	Version int64 `json:"version"`
	// TTL is when the store may delete the record (unix seconds).
	TTL int64 `json:"ttl"`
}

// ScriptError is a script's failure: a fault code, the reason, and where
// in the script (1-based; 0 when unknown).
type ScriptError struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// ScriptCallState is the state of a journaled call.
type ScriptCallState string

// Journaled call states.
const (
	// ScriptCallRan: the call ran (or failed to reach the upstream); Value
	// is what call() returned.
	ScriptCallRan ScriptCallState = "ran"
	// ScriptCallPending: the call needs confirmation and was collected into
	// the batch as operation Operation.
	ScriptCallPending ScriptCallState = "pending"
	// ScriptCallRejected: collected, and cleared by the approver.
	ScriptCallRejected ScriptCallState = "rejected"
	// ScriptCallDenied: refused by policy; nothing ran.
	ScriptCallDenied ScriptCallState = "denied"
	// ScriptCallClaimed: a run after approval is about to run a call the
	// first run did not make (written before the upstream call); a run that
	// finds it claimed never runs it again.
	ScriptCallClaimed ScriptCallState = "claimed"
)

// ScriptCall is one call() of a script, in call order.
type ScriptCall struct {
	RunID string `json:"run_id"`
	// Index is the call's position in call order, from 0.
	Index      int    `json:"index"`
	Connection string `json:"connection"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	// Binding is the canonical binding of the call (canon.Binding): a
	// replay must make the same call at the same position.
	Binding string          `json:"binding"`
	State   ScriptCallState `json:"state"`
	// Operation is the index of the batch's operation (collected calls),
	// -1 for the others.
	Operation int `json:"operation"`
	// Rerun is set when the call ran in a run after approval (an approved
	// operation, or a call the first run did not make).
	Rerun bool `json:"rerun,omitempty"`
	// Value is what call() returned, as JSON; a large one is in ValueParts
	// parts under the key "call/<index>/" and Value is empty.
	Value      json.RawMessage `json:"value,omitempty"`
	ValueParts int             `json:"value_parts,omitempty"`
	// Version is the optimistic-concurrency counter; see PutScriptCall.
	Version int64 `json:"version"`
	TTL     int64 `json:"ttl"`
}

// ScriptPart is one piece of a large value of a script's journal (a
// call's value, the result), kept in its own record so that every record
// stays within DynamoDB's 400 KB item size.
type ScriptPart struct {
	RunID string `json:"run_id"`
	// Key orders the parts of one value, e.g. "call/00000003/0001".
	Key  string `json:"key"`
	Data []byte `json:"data"`
	TTL  int64  `json:"ttl"`
}
