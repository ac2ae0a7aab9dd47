package script

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/script/journal"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/views"
)

// Store keeps scripts' journals (store/embedded and store/dynamostore).
type Store interface {
	CreateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error)
	UpdateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	PutScriptCall(ctx context.Context, c *countersign.ScriptCall) error
	ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error)
	PutScriptPart(ctx context.Context, p *countersign.ScriptPart) error
	ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error)
}

// Pipeline is the call pipeline as code mode uses it (calls.Service).
type Pipeline interface {
	// Current is the configuration in force: each run takes its limits
	// (settings.json scripts) from it when it starts, and each call reads
	// its connection's controls (approval.out_of_band_only) from it.
	Current() *config.Config
	// Do decides and runs one call(); Bind binds one without deciding it.
	Do(ctx context.Context, cred *countersign.Credential, c *calls.Call, o calls.Options) (*calls.Result, error)
	Bind(cred *countersign.Credential, c *calls.Call) (countersign.Operation, error)
	// Reserve counts a batch against the credential's pending confirmations.
	Reserve(ctx context.Context, cred *countersign.Credential, kind countersign.Kind) error
	// NewConfirmationID, CreateBatch and EndScript make a batch and end it.
	NewConfirmationID() string
	CreateBatch(ctx context.Context, r confirm.Request) (*countersign.Confirmation, error)
	EndScript(ctx context.Context, id string, result json.RawMessage, failure *countersign.ScriptError) (*countersign.Confirmation, error)
	// Confirmation reads a batch for its credential; Lookup for the workflow.
	Confirmation(ctx context.Context, cred *countersign.Credential, id string, o calls.WaitOptions) (calls.Status, error)
	Lookup(ctx context.Context, id string) (*countersign.Confirmation, error)
	// ExecuteOne runs one approved operation of a batch, once.
	ExecuteOne(ctx context.Context, id string, index int) (countersign.Outcome, bool, error)
}

var _ Pipeline = (*calls.Service)(nil)

// Service runs scripts. Calls and Store are required.
type Service struct {
	// Calls is the call pipeline every call() goes through.
	Calls Pipeline
	// Store keeps the journals.
	Store Store
	// Lease is how long a run after approval holds a journal before
	// another run may take it over (the first one died); 0 means the time
	// limit plus a minute.
	Lease time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per run; nil discards.
	Logger *slog.Logger

	sandboxes warm
}

// programs is the process's compiled programs: a goja.Program is immutable
// and runs in any runtime, so every Service shares them (the first run in
// the gateway and the run after approval in the same process compile once).
var programs programCache

// Request is a script to run: without ConfirmationID it runs; with the id
// of its batch it returns what became of it and runs nothing.
type Request struct {
	Source         string
	ConfirmationID string
	// CannotAsk, when set, says why the surface can ask nobody about a
	// call (an MCP client that shows neither a confirmation dialog nor a
	// card): a call that needs confirmation is then denied to the script
	// (requires_confirmation, with this reason) instead of collected, so
	// nothing is left pending. A call on a connection whose approvals come
	// only from its approvers (approval.out_of_band_only) is still
	// collected: its approvers are asked whatever the surface.
	CannotAsk string
	// Client is what the calling client said of itself, if anything: a
	// batch the run creates records it as its asker.
	Client *calls.Client
}

// Status is how a run ended (views.ScriptOutcome).
type Status = views.ScriptOutcome

// Statuses of a Result.
const (
	// Completed: the script ran to its end with nothing to confirm, or its
	// run after approval ended (a resubmission).
	Completed = views.ScriptDone
	// ConfirmationRequired: calls were collected into a batch confirmation.
	ConfirmationRequired = views.ScriptConfirmationRequired
)

// CallState is what became of a call() in a run (views.ShownCallState).
type CallState = views.ShownCallState

// Call states (docs/scripts.md, and denied).
const (
	StateRan      = views.ShownRan
	StateReplayed = views.ShownReplayed
	StatePending  = views.ShownPending
	StateRejected = views.ShownRejected
	StateDenied   = views.ShownDenied
)

