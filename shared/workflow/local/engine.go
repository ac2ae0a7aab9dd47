package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/workflow"
)

// LambdaFunc is a Lambda function as the engine calls it: the Payload of the
// Task's Parameters in, the function's JSON result out. A returned error (or
// a panic) fails the task with the error name aws-lambda-go would report;
// see ErrorNamer.
type LambdaFunc func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)

// Options configures an Engine.
type Options struct {
	// DB holds the executions; required. The engine uses only buckets whose
	// names start with "workflow_", and never closes the DB.
	DB *bbolt.DB
	// Update runs a write transaction on DB; nil means DB.Update. The local
	// stack passes the embedded store's, so the engine's commits join the
	// store's (one disk sync for concurrent writes). fn may run more than once.
	Update func(fn func(*bbolt.Tx) error) error
	// Along, when set, carries a write to the transaction of the next
	// confirmation write made with the context it returns (the embedded
	// store's TxAlong, store.Along): StartAlong uses it.
	Along func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along)
	// Definitions are the raw ASL definitions by machine, with their
	// ${...} placeholders (see LoadDefinitions).
	Definitions map[workflow.Machine][]byte
	// Substitutions replace ${Name} placeholders in the definitions' string
	// values, as SAM DefinitionSubstitutions do: "NotifyFunctionArn" ->
	// "notify". A placeholder without a substitution is a load error.
	Substitutions map[string]string
	// Functions are the Lambda functions by FunctionName (after
	// substitution). A Task naming a missing function is a load error.
	Functions map[string]LambdaFunc
	// Logger receives transitions and failures; nil discards.
	Logger *slog.Logger
}

// Engine runs executions of the state machines in-process, persisting each
// transition in bbolt. It implements workflow.Workflow.
type Engine struct {
	db       *bbolt.DB
	write    func(fn func(*bbolt.Tx) error) error
	along    func(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along)
	machines map[workflow.Machine]*machine
	funcs    map[string]LambdaFunc
	log      *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // drivers and timer callbacks

	mu          sync.Mutex
	closed      bool
	drivers     map[string]*driver     // execution id -> its running driver
	tokenTimers map[string]*time.Timer // task token -> its timeout
	execTimers  map[string]*time.Timer // execution id -> its TimeoutSeconds
	// notified holds the tokens whose waitForTaskToken function returned
	// and that are not yet answered: kept in memory, not written (see
	// markNotified), and persisted with the execution's next write or by
	// Close.
	notified map[string]bool
}

var _ workflow.Workflow = (*Engine)(nil)

// ExecutionInfo describes an execution, for tests and operators.
type ExecutionInfo struct {
	ID      string
	Machine workflow.Machine
	Name    string
	Status  Status
	// State is the current state while RUNNING, the last one after.
	State string
	Input json.RawMessage
	// Output is set when SUCCEEDED; Error and Cause when FAILED.
	Output json.RawMessage
	Error  string
	Cause  string
	// TaskToken is the token the current Task waits on, if any, and
	// TaskDeadline when it times out (zero: never).
	TaskToken    string
	TaskDeadline time.Time
	StartTime    time.Time
	StopTime     time.Time
}

