package confirm

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/telemetry"
	"github.com/countersign/countersign/shared/workflow"
)

// Timeouts bound the life of a confirmation.
type Timeouts struct {
	// Call is how long a single call waits for an approver's answer (600 s).
	Call time.Duration
	// Script is how long a script batch waits for an approver's answer (1800 s).
	Script time.Duration
	// Redeem is how long an approved call may wait for its redemption (600 s).
	Redeem time.Duration
}

// DefaultTimeouts are the timeouts of the source documents.
var DefaultTimeouts = Timeouts{Call: 600 * time.Second, Script: 1800 * time.Second, Redeem: 600 * time.Second}

// retention is how long a finished record is kept before the store's TTL may delete it.
const retention = 24 * time.Hour

// maxCASAttempts bounds the read-modify-write loop under contention; every
// failed attempt means another writer made progress.
const maxCASAttempts = 64

// Store is the persistence the lifecycle needs: conditional writes on a
// confirmation's version. Adapters: store/embedded and store/dynamostore.
type Store interface {
	// CreateConfirmation stores a new confirmation with Version 1;
	// store.ErrConflict if the ID exists.
	CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error
	// GetConfirmation returns the confirmation or store.ErrNotFound.
	GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error)
	// UpdateConfirmation replaces the record only if its stored Version
	// equals c.Version, and increments c.Version; store.ErrConflict
	// otherwise.
	UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error
	// PutTaskToken stores the workflow's task token of a confirmation
	// apart from it, replacing any earlier one; TaskToken reads it back
	// (store.ErrNotFound if there is none).
	PutTaskToken(ctx context.Context, id, token string, ttl int64) error
	TaskToken(ctx context.Context, id string) (string, error)
}

// Service is the confirmation lifecycle, its one owner: create, answer,
// redeem, execute once, finalize. Which event may happen in which status is
// the table in lifecycle.go. Every transition is a conditional write on the
// record's version, so under any race exactly one writer wins and the
// others re-read; the winner records it in the audit trail and announces
// it, so each is recorded and announced once whatever surface caused it.
type Service struct {
	Store    Store
	Workflow workflow.Workflow
	// Timeouts are the timeouts the service starts with; SetTimeouts
	// replaces them while it runs.
	Timeouts Timeouts
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns a new confirmation id; nil means random "cf_" ids.
	NewID func() string
	// Credentials reads the credential that made a call, for the rules
	// that compare its person with the one answering (four eyes, the link
	// given to the caller); nil refuses every answer such a rule governs.
	Credentials Credentials
	// RulesInForce are the approval rules the policy in force gives
	// operations (RulesOf): a record made before its rules were recorded
	// is checked against them. nil: such a record has no approvers lists.
	RulesInForce func(ops []countersign.Operation) *countersign.ApprovalRules
	// Passkeys verifies the passkey assertions of approvals
	// (approval.passkey); nil refuses every approval that needs one.
	Passkeys PasskeyVerifier
	// Logger receives lifecycle events; nil discards.
	Logger *slog.Logger
	// Audit records every transition (answers, expiries, redemptions,
	// executions, review items run or dismissed, scripts' ends); nil
	// records nothing.
	Audit Auditor
	// Events announces answers, executions and expiries to the approver
	// channels; nil sends nothing.
	Events Events
	// SyncEvents delivers events before returning (Lambda freezes work
	// left running after the response); otherwise they go in the background.
	SyncEvents bool
	// Reader makes the operations' show reads (Observe, ReadCurrent, and
	// the recheck before each write); nil reads nothing, and an operation
	// that must be rechecked then does not run.
	Reader Reader

	live atomic.Pointer[Timeouts]
}

// SetTimeouts puts t in force for the confirmations created, decided and
// redeemed after it returns (a deployment re-read its configuration). It
// is safe to call while the service runs.
func (s *Service) SetTimeouts(t Timeouts) { s.live.Store(&t) }

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Service) timeouts() Timeouts {
	t := s.Timeouts
	if live := s.live.Load(); live != nil {
		t = *live
	}
	if t.Call <= 0 {
		t.Call = DefaultTimeouts.Call
	}
	if t.Script <= 0 {
		t.Script = DefaultTimeouts.Script
	}
	if t.Redeem <= 0 {
		t.Redeem = DefaultTimeouts.Redeem
	}
	return t
}

// Wait is how long a confirmation of kind waits for an approver's answer.
func (s *Service) Wait(kind countersign.Kind) time.Duration {
	if kind == countersign.KindScript {
		return s.timeouts().Script
	}
	return s.timeouts().Call
}

// NewID returns a new confirmation id: "cf_" and 26 base32 characters
// (128 bits): the time in milliseconds (48 bits), then 80 random bits. The
// time first keeps the ids a process makes at once side by side in the
// embedded store's trees keyed by id (the confirmations, their task tokens,
// the workflow's executions): the pauses of one group commit then share
// their leaf pages instead of each rewriting a page of its own in each
// tree (TestNewID). The random part alone is beyond guessing, as the
// whole id was; the time it shows is the record's created_at.
func NewID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(fmt.Sprintf("confirm: crypto/rand failed: %v", err))
	}
	return "cf_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Effective is the status a reader must act on: the stored status corrected
// by the clock. A pending record past its expiry is expired, and so is an
// approved call not redeemed within its window, whether or not a timer fired.
func Effective(c *countersign.Confirmation, now time.Time) countersign.Status {
	switch c.Status {
	case countersign.StatusPending:
		if !now.Before(c.ExpiresAt) {
			return countersign.StatusExpired
		}
	case countersign.StatusApproved:
		if c.RedeemBy != nil && !now.Before(*c.RedeemBy) {
			return countersign.StatusExpired
		}
	}
	return c.Status
}

// NewOperation builds an operation of credential's call and binds it to the
// exact arguments.
func NewOperation(credential, connection, method, path, endpoint string, args countersign.Args) (countersign.Operation, error) {
	if args.Path == nil {
		args.Path = map[string]string{}
	}
	if args.Query == nil {
		args.Query = map[string]any{}
	}
	if len(args.Body) == 0 {
		args.Body = json.RawMessage("null")
	}
	op := countersign.Operation{Connection: connection, Method: method, Path: path, Endpoint: endpoint, Args: args, Selected: true}
	b, err := canon.Binding(credential, connection, method, endpoint, args)
	if err != nil {
		return countersign.Operation{}, fmt.Errorf("bind %s %s: %w", method, path, err)
	}
	op.Binding = b
	return op, nil
}