// Call is one call() of a run, as the agent is shown it (views.ShownCall).
type Call = views.ShownCall

// Result is a run that ended without failing: views.ScriptResult,
// code mode's one result type, which the surfaces use without linking the
// JavaScript engine.
type Result = views.ScriptResult

// Error is a script that failed (views.ScriptFailure): why, and what
// it did first. Nothing it collected is pending.
type Error = views.ScriptFailure

const (
	// journalRetention outlives any batch: 30 minutes to decide, then the
	// confirmation's own retention.
	journalRetention = 48 * time.Hour
	// maxBatchArgs bounds the arguments of a batch's operations, so that
	// the confirmation fits a DynamoDB item.
	maxBatchArgs = 300_000
)

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

// limits are the limits in force (zero fields: DefaultLimits).
func (s *Service) limits() Limits { return LimitsOf(s.Calls.Current().Settings.Scripts).orDefault() }

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return s.limits().Time + time.Minute
}

// Run runs a script for cred, or, with a confirmation id, returns what
// became of the script of that batch and runs nothing. Failures of the
// script are *Error; anything else carries a fault code (invalid_request,
// unknown_confirmation, confirmation_mismatch, confirmation_pending,
// confirmation_rejected, confirmation_expired, internal).
func (s *Service) Run(ctx context.Context, cred *countersign.Credential, r Request) (*Result, error) {
	limits := s.limits()
	switch {
	case strings.TrimSpace(r.Source) == "":
		return nil, fault.New(fault.InvalidRequest, "script is required")
	case len(r.Source) > limits.ScriptBytes:
		return nil, fault.Errorf(fault.InvalidRequest, "the script is %d bytes; the limit is %d (scripts.max_script_bytes)", len(r.Source), limits.ScriptBytes)
	}
	if r.ConfirmationID != "" {
		return s.resume(ctx, cred, r)
	}
	return s.first(ctx, cred, r, limits)
}

// first is a script's first run: calls are decided; those that need
// confirmation are collected into one batch.
func (s *Service) first(ctx context.Context, cred *countersign.Credential, r Request, limits Limits) (*Result, error) {
	src := r.Source
	prg, f := programs.compile(src)
	if f != nil {
		return nil, s.failed(ctx, cred.ID, "", f, nil, nil)
	}
	seed, start := rand.Uint64(), s.now()
	fr := &firstRun{cannotAsk: r.CannotAsk}
	x, err := s.execution(ctx, limits, seed, start, func(c *calls.Call, pos int) (*entry, *failure) {
		return s.decide(ctx, cred, c, pos, fr)
	})
	if err != nil {
		return nil, fault.Wrap(err, "the script could not be started")
	}
	value, f := x.execute(prg)
	s.sandboxes.refill(limits)
	entries, logs := x.calls(), x.lines()
	if f != nil {
		return nil, s.failed(ctx, cred.ID, "", f, entries, logs)
	}
	batch := fr.batch
	if len(batch) == 0 {
		s.logger().InfoContext(ctx, "script", "credential", cred.ID, "outcome", "completed", "calls", len(entries), "unasked", fr.unasked)
		return &Result{Status: Completed, Value: value, Calls: shown(entries), Logs: logs, Unasked: fr.unasked}, nil
	}
	conf, err := s.pause(ctx, cred, r.Client.Asker(), src, seed, start, entries, batch, logs)
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, err
	}
	s.logger().InfoContext(ctx, "script", "credential", cred.ID, "outcome", "confirmation_required", "calls", len(entries),
		"collected", len(batch), "confirmation", conf.ID)
	return &Result{Status: ConfirmationRequired, Calls: shown(entries), Logs: logs, Confirmation: conf, Effective: conf.Status, Unasked: fr.unasked}, nil
}

// execution prepares a run: a sandbox with the run's seed and clock.
func (s *Service) execution(ctx context.Context, limits Limits, seed uint64, start time.Time, act func(*calls.Call, int) (*entry, *failure)) (*execution, error) {
	sb, err := s.sandboxes.take(limits)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	sb.start(seed, func() time.Time { return start.Add(time.Since(began)) })
	return newExecution(ctx, sb, limits, act), nil
}

