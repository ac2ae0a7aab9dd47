package local

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/workflow"
)

// update applies fn to the execution's record in one bbolt transaction and,
// when fn asks to write, settles it (see settle), persists it (Seq+1) and
// then acts on the change:
// timers are stopped or armed and a driver is kicked. fn returning false
// makes update return errStale without writing.
func (e *Engine) update(id string, fn func(r *record) (bool, error)) error {
	var prev, cur record
	err := e.write(func(tx *bbolt.Tx) error {
		r, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("execution %s: %w", id, ErrExecutionNotFound)
		}
		prev = r.clone()
		ok, err := fn(r)
		if err != nil {
			return err
		}
		if !ok {
			return errStale
		}
		e.settle(r, time.Now().UTC())
		if r.Token != "" && e.isNotified(r.Token) {
			r.Notified = true // written along, as it is written anyway
		}
		r.Seq++
		cur = *r
		return putRecord(tx, &prev, r)
	})
	if err != nil {
		return err
	}
	e.acted(&prev, &cur)
	return nil
}

// commit is update guarded by the Seq the caller read: if anything else
// wrote the record since (a task answer, a timeout), it returns errStale.
func (e *Engine) commit(id string, seq uint64, fn func(r *record)) error {
	return e.update(id, func(r *record) (bool, error) {
		if r.Seq != seq || r.Status != StatusRunning {
			return false, nil
		}
		fn(r)
		return true, nil
	})
}

// acted performs the side effects of a persisted change from prev to cur.
func (e *Engine) acted(prev, cur *record) {
	if prev.Token != "" && prev.Token != cur.Token {
		e.stopTokenTimer(prev.Token)
		e.forgetNotified(prev.Token)
	}
	if cur.Status == StatusRunning && cur.Token != "" && cur.Token != prev.Token && !cur.TokenDeadline.IsZero() {
		e.armTokenTimer(cur.Token, cur.TokenDeadline)
	}
	if cur.Status != StatusRunning {
		e.stopExecTimer(cur.ID)
		if prev.Status == StatusRunning {
			e.log.Info("workflow: execution ended", "execution", cur.ID, "status", cur.Status,
				"state", cur.State, "error", cur.Error)
		}
		return
	}
	if cur.State != prev.State {
		e.log.Debug("workflow: entered state", "execution", cur.ID, "state", cur.State)
	}
	if e.needsDriver(cur) {
		e.kick(cur.ID)
	}
}

// needsDriver reports whether the execution has work for a driver: it
// runs, and does not wait on a token its function was handed and returned.
func (e *Engine) needsDriver(r *record) bool {
	return r.needsDriver() && !(r.Token != "" && e.isNotified(r.Token))
}

// markNotified notes that the waitForTaskToken function handed token
// returned, so the task now only waits. This is not written: the
// lifecycle does not need it (the confirmation record holds the token,
// and the notify task is idempotent), and a commit of its own would cost
// every confirmation a disk sync. It is written with the execution's next
// write (the answer, a timeout) and by Close, and after a crash Resume
// calls the function again: the approvers may get their links twice, as
// when a Lambda invocation is retried.
func (e *Engine) markNotified(id, token string) {
	e.mu.Lock()
	e.notified[token] = true
	e.mu.Unlock()
	// The task may have been answered before the function returned (the
	// approver was quick): then nothing will forget the token, so do it.
	// The token index holds a running execution's current token and no
	// other (putRecord removes a token its record no longer waits on), so
	// looking the token up there tells without decoding the record.
	current := false
	_ = e.db.View(func(tx *bbolt.Tx) error {
		current = string(tx.Bucket(bucketTokens).Get([]byte(token))) == id
		return nil
	})
	if !current {
		e.forgetNotified(token)
	}
}

func (e *Engine) isNotified(token string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.notified[token]
}

func (e *Engine) forgetNotified(token string) {
	e.mu.Lock()
	delete(e.notified, token)
	e.mu.Unlock()
}