// Request is what Create needs.
type Request struct {
	// ID, when set, is the new confirmation's id (code mode writes the
	// script's journal under it first); empty means Service.NewID.
	ID         string
	Kind       countersign.Kind
	Credential string
	Reason     string
	// Asker is the client that made the call, as it described itself.
	Asker      *countersign.Asker
	Operations []countersign.Operation
	// GatewayRuns makes the gateway run the approved operations itself
	// (the MCP card) instead of waiting for the agent to redeem; script
	// batches always do.
	GatewayRuns bool
	// Required and SeparateApprover are the approval rules in force when
	// the call paused (policy.Rules; a batch's strictest operation's): the
	// record keeps them, so a configuration changed while it waits does
	// not change who may decide it.
	Required         int
	SeparateApprover bool
	// Rules are the rest of the rules in force (RulesOf), recorded with them.
	Rules *countersign.ApprovalRules
}

// workflowInput is the execution input of the state machines.
type workflowInput struct {
	ConfirmationID string `json:"confirmation_id"`
	TimeoutSeconds int64  `json:"timeout_seconds"`
	// TraceParent is the creating span's W3C traceparent, only while
	// tracing is on; the tasks read it from the record (Trace), which they
	// load anyway, so that the state machines need not pass it on.
	TraceParent string `json:"traceparent,omitempty"`
}

// Create stores a pending confirmation and starts its workflow, which hands
// the task token to the notify task and waits for the answer or the timeout.
func (s *Service) Create(ctx context.Context, r Request) (*countersign.Confirmation, error) {
	if len(r.Operations) == 0 {
		return nil, errors.New("create confirmation: no operations")
	}
	now := s.now()
	wait, machine := s.Wait(r.Kind), workflow.Confirm
	if r.Kind == countersign.KindScript {
		machine = workflow.Batch
	}
	id := r.ID
	switch {
	case id != "":
	case s.NewID != nil:
		id = s.NewID()
	default:
		id = NewID()
	}
	c := &countersign.Confirmation{
		ID:          id,
		Kind:        r.Kind,
		Credential:  r.Credential,
		Status:      countersign.StatusPending,
		Reason:      r.Reason,
		Asker:       r.Asker,
		CreatedAt:   now,
		ExpiresAt:   now.Add(wait),
		Operations:  r.Operations,
		GatewayRuns: r.GatewayRuns,
		// 1 records that one approval decides, apart from a record made
		// before the rules were recorded (0).
		Required:         min(max(r.Required, 1), maxRequired),
		SeparateApprover: r.SeparateApprover,
		Rules:            r.Rules,
		TTL:              now.Add(wait + s.timeouts().Redeem + retention).Unix(),
		Trace:            telemetry.TraceParent(ctx),
	}
	input, err := json.Marshal(workflowInput{ConfirmationID: id, TimeoutSeconds: int64(wait / time.Second), TraceParent: c.Trace})
	if err != nil {
		return nil, fmt.Errorf("create confirmation %s: %w", id, err)
	}
	// Where the workflow can, its execution is written with the record
	// (one commit); start then only acts on it.
	wctx, start := ctx, func(ctx context.Context) (string, error) { return s.Workflow.Start(ctx, machine, id, input) }
	ts, tokens := s.Workflow.(tokenStarter)
	ta, kept := s.Store.(taskTokenAlong)
	switch as, ok := s.Workflow.(alongStarter); {
	case tokens && kept && !needsRead(c.Operations):
		// The task token too, which AttachToken then finds in place. Not
		// when the notify task stores show reads first: nobody may
		// answer before they are there.
		var token string
		wctx, token, start = ts.StartAlongToken(ctx, machine, id, input)
		wctx, _ = ta.TaskTokenAlong(wctx, id, token, c.TTL)
	case ok:
		wctx, start = as.StartAlong(ctx, machine, id, input)
	}
	if err := s.create(wctx, c); err != nil {
		return nil, fmt.Errorf("create confirmation %s: %w", id, err)
	}
	if _, err := start(ctx); err != nil {
		// Nobody can be asked: make sure the record can never be approved.
		if _, ferr := s.Finalize(context.WithoutCancel(ctx), id, countersign.StatusFailed); ferr != nil {
			s.logger().ErrorContext(ctx, "finalize after failed start", "confirmation", id, "error", ferr)
		}
		return nil, fmt.Errorf("start workflow for %s: %w", id, err)
	}
	telemetry.Paused(ctx, string(r.Kind), id)
	s.logger().InfoContext(ctx, "confirmation created", "confirmation", id, "credential", r.Credential, "kind", r.Kind, "operations", len(r.Operations))
	if c.Kind == countersign.KindScript {
		// A call's pause is recorded with the call (call.paused); a
		// script's calls are recorded with the batch they joined.
		s.record(ctx, c.Credential, "script.paused", c, c.Reason)
	}
	return c, nil
}

// alongAnswerer is a workflow that can write its answer to a task in the
// same transaction as the confirmation write made with the context it
// returns (the local engine on the embedded store); send, called after
// that write, acts on it (or sends it on its own).
type alongAnswerer interface {
	AnswerAlong(ctx context.Context, token string, answer func() (output []byte, errorName, cause string, ok bool)) (context.Context, func(ctx context.Context) error)
}

// alongStarter is a workflow that can write a new execution in the same
// transaction as the confirmation write made with the context it returns
// (the local engine on the embedded store); start, called after that
// write, finishes the start (or starts it on its own).
type alongStarter interface {
	StartAlong(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, func(ctx context.Context) (string, error))
}

// tokenStarter is an alongStarter that also returns the token of the task
// the new execution waits in first, to be written in the same transaction
// (the local engine); an execution of that name that exists already fails
// that write.
type tokenStarter interface {
	StartAlongToken(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, string, func(ctx context.Context) (string, error))
}