// failed turns a failure into the error Run returns, logging it.
func (s *Service) failed(ctx context.Context, credential, confirmation string, f *failure, entries []*entry, logs []string) error {
	s.logger().InfoContext(ctx, "script", "credential", credential, "confirmation", confirmation, "outcome", "failed",
		"code", string(f.code), "reason", f.reason, "line", f.line, "error", f.err)
	if f.code == fault.Internal {
		if f.err == nil {
			f.err = errors.New(f.reason)
		}
		return fault.Wrap(f.err, f.reason)
	}
	return &Error{Code: f.code, Reason: f.text(), Line: f.line, Column: f.column, Calls: shown(entries), Logs: logs}
}

// collected is a call collected into the batch.
type collected struct {
	index  int
	op     countersign.Operation
	reason string
}

// firstRun is what a first run gathers beside its journal.
type firstRun struct {
	// cannotAsk is Request.CannotAsk.
	cannotAsk string
	// batch are the collected calls.
	batch []*collected
	// unasked counts the calls denied because nobody could be asked.
	unasked int
}

// decide is call() in a first run: the pipeline decides, and a call that
// needs confirmation is collected instead of paused (or denied, when the
// surface can ask nobody about it).
func (s *Service) decide(ctx context.Context, cred *countersign.Credential, c *calls.Call, pos int, fr *firstRun) (*entry, *failure) {
	// The binding is computed only if the journal is stored (pause): a
	// script that collects nothing hashes nothing.
	e := &entry{index: pos, call: Call{Connection: c.Connection, Method: c.Method, Path: c.Path}, req: c}
	o := calls.Options{Pause: calls.PauseCollect}
	if fr.cannotAsk != "" && !s.outOfBandOnly(c.Connection, c.Method, c.Path) {
		o = calls.Options{Pause: calls.PauseRefuse, RefuseReason: fr.cannotAsk}
	}
	// A call on its way upstream finishes even if the run is stopped.
	res, err := s.Calls.Do(context.WithoutCancel(ctx), cred, c, o)
	if err != nil {
		if fault.CodeOf(err) == fault.Internal {
			return nil, internalFailure(err, "a call could not be made: the gateway could not read or write its records")
		}
		e.set(countersign.ScriptCallRan, StateRan, errorValue(err))
		return e, nil
	}
	switch res.Outcome {
	case calls.Executed:
		e.set(countersign.ScriptCallRan, StateRan, ranValue(outcomeOf(res.Response), res.Notice, res.Decision.Reason))
	case calls.Collected:
		e.binding = res.Operation.Binding
		k := len(fr.batch)
		fr.batch = append(fr.batch, &collected{index: k, op: res.Operation, reason: res.Decision.Reason})
		e.op = fr.batch[k]
		e.call.Operation = &k
		e.set(countersign.ScriptCallPending, StatePending, pendingValue)
	default:
		if o.Pause == calls.PauseRefuse && res.Decision.Outcome == policy.Pause {
			fr.unasked++
		}
		e.set(countersign.ScriptCallDenied, StateDenied, deniedValue(res.Code, res.Reason))
	}
	return e, nil
}

// outOfBandOnly reports a call whose approvals come only from its
// approvers (its endpoint's approval rules, else its connection's).
func (s *Service) outOfBandOnly(connection, method, path string) bool {
	return s.Calls.Current().Policy.RulesOf(connection, method, path).OutOfBandOnly
}