// New parses, substitutes and validates every definition and prepares the
// engine's buckets. It starts nothing: call Resume to re-arm the executions
// persisted by an earlier engine. Timers use the time package, so an Engine
// created inside a testing/synctest bubble runs on the bubble's clock.
func New(opts Options) (*Engine, error) {
	if opts.DB == nil {
		return nil, errors.New("local: Options.DB is required")
	}
	if len(opts.Definitions) == 0 {
		return nil, errors.New("local: Options.Definitions is empty")
	}
	e := &Engine{
		db:          opts.DB,
		write:       opts.Update,
		along:       opts.Along,
		machines:    map[workflow.Machine]*machine{},
		funcs:       opts.Functions,
		log:         opts.Logger,
		drivers:     map[string]*driver{},
		tokenTimers: map[string]*time.Timer{},
		execTimers:  map[string]*time.Timer{},
		notified:    map[string]bool{},
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.write == nil {
		e.write = e.db.Update
	}
	for name, raw := range opts.Definitions {
		m, err := parseMachine(name, raw, opts.Substitutions, opts.Functions)
		if err != nil {
			return nil, err
		}
		e.machines[name] = m
	}
	if err := ensureBuckets(e.db); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

// LoadDefinitions reads dir/confirm.asl.json and dir/batch.asl.json.
func LoadDefinitions(dir string) (map[workflow.Machine][]byte, error) {
	defs := map[workflow.Machine][]byte{}
	for _, m := range []workflow.Machine{workflow.Confirm, workflow.Batch} {
		b, err := os.ReadFile(filepath.Join(dir, string(m)+".asl.json"))
		if err != nil {
			return nil, fmt.Errorf("local: load definitions: %w", err)
		}
		defs[m] = b
	}
	return defs, nil
}

// Start persists a new execution of m named name and runs it in the
// background; it returns the execution id "local:<machine>:<name>" at once.
// As on Step Functions, starting a running execution again with the same
// input returns the same id; another input, or a name whose execution has
// ended, is ErrExecutionAlreadyExists.
func (e *Engine) Start(ctx context.Context, m workflow.Machine, name string, input []byte) (string, error) {
	if err := e.check(ctx); err != nil {
		return "", fmt.Errorf("start %s %s: %w", m, name, err)
	}
	r, err := e.newExecution(m, name, input)
	if err != nil {
		return "", err
	}
	id := r.ID
	existed := false
	err = e.write(func(tx *bbolt.Tx) error {
		old, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if old != nil {
			if old.Status == StatusRunning && bytes.Equal(old.Input, r.Input) {
				existed = true
				return nil
			}
			return ErrExecutionAlreadyExists
		}
		return putRecord(tx, nil, r)
	})
	if err != nil {
		return "", fmt.Errorf("start %s: %w", id, err)
	}
	if existed {
		return id, nil
	}
	e.started(r)
	return id, nil
}

// newExecution is the record of a new execution of m named name, settled
// (waiting in its first Task with a token, as it is persisted).
func (e *Engine) newExecution(m workflow.Machine, name string, input []byte) (*record, error) {
	mach, ok := e.machines[m]
	if !ok {
		return nil, fmt.Errorf("start %s %s: unknown state machine", m, name)
	}
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", m, name, err)
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return nil, fmt.Errorf("start %s %s: invalid input: %w", m, name, err)
	}
	id := "local:" + string(m) + ":" + name
	now := time.Now().UTC()
	r := &record{
		ID: id, Machine: string(m), Name: name, Input: buf.Bytes(), StartTime: now,
		Status: StatusRunning, State: mach.startAt, StateInput: buf.Bytes(), EnteredTime: now,
	}
	if mach.timeout > 0 {
		r.Deadline = now.Add(mach.timeout)
	}
	// Persisted already settled: waiting in its first Task with a token.
	e.settle(r, now)
	return r, nil
}

// started acts on a new execution once it is persisted: its timers, and a
// driver for its first state.
func (e *Engine) started(r *record) {
	e.log.Info("workflow: execution started", "execution", r.ID, "state", r.State)
	if r.Status == StatusRunning && !r.Deadline.IsZero() {
		e.armExecTimer(r.ID, r.Deadline)
	}
	e.acted(&record{ID: r.ID, Status: StatusRunning, State: e.machines[workflow.Machine(r.Machine)].startAt}, r)
}

// StartAlong is Start with the new execution written in the transaction of
// the next confirmation write made with the returned context (see
// Options.Along): one commit for the confirmation a pause creates and the
// execution that asks for it. The returned start, called after that write,
// finishes: when the execution was not written with it (no Options.Along,
// the write failed, an execution of that name exists), it starts it as
// Start does.
func (e *Engine) StartAlong(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, func(ctx context.Context) (string, error)) {
	ctx, _, start := e.startAlong(ctx, m, name, input, false)
	return ctx, start
}

// StartAlongToken is StartAlong for a caller that keeps the token of the
// task the new execution waits in first (the notify task's) with the same
// confirmation write: it returns that token ("" when there is none), as
// the waitForTaskToken function gets it later. An execution of that name
// that exists already fails the confirmation write (wrapping
// ErrExecutionAlreadyExists) rather than being left for start to decide,
// since the token written beside it would not be its own.
func (e *Engine) StartAlongToken(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, string, func(ctx context.Context) (string, error)) {
	return e.startAlong(ctx, m, name, input, true)
}

func (e *Engine) startAlong(ctx context.Context, m workflow.Machine, name string, input []byte, strict bool) (context.Context, string, func(ctx context.Context) (string, error)) {
	start := func(ctx context.Context) (string, error) { return e.Start(ctx, m, name, input) }
	if e.along == nil || e.check(ctx) != nil {
		return ctx, "", start
	}
	r, err := e.newExecution(m, name, input)
	if err != nil {
		return ctx, "", start // Start reports it
	}
	actx, a := e.along(ctx, func(tx *bbolt.Tx) (bool, error) {
		old, err := getRecord(tx, r.ID)
		switch {
		case err != nil:
			return false, err
		case old != nil && strict:
			return false, fmt.Errorf("start %s: %w", r.ID, ErrExecutionAlreadyExists)
		case old != nil:
			return false, nil // Start decides about an existing one
		}
		return true, putRecord(tx, nil, r)
	})
	token := ""
	if r.Status == StatusRunning {
		token = r.Token
	}
	return actx, token, func(ctx context.Context) (string, error) {
		if !a.Done() {
			return start(ctx)
		}
		e.started(r)
		return r.ID, nil
	}
}

// SendTaskSuccess completes the task waiting on token with output, which
// becomes the Task's result. An unknown, answered or timed-out token is
// workflow.ErrTaskNotFound.
func (e *Engine) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	if err := e.check(ctx); err != nil {
		return fmt.Errorf("send task success: %w", err)
	}
	v, err := decodeJSON(output)
	if err != nil {
		return fmt.Errorf("send task success: invalid output: %w", err)
	}
	if err := e.complete(token, v, nil, true); err != nil {
		return fmt.Errorf("send task success: %w", err)
	}
	return nil
}

