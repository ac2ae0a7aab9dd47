// Package countersign holds the domain: the records countersign keeps
// (credentials and the clients seen with them, confirmations and their
// operations and outcomes, idempotent calls, quotas, the audit trail and
// script runs, and what a script run gave) and their states. It imports
// nothing from the rest of the project but the decision engine's value
// types (shared/policy) and the fault codes (shared/fault); the store
// adapters (shared/store/embedded, shared/store/dynamostore) keep these
// records, and the pipeline, the workflow and the surfaces pass them around.
package countersign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// Credential is a stored credential. The key itself is never stored.
type Credential struct {
	ID          string        `json:"id"`
	KeyHash     string        `json:"key_sha256"`
	Choice      policy.Choice `json:"choice"`
	Origin      policy.Origin `json:"origin"`
	ReadOnly    bool          `json:"read_only"`
	Connections []string      `json:"connections,omitempty"`
	Operator    bool          `json:"operator,omitempty"`
	LastClient  *Client       `json:"last_client,omitempty"`
	// Issuer and Subject name the person of a user credential: the
	// identity provider that signed them in and their subject there. A
	// user has no key (its KeyHash is the hash of random bytes nobody
	// holds): it authenticates only with an access token issued to a
	// client it authorized (OAuthGrant).
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Email is the person's e-mail: the one a configured user signs in as
	// (credentials.json "user"), or the one the identity provider gave at
	// first sign-in. Set only on users.
	Email string `json:"email,omitempty"`
	// AskInClient lets a key with the ask_person choice be asked in the
	// client (form elicitation, the MCP Apps card): it trusts whoever
	// holds the key to be the person. Users are always asked in the
	// client; other keys are asked out of band (the approvers' links).
	AskInClient bool `json:"ask_in_client,omitempty"`
	// Source is where the credential came from: SourceConfig for one
	// written from credentials.json at start-up, which the next start-up
	// revokes once the file no longer lists it; empty for one made by
	// other means (countersign keys, a first sign-in), which start-up
	// never touches.
	Source string `json:"source,omitempty"`
}

// SourceConfig marks a credential written from credentials.json.
const SourceConfig = "config"

// IsPerson reports whether the credential is a user: a person who signs
// in (a configured user, by e-mail, or one created at first sign-in, by
// issuer and subject), who authenticates only with an access token.
func (c *Credential) IsPerson() bool { return c != nil && (c.Subject != "" || c.Email != "") }

// Person is the person of a user credential, as a decision records who
// made it in their client; nil for a key, which is a program's.
func (c *Credential) Person() *Person {
	if !c.IsPerson() {
		return nil
	}
	return &Person{Issuer: c.Issuer, Subject: c.Subject, Email: c.Email}
}

// AsksInClient reports whether a call of this credential that needs a
// person may ask in the client that made it: the client's person is the
// credential's own (a user), or the key opted in (AskInClient).
func (c *Credential) AsksInClient() bool { return c.IsPerson() || (c != nil && c.AskInClient) }

// Client is a client seen with a credential.
type Client struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	CanAsk  bool      `json:"can_ask"`
	SeenAt  time.Time `json:"seen_at"`
}

// Asker is the client that made a confirmation's call, in its own words
// (bounded by the surface that recorded it).
type Asker struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	CanAsk  bool   `json:"can_ask"`
}

// Status is the stored status of a confirmation. The effective status also
// depends on the clock (see confirm.Effective).
type Status string

// Confirmation statuses (docs/api.md, Confirmation status).
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
	// KindReview is a call at the review tier queued for the operators:
	// its one operation runs only when an operator runs it, exactly once,
	// through the same claim and outcome as an approved call.
	KindReview Kind = "review"
)