// pause stores the journal and creates the batch confirmation; the
// workflow notifies the approvers.
func (s *Service) pause(ctx context.Context, cred *countersign.Credential, asker *countersign.Asker, src string, seed uint64, start time.Time,
	entries []*entry, batch []*collected, logs []string) (*countersign.Confirmation, error) {
	ops := make([]countersign.Operation, len(batch))
	size := 0
	for i, b := range batch {
		ops[i] = b.op
		size += len(b.op.Args.Body) + len(b.op.Path) + len(b.op.Payload) + 200
	}
	if size > maxBatchArgs {
		return nil, &Error{Code: fault.ScriptLimit, Calls: shown(entries), Logs: logs,
			Reason: fmt.Sprintf("the %d calls that need confirmation carry %d bytes of arguments; one confirmation holds at most %d", len(batch), size, maxBatchArgs)}
	}
	// The batch counts against the credential's pending confirmations,
	// as every confirmation does.
	if err := s.Calls.Reserve(ctx, cred, countersign.KindScript); err != nil {
		return nil, err
	}
	id := s.Calls.NewConfirmationID()
	now := s.now()
	ttl := now.Add(journalRetention).Unix()
	for _, e := range entries {
		if e.binding == "" {
			op, err := s.Calls.Bind(cred, e.req)
			if err != nil {
				return nil, fault.Wrap(err, "a call of the script could not be bound")
			}
			e.binding = op.Binding
		}
		if err := s.saveCall(ctx, id, ttl, e); err != nil {
			return nil, fault.Wrap(err, "the script's journal could not be stored")
		}
	}
	snapshot := *cred
	snapshot.KeyHash, snapshot.LastClient = "", nil
	run := &countersign.ScriptRun{ID: id, Credential: snapshot, Source: src, SourceHash: sourceHash(src), Seed: int64(seed), StartedAt: start,
		Status: countersign.ScriptPending, Logs: logs, Reached: len(entries), CreatedAt: now, TTL: ttl}
	if err := s.Store.CreateScriptRun(ctx, run); err != nil {
		return nil, fault.Wrap(err, "the script's journal could not be stored")
	}
	reason := batch[0].reason
	if len(batch) > 1 {
		reason = fmt.Sprintf("a script made %d calls that require confirmation", len(batch))
	}
	// The batch is decided as its strictest operation asks: the largest
	// quorum, four eyes if any keeps them.
	var rules policy.Rules
	set := s.Calls.Current().Policy
	for _, op := range ops {
		rules = rules.Strictest(set.RulesOf(op.Connection, op.Method, op.Path))
	}
	conf, err := s.Calls.CreateBatch(ctx, confirm.Request{ID: id, Credential: cred.ID, Reason: reason, Asker: asker, Operations: ops,
		Required: rules.Required, SeparateApprover: rules.SeparateApprover})
	if err != nil {
		return nil, fault.Wrap(err, "the confirmation could not be created")
	}
	return conf, nil
}

// resume answers a resubmission: the batch's state, and the outcome of its
// run after approval once it ended. It runs nothing.
func (s *Service) resume(ctx context.Context, cred *countersign.Credential, r Request) (*Result, error) {
	st, err := s.Calls.Confirmation(ctx, cred, r.ConfirmationID, calls.WaitOptions{})
	if err != nil {
		return nil, err
	}
	conf := st.Confirmation
	if conf.Kind != countersign.KindScript {
		return nil, fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is not a script's", conf.ID)
	}
	run, err := s.Store.GetScriptRun(ctx, conf.ID)
	if err != nil {
		return nil, fault.Wrap(err, "the script's journal could not be read")
	}
	if run.SourceHash != sourceHash(r.Source) {
		return nil, fault.Errorf(fault.ConfirmationMismatch, "confirmation %s was made for another script: submit the same script to read its outcome", conf.ID)
	}
	out, err := s.outcome(ctx, run)
	if err != nil {
		return nil, err
	}
	switch run.Status {
	case countersign.ScriptCompleted:
		return &Result{Status: Completed, Value: out.Value, Calls: out.Calls, Logs: out.Logs, Confirmation: conf, Effective: st.Effective}, nil
	case countersign.ScriptFailed:
		e := run.Error
		return nil, &Error{Code: fault.Code(e.Code), Reason: e.Reason, Line: e.Line, Column: e.Column, Calls: out.Calls, Logs: out.Logs}
	}
	if st.Effective == countersign.StatusPending {
		return &Result{Status: ConfirmationRequired, Calls: out.Calls, Logs: out.Logs, Confirmation: conf, Effective: st.Effective}, nil
	}
	// Rejected or expired: none of its calls ran, and none will.
	if err := confirm.Next(st.Effective, confirm.EventExecute).Err(conf); err != nil {
		return nil, err
	}
	return nil, &fault.Error{Code: fault.ConfirmationPending, RetryAfter: 1,
		Reason: fmt.Sprintf("confirmation %s was approved and the gateway is running the script again: ask again in a moment", conf.ID)}
}