// SendTaskFailure fails the task waiting on token with errorName and cause,
// which its Retry and Catch match on. An unknown, answered or timed-out
// token is workflow.ErrTaskNotFound.
func (e *Engine) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	if err := e.check(ctx); err != nil {
		return fmt.Errorf("send task failure: %w", err)
	}
	if err := e.complete(token, nil, &taskError{name: errorName, cause: cause}, true); err != nil {
		return fmt.Errorf("send task failure: %w", err)
	}
	return nil
}

// Execution returns the persisted state of the execution id, or
// ErrExecutionNotFound.
func (e *Engine) Execution(ctx context.Context, id string) (ExecutionInfo, error) {
	if err := ctx.Err(); err != nil {
		return ExecutionInfo{}, err
	}
	var r *record
	err := e.db.View(func(tx *bbolt.Tx) error {
		var err error
		r, err = getRecord(tx, id)
		return err
	})
	if err != nil {
		return ExecutionInfo{}, fmt.Errorf("execution %s: %w", id, err)
	}
	if r == nil {
		return ExecutionInfo{}, fmt.Errorf("execution %s: %w", id, ErrExecutionNotFound)
	}
	return ExecutionInfo{
		ID: r.ID, Machine: workflow.Machine(r.Machine), Name: r.Name, Status: r.Status, State: r.State,
		Input: r.Input, Output: r.Output, Error: r.Error, Cause: r.Cause,
		TaskToken: r.Token, TaskDeadline: r.TokenDeadline, StartTime: r.StartTime, StopTime: r.StopTime,
	}, nil
}

// Resume re-arms every RUNNING execution persisted in the DB: a Task waiting
// on a token gets its timer back for the remaining time (timing out at once
// if the deadline has passed) and keeps its token; a waitForTaskToken
// function that had not returned is called again with the same token; any
// other execution re-runs its current state (at least once: the task
// functions are idempotent).
func (e *Engine) Resume(ctx context.Context) error {
	if err := e.check(ctx); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var running []record
	err := e.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketExecutions).ForEach(func(k, v []byte) error {
			var r record
			if err := decodeRecord(v, &r); err != nil {
				return fmt.Errorf("decode execution %s: %w", k, err)
			}
			if r.Status == StatusRunning {
				running = append(running, r)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	for _, r := range running {
		if !r.Deadline.IsZero() {
			e.armExecTimer(r.ID, r.Deadline)
		}
		if r.Token != "" && !r.TokenDeadline.IsZero() {
			e.armTokenTimer(r.Token, r.TokenDeadline)
		}
		if e.needsDriver(&r) {
			e.kick(r.ID)
		}
	}
	e.log.Info("workflow: resumed", "executions", len(running))
	return nil
}

// Close stops the timers and waits for the running drivers; a function call
// in progress sees its context cancelled, and its state runs again after
// Resume. It then records which waiting tasks' functions had returned, so
// Resume does not call them again. Close does not close the DB.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for k, t := range e.tokenTimers {
		t.Stop()
		delete(e.tokenTimers, k)
	}
	for k, t := range e.execTimers {
		t.Stop()
		delete(e.execTimers, k)
	}
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	if err := e.persistNotified(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

func (e *Engine) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return nil
}

// validName applies Step Functions' rule for execution names.
func validName(name string) error {
	if name == "" || len([]rune(name)) > 80 {
		return errors.New("invalid name: must be 1 to 80 characters")
	}
	for _, c := range name {
		if unicode.IsSpace(c) || unicode.IsControl(c) || strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", c) {
			return fmt.Errorf("invalid name: character %q not allowed", c)
		}
	}
	return nil
}

// enter registers a goroutine with the engine, unless it is closed.
func (e *Engine) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	return true
}

// driver runs one execution's states; again asks it to look once more.
type driver struct{ again bool }

// kick makes sure a driver runs for the execution id.
func (e *Engine) kick(id string) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	if d, ok := e.drivers[id]; ok {
		d.again = true
		e.mu.Unlock()
		return
	}
	d := &driver{}
	e.drivers[id] = d
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		for {
			e.drive(id)
			e.mu.Lock()
			if d.again && !e.closed {
				d.again = false
				e.mu.Unlock()
				continue
			}
			delete(e.drivers, id)
			e.mu.Unlock()
			return
		}
	}()
}