// taskTokenAlong is a store that can write a task token in the
// transaction of the next confirmation write made with the context it
// returns (store/embedded).
type taskTokenAlong interface {
	TaskTokenAlong(ctx context.Context, id, token string, ttl int64) (context.Context, *store.Along)
}

// Get returns a confirmation, or an unknown_confirmation error.
func (s *Service) Get(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Store.GetConfirmation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Errorf(fault.UnknownConfirmation, "no confirmation %s", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get confirmation %s: %w", id, err)
	}
	return c, nil
}

// errUnchanged tells update that fn decided no write is needed.
var errUnchanged = errors.New("unchanged")

// A write's answer can be lost after the store applied it: the caller sees
// an error, or a conflict when the client retried the write (DynamoDB's SDK
// does, and the retry finds the version already moved on). Every write of
// the lifecycle carries a fresh countersign.Confirmation.WriteID, so the writer
// can read the record back and know: its own tag there means its write
// landed and stands. Another writer's tag, or a read that fails, means it
// did not, or that it cannot tell, and the write counts as not made. No
// other writer can carry the same tag, so a write is never taken for
// another's.

// newWriteID returns a fresh tag for one write.
func newWriteID() string { return rand.Text() }

// landed reports whether the write tagged tag is the one the store holds,
// and returns the record.
func (s *Service) landed(ctx context.Context, id, tag string) (*countersign.Confirmation, bool) {
	c, err := s.Store.GetConfirmation(ctx, id)
	if err != nil || c.WriteID != tag {
		return nil, false
	}
	return c, true
}

// create stores a new record; an answer lost after the record was stored
// counts as stored.
func (s *Service) create(ctx context.Context, c *countersign.Confirmation) error {
	c.WriteID = newWriteID()
	err := s.Store.CreateConfirmation(ctx, c)
	if err == nil {
		return nil
	}
	if stored, ok := s.landed(ctx, c.ID, c.WriteID); ok {
		s.logger().WarnContext(ctx, "confirmation stored, its answer lost", "confirmation", c.ID, "error", err)
		*c = *stored
		return nil
	}
	return err
}

// update is the read-modify-write loop: fn sees the current record and
// changes it, or returns an error to stop. A lost race re-reads and calls fn
// again, so fn always decides on the latest state. A write whose answer was
// lost but which was applied stands, and fn is not called again: its last
// call is the one written.
func (s *Service) update(ctx context.Context, id string, fn func(c *countersign.Confirmation, now time.Time) error) (*countersign.Confirmation, error) {
	return s.updateFrom(ctx, id, nil, fn)
}

// updateFrom is update whose first attempt starts from a copy of from (its
// operations and approvals copied too, which is all fn may change in
// place), the record as the caller just wrote or read it, rather than
// reading it again: a stale one loses the race on its version and the
// record is read again.
func (s *Service) updateFrom(ctx context.Context, id string, from *countersign.Confirmation, fn func(c *countersign.Confirmation, now time.Time) error) (*countersign.Confirmation, error) {
	tag := "" // the last write's, while its outcome is unknown
	for range maxCASAttempts {
		var c *countersign.Confirmation
		var err error
		if from != nil && from.ID == id {
			cp := *from
			cp.Operations = slices.Clone(from.Operations)
			cp.Approvals = slices.Clone(from.Approvals)
			c, from = &cp, nil
		} else if c, err = s.Get(ctx, id); err != nil {
			return nil, err
		}
		if tag != "" && c.WriteID == tag {
			s.logger().WarnContext(ctx, "confirmation updated, its answer lost", "confirmation", id)
			return c, nil
		}
		if err := fn(c, s.now()); err != nil {
			if errors.Is(err, errUnchanged) {
				return c, nil
			}
			return c, err
		}
		tag = newWriteID()
		c.WriteID = tag
		err = s.Store.UpdateConfirmation(ctx, c)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			if stored, ok := s.landed(ctx, id, tag); ok {
				s.logger().WarnContext(ctx, "confirmation updated, its answer lost", "confirmation", id, "error", err)
				return stored, nil
			}
			return nil, fmt.Errorf("update confirmation %s: %w", id, err)
		}
	}
	return nil, fmt.Errorf("update confirmation %s: too much contention", id)
}

// AttachToken stores the workflow's task token of a pending confirmation
// (the notify task), apart from the record: one write that the record's
// transitions never repeat, and none on a store that writes the token
// with the confirmation (taskTokenAlong) when it is there already. It
// returns the record so the caller can send the links. A record that is no longer pending is left alone; the caller
// should not notify, and ok is false. A later token (a retried task)
// replaces an earlier one.
func (s *Service) AttachToken(ctx context.Context, id, token string) (c *countersign.Confirmation, ok bool, err error) {
	c, err = s.Get(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("attach token: %w", err)
	}
	return s.AttachTokenTo(ctx, c, token)
}

// AttachTokenTo is AttachToken for the record c as the caller just read
// or wrote it (Observe's), which it does not read again.
func (s *Service) AttachTokenTo(ctx context.Context, c *countersign.Confirmation, token string) (_ *countersign.Confirmation, ok bool, err error) {
	id := c.ID
	if c.Status != countersign.StatusPending {
		return c, false, nil
	}
	if _, along := s.Store.(taskTokenAlong); along {
		// Written with the confirmation, most likely (a store that cannot
		// is not read first: DynamoDB's path is one write, as it was).
		if got, err := s.Store.TaskToken(ctx, id); err == nil && got == token {
			return c, true, nil
		}
	}
	if err := s.Store.PutTaskToken(ctx, id, token, c.TTL); err != nil {
		// The write may have landed with its answer lost (an SDK retry then
		// sees a conflict): the token read back tells.
		if got, rerr := s.Store.TaskToken(ctx, id); rerr != nil || got != token {
			return nil, false, fmt.Errorf("attach token: %w", err)
		}
	}
	return c, true, nil
}

// ErrNotReady is in the chain of Answer's error when the confirmation was
// only just created and its workflow has not yet handed over its task
// token: nobody can have been asked yet, and an answer a moment later
// succeeds (calls.Service.Answer waits for it).
var ErrNotReady = errors.New("the workflow has not handed over its task token yet")