// Outcome is a script batch's script as its owner reads it: Status
// ScriptDone and Value once its run after approval completed, Error once
// it failed, and the calls and logs of its last run that ended (the first
// run's until then).
type Outcome = views.ScriptResult

// Describe returns the script of a script batch, for its status.
func (s *Service) Describe(ctx context.Context, conf *countersign.Confirmation) (*Outcome, error) {
	return s.journal().Describe(ctx, conf)
}

func (s *Service) outcome(ctx context.Context, run *countersign.ScriptRun) (*Outcome, error) {
	return s.journal().Outcome(ctx, run)
}

// journal reads the journals s writes.
func (s *Service) journal() journal.Reader { return journal.Reader{Store: s.Store} }

func sourceHash(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:])
}

// Rerun runs a script batch's script again after approval (the batch
// workflow's Execute task): journaled calls replay, approved calls run
// exactly once, cleared calls return {rejected: true}, a divergence stops
// the script. It stores the script's result or failure on the journal and
// the confirmation, and announces confirmation.executed. A retried or
// concurrent Rerun replays what is stored and runs nothing twice.
func (s *Service) Rerun(ctx context.Context, id string) (*countersign.Confirmation, error) {
	conf, err := s.Calls.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if conf.Kind != countersign.KindScript {
		return conf, fault.Errorf(fault.ConfirmationMismatch, "confirmation %s is not a script batch", id)
	}
	if err := confirm.On(conf, confirm.EventExecute, s.now()).Err(conf); err != nil {
		return conf, err
	}
	run, owner, err := s.acquire(ctx, id)
	if err != nil {
		return conf, err
	}
	if owner == "" {
		return s.finish(ctx, run)
	}
	prg, f := programs.compile(run.Source)
	if f != nil {
		return s.record(ctx, run, nil, f, nil, nil)
	}
	recs, err := s.Store.ScriptCalls(ctx, id)
	if err != nil {
		s.release(ctx, run)
		return conf, fmt.Errorf("rerun %s: %w", id, err)
	}
	rr := &replay{svc: s, ctx: ctx, run: run, journal: recs}
	limits := s.limits()
	x, err := s.execution(ctx, limits, uint64(run.Seed), run.StartedAt, rr.act)
	if err != nil {
		s.release(ctx, run)
		return conf, fmt.Errorf("rerun %s: %w", id, err)
	}
	value, f := x.execute(prg)
	s.sandboxes.refill(limits)
	entries, logs := x.calls(), x.lines()
	if f != nil && (f.cancelled || f.code == fault.Internal) {
		// Nothing is decided: the run is made again (after a restart, by
		// a retry). What ran is journaled and replays then.
		s.release(ctx, run)
		s.logger().WarnContext(ctx, "script run after approval stopped", "confirmation", id, "reason", f.reason, "error", f.err)
		if f.err == nil {
			f.err = errors.New(f.reason)
		}
		return conf, fmt.Errorf("rerun %s: %s: %w", id, f.reason, f.err)
	}
	return s.record(ctx, run, value, f, entries, logs)
}