// persistNotified writes the notified marks still in memory (Close).
func (e *Engine) persistNotified() error {
	e.mu.Lock()
	tokens := make([]string, 0, len(e.notified))
	for t := range e.notified {
		tokens = append(tokens, t)
	}
	e.mu.Unlock()
	if len(tokens) == 0 {
		return nil
	}
	return e.write(func(tx *bbolt.Tx) error {
		for _, token := range tokens {
			id := tx.Bucket(bucketTokens).Get([]byte(token))
			if id == nil {
				continue
			}
			r, err := getRecord(tx, string(id))
			if err != nil {
				return err
			}
			if r == nil || r.Status != StatusRunning || r.Token != token || r.Notified {
				continue
			}
			prev := r.clone()
			r.Notified = true
			r.Seq++
			if err := putRecord(tx, &prev, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// complete answers the task waiting on token with a result or an error.
// The bbolt transaction decides the race between SendTaskSuccess,
// SendTaskFailure, the timeout and a failing function: the first to commit
// removes the token, and the others get workflow.ErrTaskNotFound. A sender
// (fromSend) arriving at or after the deadline times the task out itself.
func (e *Engine) complete(token string, result any, fail *taskError, fromSend bool) error {
	if token == "" {
		return workflow.ErrTaskNotFound
	}
	var id string
	err := e.db.View(func(tx *bbolt.Tx) error {
		id = string(tx.Bucket(bucketTokens).Get([]byte(token)))
		return nil
	})
	if err != nil {
		return err
	}
	if id == "" {
		return workflow.ErrTaskNotFound
	}
	timedOut := false
	err = e.update(id, func(r *record) (bool, error) {
		if r.Status != StatusRunning || r.Token != token {
			return false, workflow.ErrTaskNotFound
		}
		now := time.Now().UTC()
		res, f := result, fail
		if fromSend && !r.TokenDeadline.IsZero() && !now.Before(r.TokenDeadline) {
			res, f, timedOut = nil, &taskError{name: errTimeout}, true
		}
		st := e.lookup(r)
		if st == nil {
			finish(r, StatusFailed, nil, errRuntime, fmt.Sprintf("no state %q in machine %q", r.State, r.Machine), now)
			return true, nil
		}
		afterTask(r, st, res, f, now)
		return true, nil
	})
	if err != nil {
		return err
	}
	if timedOut {
		return fmt.Errorf("task timed out: %w", workflow.ErrTaskNotFound)
	}
	return nil
}

// lookup returns the current state of r, nil if its machine or state is
// gone (a definition changed across a restart).
func (e *Engine) lookup(r *record) *state {
	m := e.machines[workflow.Machine(r.Machine)]
	if m == nil {
		return nil
	}
	return m.states[r.State]
}

// drive runs the execution's states until it ends, waits on a task token,
// the engine closes, or another actor takes over.
func (e *Engine) drive(id string) {
	for e.ctx.Err() == nil {
		var r *record
		err := e.db.View(func(tx *bbolt.Tx) error {
			var err error
			r, err = getRecord(tx, id)
			return err
		})
		if err != nil || r == nil {
			e.log.Error("workflow: load execution", "execution", id, "err", err)
			return
		}
		if !e.needsDriver(r) {
			return
		}
		if !r.RetryAt.IsZero() {
			if !e.sleep(time.Until(r.RetryAt)) {
				return
			}
		}
		err = e.runState(r)
		if errors.Is(err, errStale) {
			continue
		}
		if errors.Is(err, errWaits) {
			// Nothing for a driver until the task is answered or times
			// out, and that change kicks one (acted): reading the record
			// again to find that out would cost every pause a decode.
			return
		}
		if err != nil {
			if e.ctx.Err() == nil {
				e.log.Error("workflow: run state", "execution", id, "state", r.State, "err", err)
			}
			return
		}
	}
}

// sleep waits d, or returns false when the engine closes.
func (e *Engine) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// errWaits means the current Task's function was handed its token and
// returned: the execution waits on the token.
var errWaits = errors.New("local: waiting on the task token")

// errShutdown means the engine closed during a function call.
var errShutdown = errors.New("local: engine closing")

// runState runs the current state of r once and persists the transition.
func (e *Engine) runState(r *record) error {
	now := time.Now().UTC()
	st := e.lookup(r)
	if st == nil {
		return e.commit(r.ID, r.Seq, func(r *record) {
			finish(r, StatusFailed, nil, errRuntime, fmt.Sprintf("no state %q in machine %q", r.State, r.Machine), now)
		})
	}
	if st.typ != typeTask {
		return e.commit(r.ID, r.Seq, func(r *record) { runLocal(r, st, now) })
	}
	fail := func(cause string) error {
		return e.commit(r.ID, r.Seq, func(r *record) { finish(r, StatusFailed, nil, errRuntime, cause, now) })
	}
	in, timeout, cause := taskInput(r, st)
	if cause != "" {
		return fail(cause)
	}

	if st.wait && r.Token == "" {
		// Persist the waiting task before handing its token out (after a
		// retry; settle hands the first token out with the transition).
		token, err := newToken()
		if err != nil {
			return fmt.Errorf("task token: %w", err)
		}
		return e.commit(r.ID, r.Seq, func(r *record) { giveToken(r, token, timeout, now) })
	}

	c := newContext(r, st)
	params, err := st.params.eval(in, c)
	if err != nil {
		return fail("Parameters: " + err.Error())
	}
	pv, has := params.(map[string]any)["Payload"]
	if !has {
		pv = map[string]any{}
	}
	payload, err := encodeJSON(pv)
	if err != nil {
		return fail("Parameters.Payload: " + err.Error())
	}
	fn := e.funcs[st.function]

	ctx, cancel := context.WithCancel(e.ctx)
	switch {
	case st.wait && !r.TokenDeadline.IsZero():
		ctx, cancel = context.WithDeadline(e.ctx, r.TokenDeadline)
	case !st.wait && timeout > 0:
		ctx, cancel = context.WithTimeout(e.ctx, timeout)
	}
	out, terr := invoke(ctx, fn, payload)
	deadlineHit := ctx.Err() == context.DeadlineExceeded
	cancel()
	if e.ctx.Err() != nil {
		return errShutdown // not persisted: the state runs again after Resume
	}

	if st.wait {
		token := r.Token
		if terr != nil {
			err := e.complete(token, nil, terr, false)
			if errors.Is(err, workflow.ErrTaskNotFound) {
				e.log.Warn("workflow: notify function failed after the task was answered",
					"execution", r.ID, "state", r.State, "error", terr.name)
				return errStale
			}
			return err
		}
		// The function's output is ignored: the task waits for its token.
		e.markNotified(r.ID, token)
		return errWaits
	}

	if terr == nil && deadlineHit {
		terr = &taskError{name: errTimeout}
	}
	var result any
	if terr == nil {
		pv, err := decodeJSON(out)
		if err != nil {
			terr = &taskError{name: errTaskFailed, cause: "the function returned invalid JSON"}
		}
		result = map[string]any{"ExecutedVersion": "$LATEST", "Payload": pv, "StatusCode": json.Number("200")}
	}
	return e.commit(r.ID, r.Seq, func(r *record) { afterTask(r, st, result, terr, time.Now().UTC()) })
}

// taskInput is the input of the Task st (InputPath applied) and its
// timeout (TimeoutSeconds or TimeoutSecondsPath); cause says why the
// execution fails instead.
func taskInput(r *record, st *state) (in any, timeout time.Duration, cause string) {
	raw, err := decodeJSON(r.StateInput)
	if err != nil {
		return nil, 0, "state input: " + err.Error()
	}
	if in, err = st.inputPath.apply(raw); err != nil {
		return nil, 0, "InputPath: " + err.Error()
	}
	timeout = st.timeout
	if st.timeoutPath != nil {
		v, ok := st.timeoutPath.get(in)
		n, err := positiveInt(v)
		if !ok || err != nil {
			return nil, 0, fmt.Sprintf("TimeoutSecondsPath %q: must select a positive integer", st.timeoutPath.raw)
		}
		timeout = time.Duration(n) * time.Second
	}
	return in, timeout, ""
}

// giveToken makes r wait on token, for timeout (0: no deadline).
func giveToken(r *record, token string, timeout time.Duration, now time.Time) {
	r.Token, r.Notified, r.RetryAt = token, false, time.Time{}
	r.TokenDeadline = time.Time{}
	if timeout > 0 {
		r.TokenDeadline = now.Add(timeout)
	}
}

// maxSettled bounds the states one commit runs, so a loop of Choice and
// Pass states cannot hold a write transaction: after that many the driver
// commits and goes on.
const maxSettled = 32

// settle runs on r, in memory, what needs no function call: Pass, Choice,
// Succeed and Fail states, and handing a waiting Task its token. The
// caller persists the result in the same commit as the change that led to
// it, so transitions that are not waits take no commit of their own: Start
// persists the execution already waiting in its first Task with its token,
// and the answer to a task persists every state after it up to the next
// Task or the end (for the confirm machine, the decision, Route and
// Approved in one commit). It stops at a Task that calls a function, at a
// retry delay, and at the end of the execution.
func (e *Engine) settle(r *record, now time.Time) {
	for range maxSettled {
		if r.Status != StatusRunning || !r.RetryAt.IsZero() {
			return
		}
		st := e.lookup(r)
		switch {
		case st == nil:
			finish(r, StatusFailed, nil, errRuntime, fmt.Sprintf("no state %q in machine %q", r.State, r.Machine), now)
			return
		case st.typ != typeTask:
			runLocal(r, st, now)
		case st.wait && r.Token == "":
			_, timeout, cause := taskInput(r, st)
			if cause != "" {
				finish(r, StatusFailed, nil, errRuntime, cause, now)
				return
			}
			token, err := newToken()
			if err != nil {
				return // the driver tries again and reports it
			}
			giveToken(r, token, timeout, now)
			return
		default:
			return
		}
	}
}

// newContext builds the context object for st.
func newContext(r *record, st *state) *contextObject {
	input, _ := decodeJSON(r.Input)
	return &contextObject{
		executionID:    r.ID,
		executionName:  r.Name,
		executionInput: input,
		startTime:      r.StartTime,
		stateName:      st.name,
		enteredTime:    r.EnteredTime,
		machineID:      "local:" + r.Machine,
		token:          r.Token,
	}
}

// runLocal runs a Pass, Choice, Succeed or Fail state on r.
func runLocal(r *record, st *state, now time.Time) {
	failRuntime := func(where string, err error) {
		finish(r, StatusFailed, nil, errRuntime, fmt.Sprintf("state %q: %s: %v", st.name, where, err), now)
	}
	raw, err := decodeJSON(r.StateInput)
	if err != nil {
		failRuntime("state input", err)
		return
	}
	if st.typ == typeFail {
		finish(r, StatusFailed, nil, st.errName, st.cause, now)
		return
	}
	in, err := st.inputPath.apply(raw)
	if err != nil {
		failRuntime("InputPath", err)
		return
	}
	switch st.typ {
	case typeSucceed:
		out, err := st.outputPath.apply(in)
		if err != nil {
			failRuntime("OutputPath", err)
			return
		}
		b, err := encodeJSON(out)
		if err != nil {
			failRuntime("output", err)
			return
		}
		finish(r, StatusSucceeded, b, "", "", now)
	case typeChoice:
		next := ""
		for i, rule := range st.choices {
			ok, err := rule.match(in)
			if err != nil {
				failRuntime(fmt.Sprintf("Choices[%d]", i), err)
				return
			}
			if ok {
				next = rule.next
				break
			}
		}
		if next == "" {
			next = st.def
		}
		if next == "" {
			finish(r, StatusFailed, nil, errNoChoice, fmt.Sprintf("state %q: no choice rule matched and there is no Default", st.name), now)
			return
		}
		out, err := st.outputPath.apply(in)
		if err != nil {
			failRuntime("OutputPath", err)
			return
		}
		enter(r, next, out, now)
	case typePass:
		result := in
		switch {
		case st.hasResult:
			result = st.result
		case st.params != nil:
			if result, err = st.params.eval(in, newContext(r, st)); err != nil {
				failRuntime("Parameters", err)
				return
			}
		}
		out, where, err := st.output(raw, result)
		if err != nil {
			failRuntime(where, err)
			return
		}
		advance(r, st, out, now)
	}
}

// output places a state's result into its raw input (ResultPath) and
// selects the state's output (OutputPath); where names the step that failed.
func (st *state) output(raw, result any) (out any, where string, err error) {
	combined, err := st.resultPath.apply(raw, result)
	if err != nil {
		return nil, "ResultPath", err
	}
	if out, err = st.outputPath.apply(combined); err != nil {
		return nil, "OutputPath", err
	}
	return out, "", nil
}

// afterTask moves r past a Task that produced result or failed with fail:
// ResultSelector, ResultPath and OutputPath on success; Retry, then Catch,
// then failing the execution on failure.
func afterTask(r *record, st *state, result any, fail *taskError, now time.Time) {
	r.Token, r.TokenDeadline, r.Notified = "", time.Time{}, false
	failRuntime := func(where string, err error) {
		finish(r, StatusFailed, nil, errRuntime, fmt.Sprintf("state %q: %s: %v", st.name, where, err), now)
	}
	raw, err := decodeJSON(r.StateInput)
	if err != nil {
		failRuntime("state input", err)
		return
	}
	if fail == nil {
		if st.resultSelector != nil {
			if result, err = st.resultSelector.eval(result, newContext(r, st)); err != nil {
				failRuntime("ResultSelector", err)
				return
			}
		}
		out, where, err := st.output(raw, result)
		if err != nil {
			failRuntime(where, err)
			return
		}
		advance(r, st, out, now)
		return
	}
	if fail.name == errRuntime {
		finish(r, StatusFailed, nil, fail.name, fail.cause, now)
		return
	}
	for i, rt := range st.retry {
		if !errorMatches(rt.errorEquals, fail.name) {
			continue
		}
		if len(r.Retries) != len(st.retry) {
			r.Retries = make([]int, len(st.retry))
		}
		if n := r.Retries[i]; n < rt.maxAttempts {
			delay := time.Duration(float64(rt.interval) * math.Pow(rt.backoff, float64(n)))
			if rt.maxDelay > 0 && delay > rt.maxDelay {
				delay = rt.maxDelay
			}
			r.Retries[i]++
			r.RetryAt = now.Add(delay)
			return
		}
		break // the first matching retrier is exhausted: on to Catch
	}
	for _, c := range st.catch {
		if !errorMatches(c.errorEquals, fail.name) {
			continue
		}
		out, err := c.resultPath.apply(raw, map[string]any{"Error": fail.name, "Cause": fail.cause})
		if err != nil {
			failRuntime("Catch ResultPath", err)
			return
		}
		enter(r, c.next, out, now)
		return
	}
	finish(r, StatusFailed, nil, fail.name, fail.cause, now)
}

// errorMatches applies ErrorEquals: States.ALL matches every error but
// States.Runtime; States.TaskFailed every error but States.Timeout and
// States.Runtime; any other name matches itself.
func errorMatches(list []string, name string) bool {
	for _, want := range list {
		switch want {
		case errAll:
			if name != errRuntime {
				return true
			}
		case errTaskFailed:
			if name != errTimeout && name != errRuntime {
				return true
			}
		default:
			if want == name {
				return true
			}
		}
	}
	return false
}

// advance leaves st with output out: to its Next state, or ending the
// execution successfully when st is an End state.
func advance(r *record, st *state, out any, now time.Time) {
	if st.end {
		b, err := encodeJSON(out)
		if err != nil {
			finish(r, StatusFailed, nil, errRuntime, "output: "+err.Error(), now)
			return
		}
		finish(r, StatusSucceeded, b, "", "", now)
		return
	}
	enter(r, st.next, out, now)
}

// enter moves r to state next with input in.
func enter(r *record, next string, in any, now time.Time) {
	b, err := encodeJSON(in)
	if err != nil {
		finish(r, StatusFailed, nil, errRuntime, "state input: "+err.Error(), now)
		return
	}
	r.State, r.StateInput, r.EnteredTime = next, b, now
	r.Retries, r.RetryAt = nil, time.Time{}
	r.Token, r.TokenDeadline, r.Notified = "", time.Time{}, false
}

// finish ends the execution.
func finish(r *record, status Status, output json.RawMessage, errName, cause string, now time.Time) {
	r.Status, r.Output, r.Error, r.Cause, r.StopTime = status, output, errName, cause, now
	r.Retries, r.RetryAt = nil, time.Time{}
	r.Token, r.TokenDeadline, r.Notified = "", time.Time{}, false
}

// newToken returns a task token: the time in nanoseconds (8 bytes) and 32
// random bytes, base64url-encoded. The time first keeps the tokens made at
// once side by side in the token index, so the pauses of one group commit
// share its leaf pages (TestTokensSideBySide); the random bytes alone are
// what a token always held.
func newToken() (string, error) {
	b := make([]byte, 40)
	binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
	if _, err := rand.Read(b[8:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