func (e *Engine) armTokenTimer(token string, deadline time.Time) {
	e.armTimer(e.tokenTimers, token, deadline, func() {
		err := e.complete(token, nil, &taskError{name: errTimeout}, false)
		if err != nil && !errors.Is(err, workflow.ErrTaskNotFound) {
			e.log.Error("workflow: task timeout", "err", err)
		}
	})
}

func (e *Engine) stopTokenTimer(token string) { e.stopTimer(e.tokenTimers, token) }

func (e *Engine) armExecTimer(id string, deadline time.Time) {
	e.armTimer(e.execTimers, id, deadline, func() {
		err := e.update(id, func(r *record) (bool, error) {
			if r.Status != StatusRunning {
				return false, nil
			}
			finish(r, StatusFailed, nil, errTimeout, "the execution ran longer than its TimeoutSeconds", time.Now().UTC())
			return true, nil
		})
		if err != nil && !errors.Is(err, errStale) {
			e.log.Error("workflow: execution timeout", "execution", id, "err", err)
		}
	})
}

func (e *Engine) stopExecTimer(id string) { e.stopTimer(e.execTimers, id) }

// armTimer (re)arms timers[key] to run fire at deadline, as tracked work
// that Close waits for. A timer replaced or stopped before it fires is
// forgotten; nothing is armed once the engine is closed. timers is guarded
// by e.mu.
func (e *Engine) armTimer(timers map[string]*time.Timer, key string, deadline time.Time, fire func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if t := timers[key]; t != nil {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(deadline), func() {
		if !e.enter() {
			return
		}
		defer e.wg.Done()
		e.mu.Lock()
		if timers[key] == t {
			delete(timers, key)
		}
		e.mu.Unlock()
		fire()
	})
	timers[key] = t
}

// stopTimer stops and forgets timers[key], if armed.
func (e *Engine) stopTimer(timers map[string]*time.Timer, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := timers[key]; t != nil {
		t.Stop()
		delete(timers, key)
	}
}

// AnswerAlong prepares the answer to the task waiting on token, to be
// written in the transaction of the next confirmation write made with the
// returned context (Options.Along): one commit for a decision and the
// workflow's answer to it. answer, called in that transaction (and again
// by send when it was not written there), gives the answer: output for a
// success, or errorName and cause for a failure; false answers nothing.
// The returned send, called after the write, acts on the answer written
// (timers, a driver for the next states), or sends it as SendTaskSuccess
// and SendTaskFailure do when it was not written with it (no
// Options.Along, the write failed, the token is unknown, answered or timed
// out: send then reports what they report).
func (e *Engine) AnswerAlong(ctx context.Context, token string, answer func() (output []byte, errorName, cause string, ok bool)) (context.Context, func(ctx context.Context) error) {
	send := func(ctx context.Context) error {
		output, errorName, cause, ok := answer()
		switch {
		case !ok:
			return nil
		case errorName == "":
			return e.SendTaskSuccess(ctx, token, output)
		default:
			return e.SendTaskFailure(ctx, token, errorName, cause)
		}
	}
	if e.along == nil || token == "" || e.check(ctx) != nil {
		return ctx, send
	}
	var prev, cur record
	actx, a := e.along(ctx, func(tx *bbolt.Tx) (bool, error) {
		output, errorName, cause, ok := answer()
		if !ok {
			return false, nil
		}
		// The token's execution, read in the write's transaction rather
		// than in one of its own before it: unknown, send reports it.
		id := string(tx.Bucket(bucketTokens).Get([]byte(token)))
		if id == "" {
			return false, nil
		}
		var res any
		var fail *taskError
		if errorName == "" {
			v, err := decodeJSON(output)
			if err != nil {
				return false, nil // send reports it
			}
			res = v
		} else {
			fail = &taskError{name: errorName, cause: cause}
		}
		r, err := getRecord(tx, id)
		if err != nil || r == nil || r.Status != StatusRunning || r.Token != token {
			return false, err
		}
		now := time.Now().UTC()
		st := e.lookup(r)
		if st == nil || !r.TokenDeadline.IsZero() && !now.Before(r.TokenDeadline) {
			return false, nil // send fails or times it out
		}
		prev = r.clone()
		afterTask(r, st, res, fail, now)
		e.settle(r, now)
		if r.Token != "" && e.isNotified(r.Token) {
			r.Notified = true
		}
		r.Seq++
		cur = *r
		return true, putRecord(tx, &prev, r)
	})
	return actx, func(ctx context.Context) error {
		if !a.Done() {
			return send(ctx)
		}
		e.acted(&prev, &cur)
		return nil
	}
}