// Answer is an approver's answer to a confirmation: approve (all of it,
// or the operations kept) or reject. The policy's decision on a call is
// policy.Decision; this is the person's. Every surface's answer becomes
// one (mcpapi.Answer, read from an MCP client, included); calls.Reply is
// something else: a response kept for an idempotent replay.
type Answer struct {
	Approve bool
	// Approver is the channel the answer came through: the approver whose
	// link was used (links.PrincipalApprover for the link given to the
	// person who made the call), "card", "client:<name>".
	Approver string
	// Person is who answered, signed in (approvers.sign_in), or the person
	// of the credential answering in its client; nil when the link was
	// used without sign-in: the record then names the channel. Its Email
	// is set only when the identity provider verified it.
	Person *countersign.Person
	// Groups are the identity provider's groups of Person (approvers
	// lists' "group:<name>").
	Groups []string
	// Credential is set when the answer is given in the client that made
	// the call (the card, its dialog, a run_script answer): the credential
	// of that call, whose person is the caller. Empty on the approval page.
	Credential string
	// Rules stand in for the rules of a record made before they were
	// recorded (Service.RulesInForce fills them when it is set).
	Rules *countersign.ApprovalRules
	// Required is the quorum the policy asks (approval.required): an
	// approval then counts toward it, and only the Required-th distinct
	// person's approves. 0 or 1: one approval decides. A quorum counts
	// only people (Person set).
	Required int
	// Reason is the approver's optional reason (shown to the agent).
	Reason string
	// Keep lists the indexes of the operations kept; nil with Approve keeps all.
	Keep []int
	// Remember, in minutes, also allows the credential's later calls of the
	// same endpoint for that long (approval.remember): calls.Service.Answer
	// checks it before the answer and creates the grant after the
	// approval; the lifecycle itself does not read it. 0: only this call.
	Remember int
	// Passkey is the passkey assertion an approval carries where the
	// rules ask for one (approval.passkey); Answer verifies it.
	Passkey *PasskeyProof

	// proved is set by Answer alone, once Passkey verified.
	proved bool
	// Edits are the approver's changes to the arguments as the surface
	// read them (approval.editable): calls.Service.Answer checks them,
	// decides the edited call again and binds it into Edited. The
	// lifecycle refuses Edits that were not so checked.
	Edits []EditRequest
	// Edited are the checked, bound edited operations: stored in the
	// write that records the approval, beside the agent's (edit.go).
	Edited []Edited
	// Read is the record as the surface read it for this answer (the
	// approval page's lookup), or nil. The answer starts from a copy of
	// it instead of reading the record again; a copy that is no longer
	// the stored record loses on its version, and the record is read
	// again (updateFrom). A record made before its rules were recorded,
	// read with the rules in force filled in (calls.Service.Lookup), is
	// written with them: the rules the answer was checked against.
	Read *countersign.Confirmation
}

// maxRequired is the largest quorum (approval.required).
const maxRequired = 5

// count adds d's approval to c's quorum. It reports counted when the
// approval leaves c pending (EventCountApproval), or false when it
// completes the quorum and the caller approves c (EventApprove). The same
// person (issuer and subject) twice counts once: their second approval is
// refused, and the record is left as it is. Operations an approver
// clears stay cleared: the quorum approves what every one of them kept.
func (s *Service) count(c *countersign.Confirmation, d Answer, now time.Time) (counted bool, err error) {
	if d.Person == nil {
		return false, fault.Errorf(fault.Forbidden, "confirmation %s needs approvals by people signed in", c.ID)
	}
	if c.Required < 2 { // a record made before the rules were recorded
		c.Required = min(max(d.Required, 2), maxRequired)
	}
	for _, a := range c.Approvals {
		if a.Issuer == d.Person.Issuer && a.Subject == d.Person.Subject {
			return false, fault.Errorf(fault.Forbidden, "%s already approved confirmation %s; it needs %d of %d approvals, from different people",
				d.Person.Label(), c.ID, c.Required, c.Required)
		}
	}
	if d.Keep != nil {
		keep := make(map[int]bool, len(d.Keep))
		for _, k := range d.Keep {
			if k < 0 || k >= len(c.Operations) {
				return false, fault.Errorf(fault.InvalidRequest, "operation %d is not part of confirmation %s", k, c.ID)
			}
			keep[k] = true
		}
		any := false
		for i := range c.Operations {
			c.Operations[i].Selected = c.Operations[i].Selected && keep[i]
			any = any || c.Operations[i].Selected
		}
		if !any {
			return false, fault.Errorf(fault.InvalidRequest, "nothing is left selected to approve in confirmation %s", c.ID)
		}
	}
	c.Approvals = append(c.Approvals, countersign.Approval{Person: *d.Person, Channel: d.Approver, At: now, Method: d.method()})
	if len(c.Approvals) < c.Required {
		t := On(c, EventCountApproval, now)
		if err := t.Err(c); err != nil {
			return false, err
		}
		c.Status = t.To
		return true, nil
	}
	return false, nil
}

// actor is who answered, as the audit trail names them: the person
// signed in, else the approver channel whose link was used.
func (d Answer) actor() string {
	if d.Person != nil && d.method() != "" {
		return "person:" + d.Person.Label() + " (" + d.method() + ")"
	}
	if d.Person != nil {
		return "person:" + d.Person.Label()
	}
	return "approver:" + d.Approver
}

// answerOutput is the task output sent with SendTaskSuccess.
type answerOutput struct {
	Approved bool `json:"approved"`
	Execute  bool `json:"execute"`
}

// RejectedError is the error name the state machines catch for a rejection.
const RejectedError = "Rejected"

