package countersign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
	"unicode/utf8"
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

// Asker is the client that made a confirmation's call, in its own words
// (bounded by the surface that recorded it).
type Asker struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	CanAsk  bool   `json:"can_ask"`
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