// Confirmation is one request for a person's approval.
type Confirmation struct {
	ID         string `json:"id"`
	Kind       Kind   `json:"kind"`
	Credential string `json:"credential"`
	Status     Status `json:"status"`
	// Reason is why the call needs confirmation.
	Reason string `json:"reason"`
	// Asker is what the client that made the call said of itself, as it
	// made it (nil when it said nothing): the approval page shows this
	// one, never the credential's last client, which another agent
	// sharing the key may have set since.
	Asker     *Asker    `json:"asker,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt ends the wait for a decision.
	ExpiresAt time.Time `json:"expires_at"`
	// DecidedAt is when a person approved or rejected; DecidedBy names the approver.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	// DecidedByPerson is the person who decided, signed in at the
	// workspace's identity provider (approvers.sign_in); nil when the link
	// was used without sign-in, and DecidedBy then names only the channel.
	DecidedByPerson *Person `json:"decided_by_person,omitempty"`
	// DecidedMethod is how the decider proved the approval: "passkey"
	// when it carried a verified WebAuthn assertion (approval.passkey);
	// empty otherwise.
	DecidedMethod string `json:"decided_method,omitempty"`
	// Required is the quorum (approval.required, 2 to 5) in force when
	// the call paused; 1 means one approval decides. 0 is a record made
	// before the rules were recorded: the first approval counted sets it
	// from the policy then in force.
	Required int `json:"required,omitempty"`
	// SeparateApprover is approval.separate_approver as it was when the
	// call paused (four eyes): the person who made the call may not
	// approve it.
	SeparateApprover bool `json:"separate_approver,omitempty"`
	// Rules are the rest of who may approve it, recorded when the call
	// paused (confirm checks them on every answer, from every surface);
	// nil on a record made before they were recorded, which is then
	// checked against the policy in force.
	Rules *ApprovalRules `json:"rules,omitempty"`
	// Approvals are the distinct people whose approvals a quorum has
	// counted, in order; the N-th approves the confirmation.
	Approvals []Approval `json:"approvals,omitempty"`
	// DecisionReason is the reason an approver gave for a rejection, or an
	// operator for dismissing a review item; the agent reads it.
	DecisionReason string `json:"decision_reason,omitempty"`
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
	// WriteID is a random tag each write of the lifecycle sets, so that a
	// writer whose answer was lost can tell, by reading the record, whether
	// its write was applied (confirm.Service).
	WriteID string `json:"write_id,omitempty"`
	// Trace is the W3C traceparent of the span that created the record,
	// set only while tracing is on (shared/telemetry): the approval, the
	// workflow's tasks and the redemption join that trace. It is never
	// part of the binding and never sent upstream.
	Trace string `json:"traceparent,omitempty"`
	// TTL is when the store may delete the record (unix seconds).
	TTL int64 `json:"ttl"`
}

// ApprovalRules are who may approve a confirmation, besides its quorum
// (Required) and four eyes (SeparateApprover): the policy's rules as they
// were when the call paused, so a configuration changed while it waits
// does not change who may decide it. A later rule (a passkey) joins here.
type ApprovalRules struct {
	// Approvers are the approval.approvers lists of its operations (each
	// the endpoint's, else its connection's): an approver must be on every one.
	Approvers []ApproverList `json:"approvers,omitempty"`
	// OutOfBandOnly is approval.out_of_band_only: only the approvers
	// decide, through their links, never the client that made the call.
	OutOfBandOnly bool `json:"out_of_band_only,omitempty"`
	// Passkey is approval.passkey: every approval is a signed-in person's
	// WebAuthn assertion over what is approved (MethodPasskey); nobody is
	// asked in the client, which cannot sign.
	Passkey bool `json:"passkey,omitempty"`
}

// ApproverList is one approval.approvers list as recorded: verified
// e-mails, e-mail domains ("@example.com") and groups.
type ApproverList struct {
	// Where names what it guards: "<connection> <METHOD> <endpoint>".
	Where   string   `json:"where"`
	Emails  []string `json:"emails,omitempty"`
	Domains []string `json:"domains,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// Person is someone signed in at an identity provider: the issuer and
// their subject there identify them; the e-mail (only one the provider
// verified) and name are what the provider said of them, labels, never
// who they are.
type Person struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
}

// Same reports whether p and o are the same person: the same subject at
// the same issuer. An e-mail is a label, never an identity.
func (p *Person) Same(o *Person) bool {
	return p != nil && o != nil && p.Subject != "" && p.Issuer == o.Issuer && p.Subject == o.Subject
}

// Label is how the person is shown and recorded as an actor: their
// e-mail, or the subject at the issuer.
func (p Person) Label() string {
	if p.Email != "" {
		return p.Email
	}
	return p.Subject + " at " + p.Issuer
}

// Approval is one person's approval counted toward a quorum.
type Approval struct {
	Person
	// Channel is the approver whose link they used.
	Channel string    `json:"channel,omitempty"`
	At      time.Time `json:"at"`
	// Method is MethodPasskey when the approval carried a verified
	// passkey assertion.
	Method string `json:"method,omitempty"`
}