// Answer records an approver's answer, exactly once: the first answer on
// a pending, unexpired record wins; every later one fails with
// confirmation_decided, and an answer after expiry with confirmation_expired.
// Only after the answer is stored is the workflow told; then the answer is
// recorded in the audit trail and announced to the approver channels.
func (s *Service) Answer(ctx context.Context, id string, d Answer) (*countersign.Confirmation, error) {
	token, err := s.Store.TaskToken(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("answer %s: %w", id, err)
	}
	ev := EventReject
	if d.Approve {
		ev = EventApprove
	}
	if d.Approve && d.Required > 1 && d.Person == nil {
		return nil, fault.Errorf(fault.Forbidden, "confirmation %s needs %d approvals by people signed in", id, d.Required)
	}
	d.proved = false // only a verified assertion proves it
	if d.Approve && d.Passkey != nil {
		if err := s.provePasskey(ctx, id, &d); err != nil {
			return nil, fmt.Errorf("answer %s: %w", id, err)
		}
	}
	counted := false // this approval was counted toward a quorum it does not complete
	cc := &callerCache{}
	// The decision's audit record is written with the decision where the
	// store can (one commit); else after the workflow is told, below.
	actx, along := s.along(ctx, func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		if counted {
			return recordOf(d.actor(), "confirmation.approval_counted", c, fmt.Sprintf("%d of %d approvals", len(c.Approvals), c.Required)), true
		}
		return recordOf(d.actor(), "confirmation."+string(c.Status), c, answerReason(c, d)), true
	})
	// Where the workflow can, its answer is written with the decision too;
	// send then acts on it (or sends it on its own).
	var decided *countersign.Confirmation // as this answer writes it
	var send func(ctx context.Context) error
	if aa, ok := s.Workflow.(alongAnswerer); ok && token != "" {
		actx, send = aa.AnswerAlong(actx, token, func() ([]byte, string, string, bool) {
			switch {
			case counted || decided == nil:
				return nil, "", "", false
			case d.Approve:
				out, err := json.Marshal(answerOutput{Approved: true, Execute: decided.GatewayExecutes()})
				return out, "", "", err == nil
			}
			return nil, RejectedError, "rejected by " + d.Approver, true
		})
	}
	c, err := s.updateFrom(actx, id, d.Read, func(c *countersign.Confirmation, now time.Time) error {
		counted, decided = false, nil
		t := On(c, ev, now)
		if err := t.Err(c); err != nil {
			return err
		}
		if err := s.mayAnswer(ctx, c, d, cc); err != nil {
			return err
		}
		keepOps := d.Keep
		if len(d.Edits) > 0 || len(d.Edited) > 0 {
			switch {
			case !d.Approve:
				return invalidEdit("edits go with approve, not reject")
			case d.Required > 1 || c.Required > 1:
				return invalidEdit("confirmation %s needs more than one approval (approval.required), and a quorum approves the call as it was made: it cannot be edited", c.ID)
			case NeedsPasskey(c, d.Rules):
				return invalidEdit("confirmation %s is approved with a passkey, which signs the call as it was made: it cannot be edited", c.ID)
			case len(d.Edited) == 0:
				return invalidEdit("the edits were not checked against the policy")
			}
		}
		if d.Approve && (d.Required > 1 || c.Required > 1) && c.Kind != countersign.KindReview && token != "" {
			var err error
			if counted, err = s.count(c, d, now); err != nil || counted {
				return err
			}
			keepOps = nil // count kept what every approver kept
		}
		if c.Kind == countersign.KindReview {
			return fault.Errorf(fault.ConfirmationPending, "%s is a review item: an operator runs or dismisses it", c.ID)
		}
		if token == "" {
			// The link is sent only after the token is stored; without one
			// nobody can have been asked yet.
			return &fault.Error{Code: fault.ConfirmationPending, Reason: fmt.Sprintf("confirmation %s is not ready for a decision", c.ID), Err: ErrNotReady}
		}
		at := now
		c.DecidedAt, c.DecidedBy, c.DecidedByPerson, c.DecisionReason = &at, d.Approver, d.Person, d.Reason
		c.DecidedMethod = d.method()
		c.Status = t.To
		decided = c // an error below stops the answer before any write
		if !d.Approve {
			for i := range c.Operations {
				c.Operations[i].Selected = false
			}
			return nil
		}
		if keepOps != nil {
			if len(keepOps) == 0 {
				return fault.Errorf(fault.InvalidRequest, "nothing was selected to approve in confirmation %s", c.ID)
			}
			keep := make(map[int]bool, len(keepOps))
			for _, k := range keepOps {
				if k < 0 || k >= len(c.Operations) {
					return fault.Errorf(fault.InvalidRequest, "operation %d is not part of confirmation %s", k, c.ID)
				}
				keep[k] = true
			}
			for i := range c.Operations {
				c.Operations[i].Selected = keep[i]
			}
		}
		if err := applyEdited(c, d.Edited); err != nil {
			return err
		}
		if !c.GatewayExecutes() {
			by := now.Add(s.timeouts().Redeem)
			c.RedeemBy = &by
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("answer %s: %w", id, err)
	}
	if counted {
		// Counted, not yet approved: the workflow is told only by the
		// approval that completes the quorum.
		s.logger().InfoContext(ctx, "approval counted", "confirmation", id, "approvals", len(c.Approvals), "required", c.Required)
		if !along.Done() {
			s.record(ctx, d.actor(), "confirmation.approval_counted", c, fmt.Sprintf("%d of %d approvals", len(c.Approvals), c.Required))
		}
		// Only the write that counted this approval gets here (a lost race
		// re-reads and counts again, or finds it counted): each approval is
		// announced once.
		s.emit(ctx, notify.Event{Type: notify.TypeApprovalCounted, Confirmation: notify.ConfirmationOf(c), Status: string(c.Status)})
		return c, nil
	}
	if send != nil {
		err = send(ctx)
	} else if d.Approve {
		out, _ := json.Marshal(answerOutput{Approved: true, Execute: c.GatewayExecutes()})
		err = s.Workflow.SendTaskSuccess(ctx, token, out)
	} else {
		err = s.Workflow.SendTaskFailure(ctx, token, RejectedError, "rejected by "+d.Approver)
	}
	if err != nil {
		// The decision is stored and stands; the workflow either already
		// ended or will time out and find nothing pending to finalize.
		s.logger().WarnContext(ctx, "workflow not told of decision", "confirmation", id, "error", err)
	}
	s.logger().InfoContext(ctx, "confirmation answered", "confirmation", id, "approved", d.Approve, "approver", d.Approver)
	if !along.Done() {
		s.record(ctx, d.actor(), "confirmation."+string(c.Status), c, answerReason(c, d))
	}
	s.emit(ctx, notify.Event{Type: notify.TypeDecided, Confirmation: notify.ConfirmationOf(c), Decision: string(c.Status), Status: string(c.Status)})
	return c, nil
}

// answerReason is the reason an answer's audit record gives: the
// approver's, after a summary of their edits.
func answerReason(c *countersign.Confirmation, d Answer) string {
	reason := d.Reason
	if sum := EditSummary(c); sum != "" && d.Approve {
		reason = strings.TrimSpace(sum + "; " + reason)
		reason = strings.TrimSuffix(reason, ";")
	}
	return reason
}

// Finalize records the end of a wait the workflow observed: expired when its
// timer fired, rejected after a rejection, failed when the workflow broke.
// It moves a pending record; a decided record keeps its decision, with one
// exception: failed also ends an approval the gateway was to run itself
// (GatewayExecutes) when the workflow failed before running any of it, as
// nobody else will run it, so it must not read approved for good (nothing
// of it ran; the decision stays recorded). It is idempotent, as Step
// Functions may run the task more than once.
//
// Every change it makes is recorded in the audit trail, and an expiry is
// announced to the approver channels.
func (s *Service) Finalize(ctx context.Context, id string, to countersign.Status) (*countersign.Confirmation, error) {
	ev, ok := finalizeEvents[to]
	if !ok {
		return nil, fmt.Errorf("finalize %s: cannot finalize as %q", id, to)
	}
	changed := false
	c, err := s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		changed = false
		// The stored status: the workflow's timer is what makes it expire.
		t := Next(c.Status, ev)
		if !t.Allowed() || t.To == c.Status {
			return errUnchanged
		}
		if c.Status == countersign.StatusApproved && !c.GatewayExecutes() {
			// The agent redeems it: its approval keeps its window.
			return errUnchanged
		}
		// Approved, not claimed (claiming makes it redeemed): an executor
		// that starts now finds it failed and runs nothing.
		c.Status, changed = t.To, true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finalize %s: %w", id, err)
	}
	if changed {
		telemetry.Finalized(ctx, string(c.Kind), string(c.Status))
		s.record(ctx, "system", "confirmation."+string(c.Status), c, "")
		if c.Status == countersign.StatusExpired {
			s.emitWait(ctx, notify.Event{Type: notify.TypeExpired, Confirmation: notify.ConfirmationOf(c), Status: string(c.Status)})
		}
	}
	return c, nil
}