// acquire takes the journal for this run (owner is its new owner), waiting
// while another live run holds it; an empty owner means the run after
// approval already ended.
func (s *Service) acquire(ctx context.Context, id string) (*countersign.ScriptRun, string, error) {
	owner := "run_" + strings.TrimPrefix(confirm.NewID(), "cf_")
	giveUp := s.now().Add(s.lease() + 10*time.Second)
	for {
		run, err := s.Store.GetScriptRun(ctx, id)
		if err != nil {
			return nil, "", fmt.Errorf("rerun %s: the script's journal: %w", id, err)
		}
		switch run.Status {
		case countersign.ScriptCompleted, countersign.ScriptFailed:
			return run, "", nil
		case countersign.ScriptRunning:
			if run.LeaseUntil != nil && s.now().Before(*run.LeaseUntil) {
				if s.now().After(giveUp) {
					return nil, "", fault.Errorf(fault.ConfirmationPending, "rerun %s: another run holds the script until %s", id, run.LeaseUntil.Format(time.RFC3339))
				}
				select {
				case <-ctx.Done():
					return nil, "", ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
		}
		until := s.now().Add(s.lease())
		run.Status, run.Owner, run.LeaseUntil = countersign.ScriptRunning, owner, &until
		run.Attempts++
		err = s.Store.UpdateScriptRun(ctx, run)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("rerun %s: take the script's journal: %w", id, err)
		}
		return run, owner, nil
	}
}

// release gives the journal back without deciding anything.
func (s *Service) release(ctx context.Context, run *countersign.ScriptRun) {
	run.Status, run.Owner, run.LeaseUntil = countersign.ScriptPending, "", nil
	if err := s.Store.UpdateScriptRun(context.WithoutCancel(ctx), run); err != nil {
		s.logger().WarnContext(ctx, "script journal not released: another run takes it over when its lease ends", "confirmation", run.ID, "error", err)
	}
}

// record stores how the run after approval ended, then finishes the batch.
func (s *Service) record(ctx context.Context, run *countersign.ScriptRun, value json.RawMessage, f *failure, entries []*entry, logs []string) (*countersign.Confirmation, error) {
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	run.Status, run.Owner, run.LeaseUntil, run.FinishedAt = countersign.ScriptCompleted, "", nil, &now
	run.Logs, run.Reached = logs, len(entries)
	if f != nil {
		run.Status = countersign.ScriptFailed
		run.Error = &countersign.ScriptError{Code: string(f.code), Reason: f.text(), Line: f.line, Column: f.column}
	} else if err := s.saveResult(ctx, run, value); err != nil {
		s.release(ctx, run)
		return nil, fmt.Errorf("rerun %s: store the result: %w", run.ID, err)
	}
	if err := s.Store.UpdateScriptRun(ctx, run); err != nil {
		return nil, fmt.Errorf("rerun %s: record the end: %w", run.ID, err)
	}
	s.logger().InfoContext(ctx, "script run after approval", "confirmation", run.ID, "status", run.Status, "calls", len(entries))
	return s.finish(ctx, run)
}

// finish records the script's end on the confirmation, once
// (confirm.Service.EndScript records and announces it).
func (s *Service) finish(ctx context.Context, run *countersign.ScriptRun) (*countersign.Confirmation, error) {
	var result json.RawMessage
	if run.Status == countersign.ScriptCompleted {
		var err error
		if result, err = s.journal().ResultOf(ctx, run); err != nil {
			c, _ := s.Calls.Lookup(ctx, run.ID)
			return c, fmt.Errorf("finish %s: %w", run.ID, err)
		}
		if len(result) > calls.MaxStoredBody {
			result = json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(result)))
		}
	}
	var failure *countersign.ScriptError
	if run.Status == countersign.ScriptFailed {
		failure = run.Error
		if failure == nil {
			failure = &countersign.ScriptError{}
		}
	}
	return s.Calls.EndScript(ctx, run.ID, result, failure)
}

// replay is call() in a run after approval.
type replay struct {
	svc     *Service
	ctx     context.Context
	run     *countersign.ScriptRun
	journal []*countersign.ScriptCall
}