// MethodPasskey is the decided_by.method of an approval proved with a
// passkey (approval.passkey).
const MethodPasskey = "passkey"

// Decider is who decided a confirmation, as the API and the events show
// it (decided_by): a person signed in (Kind "person", with the channel
// whose link they used) or, without sign-in, only the channel.
type Decider struct {
	Kind    string `json:"kind"` // "person" or "channel"
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Method is how the approval was proved: "passkey", or empty.
	Method string `json:"method,omitempty"`
}

// DecidedBy is who decided c, nil while nobody has.
func DecidedBy(c *Confirmation) *Decider {
	switch {
	case c.DecidedAt == nil:
		return nil
	case c.DecidedByPerson != nil:
		p := c.DecidedByPerson
		return &Decider{Kind: "person", Issuer: p.Issuer, Subject: p.Subject, Email: p.Email, Name: p.Name, Channel: c.DecidedBy, Method: c.DecidedMethod}
	case c.DecidedBy != "":
		return &Decider{Kind: "channel", Channel: c.DecidedBy}
	}
	return nil
}

// Args are a call's arguments, the part of the binding the approver sees.
type Args struct {
	Path  map[string]string `json:"path"`
	Query map[string]any    `json:"query"`
	Body  json.RawMessage   `json:"body"`
	// Headers are the request headers the call forwards that bind: the
	// connection's forward_headers the agent sent, by canonical name
	// (X-Tenant-Id). Replayed as they are; left out when there are none, so
	// a call without them binds as before.
	Headers map[string]string `json:"headers,omitempty"`
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
	RawQuery string `json:"raw_query,omitempty"`
	// Negotiation are the content negotiation headers the agent sent
	// (Accept, Accept-Language): replayed with the operation, not bound.
	Negotiation map[string]string `json:"negotiation,omitempty"`
	Selected    bool              `json:"selected"`
	State       OpState           `json:"state,omitempty"`
	Outcome     *Outcome          `json:"outcome,omitempty"`
	// Show is the endpoint's show read for this call (nil without one);
	// Current is its answer when the person was asked, and Changes what
	// a PUT or PATCH changes in it.
	Show    *Show    `json:"show,omitempty"`
	Current *Current `json:"current,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	// Editable are the fields a person may change when approving
	// (approval.editable, recorded when the call paused): "body.<json
	// path>" and "query.<name>".
	Editable []string `json:"editable,omitempty"`
	// Edited is what the approver changed, by field, and EditedCall the
	// edited call: what runs (Runs), while Args and Binding stay the
	// agent's call, which its redemption matches. Both nil when nothing
	// was edited.
	Edited     map[string]EditedField `json:"edited,omitempty"`
	EditedCall *EditedCall            `json:"edited_call,omitempty"`
}

// EditedField is one field an approver changed: the agent's value and the
// approver's, as JSON.
type EditedField struct {
	From json.RawMessage `json:"from"`
	To   json.RawMessage `json:"to"`
}

// EditedCall is the call an approver edited, bound as the agent's is
// (canon.Binding), with what replaying it needs.
type EditedCall struct {
	Args     Args   `json:"args"`
	Binding  string `json:"binding"`
	Payload  []byte `json:"payload,omitempty"`
	RawQuery string `json:"raw_query,omitempty"`
}

// Runs is the operation as it runs: the edited call when an approver
// edited it, else op itself. Every path that runs an approved operation
// runs this.
func (op Operation) Runs() Operation {
	if e := op.EditedCall; e != nil {
		op.Args, op.Binding, op.Payload, op.RawQuery = e.Args, e.Binding, e.Payload, e.RawQuery
	}
	return op
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

// AuditRecord is one entry of the audit trail: who did what, when, under
// which rule, to which bound operation, with what outcome. Records form
// chains (one per credential, and "system"): each carries the SHA-256 of
// the previous record of its chain (Prev) and of itself (Hash), computed by
// package audit. Optional fields are omitted from the JSON when empty, so
// adding one later does not change the hash of older records.
type AuditRecord struct {
	Chain string    `json:"chain"`
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	// ID names the record from the moment it is written, before it is
	// sealed into its chain (package audit): a sealer that finds it sealed
	// already never seals it twice. Absent on records written before IDs.
	ID string `json:"id,omitempty"`
	// Actor is who acted: a credential id, "approver:<name>",
	// "operator:<credential id>", "cli" or "system".
	Actor string `json:"actor"`
	// Action is what happened, e.g. "call.denied", "confirmation.approved".
	Action string `json:"action"`
	// Subject names what it happened to: a confirmation or review id, a
	// credential id, a configuration digest.
	Subject    string `json:"subject,omitempty"`
	Credential string `json:"credential,omitempty"`
	Connection string `json:"connection,omitempty"`
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"`
	Tier       string `json:"tier,omitempty"`
	Rule       string `json:"rule,omitempty"`
	// Binding is the bound operation's hash (canon.Binding).
	Binding string `json:"binding,omitempty"`
	// Outcome is the outcome status: a denial code, "confirmation_required",
	// "executed", a confirmation status, an upstream status.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Hook is the connection hooks' answer, when they were asked.
	Hook *AuditHook `json:"hook,omitempty"`
	// PathBytes and PathSHA256 are set when Path was cut to its bound
	// (package audit): the whole path's length and hex SHA-256.
	PathBytes  int    `json:"path_bytes,omitempty"`
	PathSHA256 string `json:"path_sha256,omitempty"`
	// ReasonBytes and ReasonSHA256 are the same for a cut Reason.
	ReasonBytes  int    `json:"reason_bytes,omitempty"`
	ReasonSHA256 string `json:"reason_sha256,omitempty"`
	// Count is how many identical events a summary record stands for
	// (absent: one). A summary repeats record First, made at Since, and
	// is made at the end of its window (At: the last repeat).
	Count int64      `json:"count,omitempty"`
	First int64      `json:"first,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// TTL is when the store may delete the record (unix seconds; absent:
	// never). Only the records of an expiring chain have one, and along
	// such a chain it never decreases, so records expire oldest first.
	TTL int64 `json:"ttl,omitempty"`
	// PrevTTL is the TTL of the previous record of the chain: a record
	// whose predecessor is gone shows that it was allowed to expire.
	PrevTTL int64 `json:"prev_ttl,omitempty"`
	// Prev is the Hash of the previous record of the chain ("" for Seq 1).
	Prev string `json:"prev"`
	// Hash is the hex SHA-256 of this record with Hash empty.
	Hash string `json:"hash"`
}

// AuditHook is a hook's answer in an audit record.
type AuditHook struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// AuditHead is where a chain ends: the Seq and Hash of its newest record.
// A deleted or edited newest record no longer matches it.
type AuditHead struct {
	Chain string `json:"chain"`
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
	// Expires is that record's TTL (0: never). The head itself never
	// expires: when every record of an expiring chain is gone it still
	// names the last one, and the chain goes on from it.
	Expires int64 `json:"expires,omitempty"`
}

// PendingAudit is a record written but not yet sealed into its chain
// (store.Store.AddAudit): Key is where the store keeps it.
type PendingAudit struct {
	Key    string
	Record AuditRecord
}

// AuditQuery selects records of one chain for ListAudit.
type AuditQuery struct {
	Chain string
	// After skips records with Seq at or below it.
	After int64
	// Limit bounds the records returned; 0 returns all.
	Limit int
	// Newest lists from the highest Seq down.
	Newest bool
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

// ScriptOutcome is how a script run ended, as code mode answers it.
type ScriptOutcome string

// Script outcomes.
const (
	// ScriptDone: the script ran to its end with nothing to confirm, or
	// its run after approval ended (a resubmission).
	ScriptDone ScriptOutcome = "completed"
	// ScriptConfirmationRequired: calls were collected into a batch confirmation.
	ScriptConfirmationRequired ScriptOutcome = "confirmation_required"
)

// ShownCallState is what became of a call() in a run, as the agent is shown it.
type ShownCallState string

// Shown call states.
const (
	// ShownRan: the call ran in this run (or an approved one ran after approval).
	ShownRan ShownCallState = "ran"
	// ShownReplayed: after approval, the call returned what it returned
	// in the first run, without running again.
	ShownReplayed ShownCallState = "replayed"
	// ShownPending: the call needs confirmation; it was collected.
	ShownPending ShownCallState = "pending"
	// ShownRejected: the approver cleared the call.
	ShownRejected ShownCallState = "rejected"
	// ShownDenied: policy refused the call; nothing ran.
	ShownDenied ShownCallState = "denied"
)

// ShownCall is one call() of a script run, as the agent is shown it.
type ShownCall struct {
	Connection string         `json:"connection"`
	Method     string         `json:"method"`
	Path       string         `json:"path"`
	State      ShownCallState `json:"state"`
	// Operation is the index of the batch's operation a collected call
	// became (the approval page's checkbox); nil for other calls.
	Operation *int `json:"operation,omitempty"`
	// Response is what call() returned; one over 32 KiB is shown as
	// {"truncated": true, "bytes": n} (the script itself got all of it).
	Response json.RawMessage `json:"response"`
}

// ScriptResult is a script run that did not fail, or a script batch's
// script as its owner reads it: the one result type of code mode. It is
// here, apart from the JavaScript engine (shared/script), so that every
// surface can use it without linking the engine.
type ScriptResult struct {
	// Status is how the run ended. A batch's script is ScriptDone once its
	// run after approval completed, and has no Status until then.
	Status ScriptOutcome
	// Value is the script's value as JSON (ScriptDone; null for undefined).
	Value json.RawMessage
	// Calls are the run's calls in order.
	Calls []ShownCall
	// Logs are its console.log lines.
	Logs []string
	// Confirmation is the batch (ScriptConfirmationRequired, or the
	// finished batch of a resubmission); Effective its status by the clock.
	Confirmation *Confirmation
	Effective    Status
	// Unasked counts the calls denied to the script because the surface
	// could ask nobody.
	Unasked int
	// Error is why the run after approval failed (a batch's script).
	Error *ScriptError
}

// Failure is a batch's script whose run after approval failed, as the
// failure a run returns: nil unless Error is set.
func (r *ScriptResult) Failure() *ScriptFailure {
	if r.Error == nil {
		return nil
	}
	e := r.Error
	return &ScriptFailure{Code: fault.Code(e.Code), Reason: e.Reason, Line: e.Line, Column: e.Column, Calls: r.Calls, Logs: r.Logs}
}

// ScriptFailure is a script that failed: why (a fault code and a reason
// that names the line and column when known), and what it did first.
// Nothing it collected is pending.
type ScriptFailure struct {
	Code         fault.Code
	Reason       string
	Line, Column int
	Calls        []ShownCall
	Logs         []string
}

func (e *ScriptFailure) Error() string { return string(e.Code) + ": " + e.Reason }

// Unwrap gives the code to fault.As.
func (e *ScriptFailure) Unwrap() error { return &fault.Error{Code: e.Code, Reason: e.Reason} }

// Page sizes of the listings (store.Store's List methods): a page holds
// at most MaxPageSize items, DefaultPageSize when the query does not say.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// ListQuery asks for one page of a listing: confirmations, review items,
// credentials or audit chains. The store reads it from an index, never by
// scanning the table.
type ListQuery struct {
	// Status, for confirmations and review items, lists only those whose
	// stored status is this one ("" lists every status).
	Status Status
	// Newest lists from the newest down (confirmations and review items);
	// otherwise the oldest come first.
	Newest bool
	// Limit bounds the page: 1 to MaxPageSize; 0 means DefaultPageSize.
	Limit int
	// Cursor continues the listing after the previous page: that page's
	// Next, as the store returned it ("" starts at the beginning). A cursor
	// is only valid for the same listing (the same method, Status and
	// Newest); anything else is refused with store.ErrBadCursor.
	Cursor string
}

// PageSize is q's Limit with the default applied, or an error when it is
// out of range.
func (q ListQuery) PageSize() (int, error) {
	switch {
	case q.Limit == 0:
		return DefaultPageSize, nil
	case q.Limit < 0 || q.Limit > MaxPageSize:
		return 0, fmt.Errorf("page size %d: it must be between 1 and %d", q.Limit, MaxPageSize)
	}
	return q.Limit, nil
}

// Page is one page of a listing. Next continues it (ListQuery.Cursor);
// "" means this is the last page. A page may hold fewer than the limit
// (even none) and still have a Next: records listed by the index may have
// changed or gone by the time they are read.
type Page[T any] struct {
	Items []T
	Next  string
}

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

// MaxPasskeysPerPerson is how many passkeys one person may register.
const MaxPasskeysPerPerson = 10