// finalizeEvents are the events the workflow reports, by the status it asks for.
var finalizeEvents = map[countersign.Status]Event{
	countersign.StatusExpired:  EventTimeOut,
	countersign.StatusRejected: EventWorkflowRejected,
	countersign.StatusFailed:   EventWorkflowFailed,
}

// Redeem consumes an approved call for the agent that asked for it: the
// binding (credential, operation, exact arguments) must match, the approval
// must be unused and within its window. On success the operation is claimed
// (state claimed, record redeemed) in the same conditional write, so of any
// number of concurrent redemptions exactly one may call the upstream.
func (s *Service) Redeem(ctx context.Context, id, credential, binding string) (*countersign.Confirmation, int, error) {
	return s.RedeemAs(ctx, id, credential, func(*countersign.Operation) (string, error) { return binding, nil })
}

// RedeemAs is Redeem for a call whose binding depends on the approved
// operation: bind returns the redeeming call's binding given the approved
// operation, e.g. with the approved request's forwarded headers in place of
// the redeeming request's (which are ignored: the approved ones are
// replayed).
func (s *Service) RedeemAs(ctx context.Context, id, credential string, bind func(approved *countersign.Operation) (string, error)) (*countersign.Confirmation, int, error) {
	index := -1
	c, err := s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		if c.Kind != countersign.KindCall || len(c.Operations) != 1 {
			return fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is not a single call", c.ID)
		}
		binding, err := bind(&c.Operations[0])
		if err != nil {
			return err
		}
		// An approver's edit leaves the agent's binding to match: the
		// agent redeems the call it made, and the edited one runs (Runs).
		if c.Credential != credential || c.Operations[0].Binding != binding {
			return fault.Errorf(fault.ConfirmationMismatch, "confirmation %s was approved for another call: the credential, method, path, query and body must be the same", c.ID)
		}
		t := On(c, EventRedeem, now)
		if err := t.Err(c); err != nil {
			return err
		}
		at := now
		c.Status, c.RedeemedAt = t.To, &at
		c.Operations[0].State = countersign.OpClaimed
		index = 0
		return nil
	})
	if err != nil {
		return c, -1, fmt.Errorf("redeem %s: %w", id, err)
	}
	return c, index, nil
}

// outcomeBudget bounds the outcome bodies one record keeps, shared by its
// operations (at least minOutcomeBody each): the whole answer went to
// whoever ran it, and the record must fit a store item.
const (
	outcomeBudget  = 64 << 10
	minOutcomeBody = 1 << 10
)

// Complete stores the outcome of a claimed operation and derives the
// record's final status once every selected operation is done; a script
// batch's status is final only when its script ends (FinishScript). A large
// body is kept truncated (countersign.Outcome.Bounded), so no write fails for size.
func (s *Service) Complete(ctx context.Context, id string, index int, out countersign.Outcome) (*countersign.Confirmation, error) {
	c, _, err := s.complete(ctx, id, index, out)
	return c, err
}

// complete is Complete; ended reports whether this write gave the record
// its final status.
func (s *Service) complete(ctx context.Context, id string, index int, out countersign.Outcome) (c *countersign.Confirmation, ended bool, err error) {
	return s.completeFrom(ctx, id, nil, index, out)
}