func (r *replay) act(c *calls.Call, pos int) (*entry, *failure) {
	s, ctx, run := r.svc, context.WithoutCancel(r.ctx), r.run
	cred := &run.Credential
	op, err := s.Calls.Bind(cred, c)
	if err != nil {
		return nil, internalFailure(err, "a call could not be bound")
	}
	if pos >= len(r.journal) {
		return r.extend(ctx, c, pos, op.Binding)
	}
	rec := r.journal[pos]
	if rec.Binding != op.Binding || rec.Connection != c.Connection || rec.Method != c.Method || rec.Path != c.Path {
		return nil, &failure{code: fault.ScriptDiverged, reason: fmt.Sprintf(
			"call %d differs from the first run: it was %s %s (%s), now it is %s %s (%s) or has other arguments; nothing further ran",
			pos+1, rec.Method, rec.Path, rec.Connection, c.Method, c.Path, c.Connection)}
	}
	e := entryOf(rec)
	switch rec.State {
	case countersign.ScriptCallRan, countersign.ScriptCallDenied, countersign.ScriptCallRejected:
		v, err := s.valueOf(ctx, rec)
		if err != nil {
			return nil, internalFailure(err, "the script's journal could not be read")
		}
		e.value = v
		return e, nil
	case countersign.ScriptCallClaimed:
		return nil, &failure{code: fault.OutcomeUnknown, reason: fmt.Sprintf(
			"call %d (%s %s) was started by an earlier run that stopped before it recorded the outcome; it is not run again", pos+1, c.Method, c.Path)}
	}
	// Collected: the approver decided.
	// The lifecycle records the operation's first run (script.operation);
	// a replay is not recorded again.
	out, _, err := s.Calls.ExecuteOne(ctx, run.ID, rec.Operation)
	switch code := fault.CodeOf(err); {
	case err == nil:
		e.set(countersign.ScriptCallRan, StateRan, ranValue(out, false, ""))
		e.rerun = true
	case code == fault.ConfirmationRejected:
		e.set(countersign.ScriptCallRejected, StateRejected, rejectedValue)
	case code == fault.OutcomeUnknown:
		return nil, &failure{code: fault.OutcomeUnknown, reason: fmt.Sprintf("call %d (%s %s): %s", pos+1, c.Method, c.Path, fault.ReasonOf(err))}
	default:
		return nil, internalFailure(err, "an approved call could not be run")
	}
	if err := s.saveCall(ctx, run.ID, run.TTL, e); err != nil {
		return nil, internalFailure(err, "the script's journal could not be written")
	}
	return e, nil
}

// extend is a call beyond the first run's: a call that needs no
// confirmation runs (journaled before it is sent, so that no later run
// sends it again); one that needs confirmation is denied, as only the
// first run's calls were put to the approver.
func (r *replay) extend(ctx context.Context, c *calls.Call, pos int, binding string) (*entry, *failure) {
	s, run := r.svc, r.run
	e := &entry{index: pos, call: Call{Connection: c.Connection, Method: c.Method, Path: c.Path}, binding: binding, state: string(countersign.ScriptCallClaimed), rerun: true}
	e.call.Response = json.RawMessage("null")
	if err := s.saveCall(ctx, run.ID, run.TTL, e); err != nil {
		return nil, internalFailure(err, "the script's journal could not be written")
	}
	res, err := s.Calls.Do(ctx, &run.Credential, c, calls.Options{Pause: calls.PauseCollect})
	switch {
	case err != nil && fault.CodeOf(err) == fault.Internal:
		return nil, internalFailure(err, "a call could not be made: the gateway could not read or write its records")
	case err != nil:
		e.set(countersign.ScriptCallRan, StateRan, errorValue(err))
	case res.Outcome == calls.Executed:
		e.set(countersign.ScriptCallRan, StateRan, ranValue(outcomeOf(res.Response), res.Notice, res.Decision.Reason))
	case res.Outcome == calls.Collected:
		e.set(countersign.ScriptCallDenied, StateDenied, deniedValue(fault.RequiresConfirmation,
			res.Decision.Reason+", and only the calls of the script's first run were put to the approver: submit the script again to confirm it"))
	default:
		e.set(countersign.ScriptCallDenied, StateDenied, deniedValue(res.Code, res.Reason))
	}
	if err := s.saveCall(ctx, run.ID, run.TTL, e); err != nil {
		return nil, internalFailure(err, "the script's journal could not be written")
	}
	return e, nil
}