// completeFrom is complete starting from claimed, the record as the claim
// wrote it (updateFrom).
func (s *Service) completeFrom(ctx context.Context, id string, claimed *countersign.Confirmation, index int, out countersign.Outcome) (c *countersign.Confirmation, ended bool, err error) {
	c, err = s.updateFrom(ctx, id, claimed, func(c *countersign.Confirmation, now time.Time) error {
		ended = false
		if index < 0 || index >= len(c.Operations) {
			return fmt.Errorf("no operation %d", index)
		}
		op := &c.Operations[index]
		if op.State == countersign.OpDone {
			return errUnchanged
		}
		bounded := out.Bounded(max(minOutcomeBody, outcomeBudget/len(c.Operations)))
		op.State, op.Outcome = countersign.OpDone, &bounded
		if c.Kind != countersign.KindScript && Next(c.Status, EventFinish).ByOutcomes {
			before := c.Status
			c.Status = finalStatus(c)
			ended = c.Status != before
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("complete %s operation %d: %w", id, index, err)
	}
	return c, ended, nil
}

// finalStatus is the status of a record whose operations are being executed.
func finalStatus(c *countersign.Confirmation) countersign.Status {
	ran, failed, waiting := 0, 0, 0
	for _, op := range c.Operations {
		if !op.Selected {
			continue
		}
		switch {
		case op.State != countersign.OpDone:
			waiting++
		case op.Outcome != nil && op.Outcome.Error != "":
			failed++
		default:
			ran++
		}
	}
	switch {
	case waiting > 0:
		return c.Status
	case failed == 0:
		return countersign.StatusExecuted
	case ran == 0:
		return countersign.StatusFailed
	default:
		return countersign.StatusPartiallyExecuted
	}
}

// IdempotencyKey is the key sent upstream for operation index of a confirmation.
func IdempotencyKey(id string, index int) string { return fmt.Sprintf("%s:%d", id, index) }

// Runner calls the upstream for one operation; the key goes in Idempotency-Key.
type Runner func(ctx context.Context, op countersign.Operation, idempotencyKey string) countersign.Outcome

// RunClaimed runs operation index of c, which the caller has claimed with
// a conditional write (Redeem, ExecuteApproved), and stores its outcome.
// The outcome is stored on a context that outlives a cancelled request:
// the call was made, so it must be recorded.
func (s *Service) RunClaimed(ctx context.Context, c *countersign.Confirmation, index int, run Runner) (*countersign.Confirmation, error) {
	c, _, err := s.runClaimed(ctx, c, index, run)
	return c, err
}

// runClaimed is RunClaimed; ended reports whether its outcome gave the
// record its final status.
func (s *Service) runClaimed(ctx context.Context, c *countersign.Confirmation, index int, run Runner) (*countersign.Confirmation, bool, error) {
	if index < 0 || index >= len(c.Operations) || c.Operations[index].State != countersign.OpClaimed {
		return c, false, fmt.Errorf("run %s operation %d: not claimed", c.ID, index)
	}
	// The recheck is here, between the claim and the write, so that every
	// path that runs an approved operation makes it.
	out, ok := s.recheck(ctx, c.Operations[index])
	if ok {
		// What runs is the edited call when an approver edited it.
		out = run(ctx, c.Operations[index].Runs(), IdempotencyKey(c.ID, index))
	} else {
		s.logger().InfoContext(ctx, "recheck stopped the write", "confirmation", c.ID, "operation", index, "outcome", out.Error)
	}
	return s.completeFrom(context.WithoutCancel(ctx), c.ID, c, index, out)
}

// ExecuteApproved runs the selected operations of an approved record the
// gateway executes (batches, the card), each exactly once: an operation is
// claimed by a conditional write before its upstream call and its outcome
// stored after. A retry (a Lambda retry, a duplicate click) skips operations
// that are claimed or done, so it replays stored outcomes and never calls twice.
func (s *Service) ExecuteApproved(ctx context.Context, id string, run Runner) (*countersign.Confirmation, error) {
	c, _, err := s.executeApproved(ctx, id, run)
	return c, err
}

// executeApproved is ExecuteApproved; ended reports whether this run gave
// the record its final status (of concurrent runs, exactly one does).
func (s *Service) executeApproved(ctx context.Context, id string, run Runner) (c *countersign.Confirmation, ended bool, err error) {
	c, err = s.Get(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if err := On(c, EventExecute, s.now()).Err(c); err != nil {
		return c, false, err
	}
	for i := range c.Operations {
		claimed := false
		c, err = s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
			// A lost race calls fn again: only the attempt that is written counts.
			claimed = false
			t := Next(c.Status, EventClaim)
			if !t.Allowed() {
				return errUnchanged
			}
			op := &c.Operations[i]
			if !op.Selected || op.State != countersign.OpWaiting {
				return errUnchanged
			}
			op.State, claimed = countersign.OpClaimed, true
			c.Status = t.To
			return nil
		})
		if err != nil {
			return c, ended, fmt.Errorf("execute %s: %w", id, err)
		}
		if !claimed {
			continue
		}
		var last bool
		if c, last, err = s.runClaimed(ctx, c, i, run); err != nil {
			return c, ended, err
		}
		ended = ended || last
	}
	// Nothing selected ran: the record still needs a final status.
	final := false
	c, err = s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		final = false
		if !Next(c.Status, EventFinish).ByOutcomes {
			return errUnchanged
		}
		next := finalStatus(c)
		if next == c.Status {
			return errUnchanged
		}
		c.Status, final = next, true
		return nil
	})
	return c, ended || final, err
}

// GrantRequest is a person's answer given in the client itself (an MCP
// input request), to be recorded as a confirmation.
type GrantRequest struct {
	// ID is the record's id, chosen when the person was asked and carried
	// in the signed request state, so a second use of the same state
	// collides with the first.
	ID         string
	Kind       countersign.Kind
	Credential string
	Reason     string
	// Operations are the bound operations the person was asked about;
	// Selected says which the person approved.
	Operations []countersign.Operation
	// Approve is the answer: false rejects every operation.
	Approve bool
	// By names who answered, e.g. "client:Claude Code".
	By string
	// Person is who answered when the credential is a person's (a user
	// signed in to the client); nil for a key.
	Person *countersign.Person
	// ExpiresAt is when the question expired; the record is kept past it.
	ExpiresAt time.Time
	// Required, SeparateApprover and Rules are the approval rules in force
	// for the operations: a call they leave to its approvers (OutOfBand)
	// is never answered in the client, and the answer is refused.
	Required         int
	SeparateApprover bool
	Rules            *countersign.ApprovalRules
}

// Grant records an answer given in the client, once: a single conditional
// create, so of any number of uses of the same question exactly one
// succeeds and the others fail with confirmation_used. An approval is
// stored redeemed with its selected operations claimed, ready for
// RunClaimed, which runs each once; a rejection is stored rejected and
// nothing runs. No workflow starts: nobody else is asked. A question past
// its expiry is confirmation_expired.
func (s *Service) Grant(ctx context.Context, r GrantRequest) (*countersign.Confirmation, error) {
	now := s.now()
	if len(r.Operations) == 0 || r.ID == "" {
		return nil, errors.New("grant: no id or no operations")
	}
	if !now.Before(r.ExpiresAt) {
		return nil, fault.Errorf(fault.ConfirmationExpired, "the question for %s expired at %s; nothing ran", r.ID, r.ExpiresAt.Format(time.RFC3339))
	}
	kind := r.Kind
	if kind == "" {
		kind = countersign.KindCall
	}
	c := &countersign.Confirmation{
		ID: r.ID, Kind: kind, Credential: r.Credential, Reason: r.Reason,
		CreatedAt: now, ExpiresAt: r.ExpiresAt, DecidedAt: &now, DecidedBy: r.By, DecidedByPerson: r.Person,
		Operations: append([]countersign.Operation(nil), r.Operations...),
		TTL:        r.ExpiresAt.Add(s.timeouts().Redeem + retention).Unix(),
		Required:   max(r.Required, 1), SeparateApprover: r.SeparateApprover, Rules: r.Rules,
	}
	if err := s.mayAnswer(ctx, c, Answer{Approve: r.Approve, Approver: r.By, Person: r.Person, Credential: r.Credential}, &callerCache{}); err != nil {
		return nil, err
	}
	claimed := 0
	for i := range c.Operations {
		op := &c.Operations[i]
		op.State, op.Outcome = countersign.OpWaiting, nil
		switch {
		case !r.Approve:
			op.Selected = false
		case op.Selected:
			op.State = countersign.OpClaimed
			claimed++
		}
	}
	switch {
	case !r.Approve:
		c.Status = countersign.StatusRejected
	case claimed == 0:
		return nil, fault.Errorf(fault.InvalidRequest, "nothing was selected to approve in %s", r.ID)
	default:
		c.Status, c.RedeemedAt = countersign.StatusRedeemed, &now
	}
	err := s.create(ctx, c)
	if errors.Is(err, store.ErrConflict) {
		return nil, fault.Errorf(fault.ConfirmationUsed, "the answer to %s was already used; nothing ran again", r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("grant %s: %w", r.ID, err)
	}
	s.logger().InfoContext(ctx, "confirmation answered in the client", "confirmation", c.ID, "credential", r.Credential,
		"approved", r.Approve, "by", r.By, "operations", len(c.Operations))
	return c, nil
}

// ClaimOne claims operation index of an approved record the gateway
// executes itself, with a conditional write, so that of any number of
// attempts exactly one runs it: a script batch's run after approval runs
// its operations one at a time, in the order the script reaches them.
// claimed is false when the operation was claimed before: its State tells
// whether its outcome is stored (done) or unknown (claimed by an attempt
// that stopped before storing it). An operation the approver cleared is
// confirmation_rejected; a record already finished is confirmation_used.
func (s *Service) ClaimOne(ctx context.Context, id string, index int) (c *countersign.Confirmation, claimed bool, err error) {
	c, err = s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		claimed = false
		if !c.GatewayExecutes() {
			return fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is redeemed by the agent, not run by the gateway", c.ID)
		}
		if index < 0 || index >= len(c.Operations) {
			return fault.Errorf(fault.ConfirmationMismatch, "operation %d is not part of confirmation %s", index, c.ID)
		}
		op := &c.Operations[index]
		t := On(c, EventClaim, now)
		if t.Refused == fault.ConfirmationUsed && op.State != countersign.OpWaiting {
			// Run to its end: the stored outcome answers.
			return errUnchanged
		}
		if err := t.Err(c); err != nil {
			return err
		}
		if !op.Selected {
			return fault.Errorf(fault.ConfirmationRejected, "operation %d of confirmation %s was cleared by the approver", index, c.ID)
		}
		if op.State != countersign.OpWaiting {
			return errUnchanged
		}
		op.State, claimed = countersign.OpClaimed, true
		c.Status = t.To
		return nil
	})
	if err != nil {
		return c, false, fmt.Errorf("claim %s operation %d: %w", id, index, err)
	}
	return c, claimed, nil
}

// FinishScript records the end of a script batch's run after approval:
// the script's result (nil when the script failed) and the final status,
// from the selected operations: executed when every one ran without an
// upstream error, failed when none did, partially_executed otherwise. An
// operation the script never reached stays waiting and never runs. It is
// idempotent: a record already finished is returned unchanged.
func (s *Service) FinishScript(ctx context.Context, id string, result json.RawMessage, failed bool) (*countersign.Confirmation, error) {
	c, _, err := s.finishScript(ctx, id, result, failed)
	return c, err
}

// finishScript is FinishScript; ended reports whether this call recorded
// the end (of concurrent calls, exactly one does).
func (s *Service) finishScript(ctx context.Context, id string, result json.RawMessage, failed bool) (c *countersign.Confirmation, ended bool, err error) {
	c, err = s.update(ctx, id, func(c *countersign.Confirmation, now time.Time) error {
		ended = false
		if c.Kind != countersign.KindScript {
			return fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is not a script batch", c.ID)
		}
		t := Next(c.Status, EventFinish)
		if err := t.Err(c); err != nil {
			return err
		}
		if !t.ByOutcomes {
			return errUnchanged
		}
		ran, missed := 0, 0
		for _, op := range c.Operations {
			switch {
			case !op.Selected:
			case op.State == countersign.OpDone && op.Outcome != nil && op.Outcome.Error == "":
				ran++
			default:
				missed++
			}
		}
		switch {
		case ran == 0 && (failed || missed > 0):
			c.Status = countersign.StatusFailed
		case missed == 0 && !failed:
			c.Status = countersign.StatusExecuted
		default:
			c.Status = countersign.StatusPartiallyExecuted
		}
		c.Result, ended = result, true
		return nil
	})
	if err != nil {
		return c, false, fmt.Errorf("finish script %s: %w", id, err)
	}
	return c, ended, nil
}
