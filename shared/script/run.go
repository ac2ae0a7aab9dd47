package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// scriptName is the file name positions refer to.
const scriptName = "script.js"

const (
	// maxPath bounds a call's path.
	maxPath = 2048
	// maxBody bounds a call's body, as /v1/calls does.
	maxBody = 1 << 20
	// Logs: lines kept per run, bytes kept per run, bytes per line.
	maxLogLines = 100
	maxLogBytes = 16 << 10
	maxLogLine  = 1 << 10
	// memoryPoll is how often the watchdog reads the process heap.
	memoryPoll = 2 * time.Millisecond
	// stopGrace is how long a stopped script may take to reach its next
	// JavaScript step (it may be inside a built-in) before the run is
	// answered without it.
	stopGrace = time.Second
)

// failure is why a run stopped, as the agent is told: a fault code, a
// reason and where in the script (1-based; 0 when unknown).
type failure struct {
	code         fault.Code
	reason       string
	line, column int
	// err is an internal cause: logged, never shown.
	err error
	// cancelled: the run's context ended (a shutdown); nothing is recorded
	// and the run is made again later.
	cancelled bool
}

func (f *failure) text() string {
	if f.line > 0 {
		return fmt.Sprintf("%s (line %d, column %d)", f.reason, f.line, f.column)
	}
	return f.reason
}

func internalFailure(err error, reason string) *failure {
	return &failure{code: fault.Internal, reason: reason, err: err}
}

// errStopped is the interrupt value: the reason is in execution.why.
var errStopped = errors.New("script stopped")

// entry is one call() of a run: what the journal keeps and what the
// agent is shown.
type entry struct {
	// index is the call's position in call order.
	index int
	call  Call
	value json.RawMessage
	// binding and state as the journal keeps them.
	binding string
	state   string
	rerun   bool
	// version of the journaled record (0: not stored yet).
	version int64
	// parts of a stored value too large for its record.
	parts int
	// op is the operation collected for the batch (first run).
	op *collected
	// req is the call, bound when the journal is stored (first run).
	req *calls.Call
}

// execution is one run of a compiled script in a fresh sandbox.
type execution struct {
	sb     *sandbox
	limits Limits
	ctx    context.Context
	// act does what one call() does (decide it, or replay it); it runs
	// under callMu and returns the entry, or a failure that stops the run.
	act func(c *calls.Call, pos int) (*entry, *failure)

	// callMu is held while a call acts; stopping takes it, so that a call
	// on its way upstream finishes and is recorded, and none starts after.
	callMu  sync.Mutex
	stopped *atomic.Bool // shared with the sandbox
	entries []*entry
	// inCall is set while call() reads its arguments (they may run
	// JavaScript that must not call call() again); runtime goroutine only.
	inCall bool

	mu      sync.Mutex
	why     *failure
	logs    []string
	logSize int
	dropped int
}

// newExecution binds a sandbox's call() and console.log to a run.
func newExecution(ctx context.Context, sb *sandbox, limits Limits, act func(*calls.Call, int) (*entry, *failure)) *execution {
	x := &execution{sb: sb, limits: limits, ctx: ctx, act: act, stopped: sb.stopped}
	sb.x = x
	return x
}

// hostFunctions defines call() and console (log, info, warn, error,
// debug) on a sandbox's global object, fixed: a script cannot replace
// them. They act for the run the sandbox is given to (newExecution).
func (sb *sandbox) hostFunctions() error {
	rt := sb.rt
	console := rt.NewObject()
	logFn := sb.native("log", 0, func(fc goja.FunctionCall) goja.Value { return sb.x.log(fc) })
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.DefineDataProperty(name, logFn, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return err
		}
	}
	g := rt.GlobalObject()
	if err := g.DefineDataProperty("console", console, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
		return err
	}
	callFn := sb.native("call", 4, func(fc goja.FunctionCall) goja.Value { return sb.x.call(fc) })
	return g.DefineDataProperty("call", callFn, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// stop ends the run at the script's next step; the first reason wins.
func (x *execution) stop(f *failure) {
	x.mu.Lock()
	if x.why == nil {
		x.why = f
	}
	x.mu.Unlock()
	x.stopped.Store(true)
	x.sb.rt.Interrupt(errStopped)
}

func (x *execution) reason() *failure {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.why
}

// outcome is what the runtime's goroutine hands back.
type outcome struct {
	value json.RawMessage
	fail  *failure
}

// execute runs the program under the limits and returns the script's
// value as JSON, or why it failed. The time limit, the memory watchdog and
// the context interrupt the script; a script stuck in a built-in past
// stopGrace is answered without waiting for it (it can no longer call).
func (x *execution) execute(prg *goja.Program) (json.RawMessage, *failure) {
	done := make(chan outcome, 1)
	lane := takeLane()
	go laneFuncs[lane](func() {
		defer putLane(lane)
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{fail: internalFailure(recovered(r), "the script's runtime failed")}
			}
		}()
		v, err := x.sb.rt.RunProgram(prg)
		if err != nil {
			done <- outcome{fail: x.classify(err)}
			return
		}
		b, f := x.result(v)
		done <- outcome{value: b, fail: f}
	})

	heap := heapSample()
	base, began := heap[0].Value.Uint64(), heap[1].Value.Uint64() // objects, live
	start, runStart := base, time.Now()
	// ahead is how far the heap runs past the collector's goal (0 below it).
	ahead := func() int64 { return sub(heap[0].Value.Uint64(), heap[2].Value.Uint64()) }
	aheadAtStart := ahead()
	// With the heap profile off nothing can be attributed: the process
	// heap's growth counts, as a whole.
	blind := runtime.MemProfileRate <= 0
	limit := time.NewTimer(x.limits.Time)
	defer limit.Stop()
	poll := time.NewTicker(memoryPoll)
	defer poll.Stop()
	var grace <-chan time.Time
	// measuring delivers a measurement under way.
	var measuring chan usage
	overMemory := &failure{code: fault.ScriptLimit, reason: fmt.Sprintf("the script used more than %d MiB of memory (scripts.memory_mib)", x.limits.Memory>>20)}
	ctxDone := x.ctx.Done()
	stop := func(f *failure) {
		x.stop(f)
		if grace == nil {
			grace = time.After(stopGrace)
		}
	}
	for {
		select {
		case o := <-done:
			x.halt()
			if o.fail == nil && x.stopped.Load() {
				// Stopped after its last step: the limit still applies.
				o.fail = x.reason()
			}
			return o.value, o.fail
		case <-limit.C:
			stop(&failure{code: fault.ScriptLimit, reason: fmt.Sprintf("the script ran longer than %s (scripts.time_limit_ms)", x.limits.Time)})
		case <-ctxDone:
			ctxDone = nil
			stop(&failure{code: fault.Internal, reason: "the run was cancelled", cancelled: true, err: x.ctx.Err()})
		case <-poll.C:
			// See memory.go: the process heap is only the trigger; the
			// measurement runs beside, so that the guard of the process
			// keeps its eye on the heap while it runs.
			metrics.Read(heap)
			// grown: the live heap's growth, or how much further the heap
			// runs ahead of the collector's goal than when the run began
			// (a run doubling a string outruns the collections the live
			// heap is counted at).
			now := heap[0].Value.Uint64()
			grown := max(sub(heap[1].Value.Uint64(), began), ahead()-aheadAtStart)
			switch {
			case grace != nil:
			case grown > processFactor*x.limits.Memory:
				stop(&failure{code: fault.ScriptLimit, reason: fmt.Sprintf("the gateway's memory grew by more than %d MiB while the script ran (%d times scripts.memory_mib); the script was stopped to protect it",
					processFactor*x.limits.Memory>>20, processFactor)})
			case blind:
				if sub(now, start) > x.limits.Memory {
					stop(overMemory)
				}
			case measuring == nil && sub(now, base) > x.limits.Memory/2:
				measuring = startMeasure(runStart)
			}
		case u := <-measuring:
			measuring = nil
			switch held := u.of(lane); {
			case held > x.limits.Memory:
				stop(overMemory)
			default:
				// The rest of the growth is someone else's.
				metrics.Read(heap)
				base = heap[0].Value.Uint64() - uint64(min(held, int64(heap[0].Value.Uint64())))
			}
		case <-grace:
			x.halt()
			return nil, x.reason()
		}
	}
}

// halt waits for a call on its way upstream and lets no other call start.
func (x *execution) halt() {
	x.callMu.Lock()
	x.stopped.Store(true)
	x.callMu.Unlock()
}

// classify turns what RunProgram returned into a failure with a position.
func (x *execution) classify(err error) *failure {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	if f := x.reason(); f != nil {
		// Stopped: whatever ended the script after that (the interrupt, or
		// a built-in giving up), the reason is the stop's.
		g := *f
		if g.line == 0 {
			switch {
			case errors.As(err, &ie):
				g.line, g.column = position(ie.Stack())
			case errors.As(err, &ex):
				g.line, g.column = position(ex.Stack())
			}
		}
		return &g
	}
	switch {
	case errors.As(err, &ie):
		return internalFailure(err, "the script was interrupted")
	case errors.As(err, &so):
		line, col := position(so.Stack())
		return &failure{code: fault.ScriptLimit, line: line, column: col,
			reason: fmt.Sprintf("the script nested calls more than %d deep", maxCallDepth)}
	case errors.As(err, &ex):
		line, col := position(ex.Stack())
		return &failure{code: fault.ScriptError, line: line, column: col, reason: "uncaught " + x.describe(ex.Value())}
	}
	return internalFailure(err, "the script's runtime failed")
}

// position is the first place in the script on a stack.
func position(stack []goja.StackFrame) (line, column int) {
	for _, f := range stack {
		if p := f.Position(); f.SrcName() == scriptName && p.Line > 0 {
			return p.Line, p.Column
		}
	}
	return 0, 0
}

// callSite is where the running call() was called from.
func (x *execution) callSite() (int, int) {
	return position(x.sb.rt.CaptureCallStack(8, nil))
}

// describe shows a thrown value in a sentence, running no more of the
// script than it must (an error's name and message, a value's JSON).
func (x *execution) describe(v goja.Value) string {
	s := "a value that cannot be shown"
	_ = x.sb.guard(func() { s = x.sb.show(v, 512) })
	return s
}

// show is a short text for a value: a string as it is, an error as
// "Name: message", anything else as JSON, within limit bytes.
func (sb *sandbox) show(v goja.Value, limit int) string {
	clip := func(s string) string {
		if len(s) > limit {
			return strings.ToValidUTF8(s[:limit], "") + "…"
		}
		return s
	}
	switch x := v.(type) {
	case nil:
		return "undefined"
	case goja.String:
		if x.Length() > limit {
			return clip(x.Substring(0, limit).String())
		}
		return x.String()
	case *goja.Symbol:
		return clip(x.String())
	case *goja.Object:
		if _, ok := goja.AssertFunction(x); ok {
			return "a function"
		}
		if x.ClassName() == "Error" {
			name, msg := x.Get("name"), x.Get("message")
			return clip(sb.show(name, limit) + ": " + sb.show(msg, limit))
		}
	}
	switch {
	case goja.IsUndefined(v):
		return "undefined"
	case goja.IsBigInt(v):
		return clip(v.String() + "n")
	}
	e := sb.newEncoder(limit)
	var out string
	if err := sb.guard(func() {
		b, ok := e.encode(v)
		out = string(b)
		if !ok {
			out = "undefined"
		}
	}); err != nil {
		if e.over {
			return clip(string(e.buf)) + "…"
		}
		return "[object]"
	}
	return out
}

// result encodes the script's value: a settled promise gives its value;
// undefined is null; a function or symbol is refused.
func (x *execution) result(v goja.Value) (json.RawMessage, *failure) {
	if o, ok := v.(*goja.Object); ok && o.ExportType() == promiseType {
		if p, ok := o.Export().(*goja.Promise); ok {
			switch p.State() {
			case goja.PromiseStateFulfilled:
				v = p.Result()
			case goja.PromiseStateRejected:
				return nil, &failure{code: fault.ScriptError, reason: "the script's promise was rejected: " + x.describe(p.Result())}
			default:
				return nil, &failure{code: fault.ScriptError, reason: "the script's result is a promise that never settles (scripts have no timers)"}
			}
		}
	}
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	e := x.sb.newEncoder(x.limits.ResultBytes)
	var b []byte
	var ok bool
	if err := x.sb.guard(func() { b, ok = e.encode(v) }); err != nil {
		var ex *goja.Exception
		switch {
		case e.over:
			return nil, &failure{code: fault.ScriptLimit, reason: fmt.Sprintf("the script's result is larger than %d bytes (scripts.max_result_bytes)", x.limits.ResultBytes)}
		case errors.As(err, &ex):
			return nil, &failure{code: fault.ScriptError, reason: "the script's result cannot be turned into JSON: " + x.describe(ex.Value())}
		}
		return nil, x.classify(err)
	}
	if !ok {
		return nil, &failure{code: fault.ScriptError, reason: "the script's result is a " + typeName(v) + ", not data: end the script with a value JSON can hold"}
	}
	return append(json.RawMessage(nil), b...), nil
}

var promiseType = reflect.TypeFor[*goja.Promise]()

func typeName(v goja.Value) string {
	if _, ok := v.(*goja.Symbol); ok {
		return "symbol"
	}
	return "function"
}

// log is console.log (and info, warn, error, debug): the arguments shown
// and joined by spaces, kept within the run's line and byte limits.
func (x *execution) log(fc goja.FunctionCall) goja.Value {
	if x.stopped.Load() {
		return goja.Undefined()
	}
	parts := make([]string, 0, len(fc.Arguments))
	for _, a := range fc.Arguments {
		parts = append(parts, x.sb.show(a, maxLogLine))
	}
	line := strings.Join(parts, " ")
	if len(line) > maxLogLine {
		line = strings.ToValidUTF8(line[:maxLogLine], "") + "…"
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.logs) >= maxLogLines || x.logSize+len(line) > maxLogBytes {
		x.dropped++
	} else {
		x.logs = append(x.logs, line)
		x.logSize += len(line)
	}
	return goja.Undefined()
}

// lines returns the logs kept, and how many were dropped.
func (x *execution) lines() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := append([]string(nil), x.logs...)
	if x.dropped > 0 {
		out = append(out, fmt.Sprintf("(%d more lines not kept)", x.dropped))
	}
	return out
}

// calls returns the run's entries, once no call acts any more.
func (x *execution) calls() []*entry {
	x.callMu.Lock()
	defer x.callMu.Unlock()
	return append([]*entry(nil), x.entries...)
}

// call is the script's call(connection, method, path, {query, body}).
func (x *execution) call(fc goja.FunctionCall) goja.Value {
	rt := x.sb.rt
	if x.inCall {
		panic(rt.NewTypeError("call() cannot be used while the arguments of another call() are being read"))
	}
	if x.stopped.Load() {
		return x.interrupt()
	}
	pos := len(x.entries)
	if pos >= x.limits.Calls {
		line, col := x.callSite()
		x.stop(&failure{code: fault.ScriptLimit, line: line, column: col,
			reason: fmt.Sprintf("the script called call() more than %d times (scripts.max_calls)", x.limits.Calls)})
		return x.interrupt()
	}
	c := x.callArgs(fc)
	x.callMu.Lock()
	if x.stopped.Load() {
		x.callMu.Unlock()
		return x.interrupt()
	}
	e, f := x.act(c, pos)
	if e != nil {
		x.entries = append(x.entries, e)
	}
	x.callMu.Unlock()
	if f != nil {
		if f.line == 0 {
			f.line, f.column = x.callSite()
		}
		x.stop(f)
		return x.interrupt()
	}
	return x.sb.mustCall(x.sb.parse, goja.Undefined(), rt.ToValue(string(e.value)))
}

// interrupt makes sure the script stops at its next step.
func (x *execution) interrupt() goja.Value {
	x.sb.rt.Interrupt(errStopped)
	return goja.Undefined()
}

// callArgs reads call()'s arguments into a pipeline call; a mistake is a
// TypeError the script may catch. Only the options' own properties count.
func (x *execution) callArgs(fc goja.FunctionCall) *calls.Call {
	rt := x.sb.rt
	x.inCall = true
	defer func() { x.inCall = false }()
	str := func(i int, name string, max int) string {
		s, ok := fc.Argument(i).(goja.String)
		if !ok || s.Length() == 0 {
			panic(rt.NewTypeError("call(connection, method, path, {query, body}): %s must be a non-empty string", name))
		}
		if s.Length() > max {
			panic(rt.NewTypeError("call(): %s is longer than %d characters", name, max))
		}
		return s.String()
	}
	c := &calls.Call{Connection: str(0, "connection", 128), Method: strings.ToUpper(str(1, "method", 16)), Path: str(2, "path", maxPath)}
	switch c.Method {
	case "GET", "HEAD", "OPTIONS":
		c.Intent = policy.IntentRead
	default:
		c.Intent = policy.IntentWrite
	}
	opts := fc.Argument(3)
	if !goja.IsUndefined(opts) && !goja.IsNull(opts) {
		o, ok := opts.(*goja.Object)
		if _, fn := goja.AssertFunction(opts); !ok || fn || o.ClassName() == "Array" {
			panic(rt.NewTypeError("call(): the fourth argument must be an object {query, body}"))
		}
		for _, k := range o.Keys() {
			v := o.Get(k)
			switch k {
			case "query":
				c.Query = x.query(v)
			case "body":
				if goja.IsUndefined(v) {
					continue
				}
				e := x.sb.newEncoder(maxBody)
				b, ok := e.encode(v)
				if !ok {
					panic(rt.NewTypeError("call(): body must be JSON data, not a %s", typeName(v)))
				}
				c.Body, c.ContentType = append([]byte(nil), b...), "application/json"
			default:
				panic(rt.NewTypeError("call(): unknown option %q: the options are query and body", k))
			}
		}
	}
	if err := c.Validate(); err != nil {
		panic(rt.NewTypeError("call(): %s", fault.ReasonOf(err)))
	}
	return c
}

// query reads {name: value or [values]} with string, number or boolean values.
func (x *execution) query(v goja.Value) url.Values {
	rt := x.sb.rt
	if goja.IsUndefined(v) || goja.IsNull(v) {
		return nil
	}
	o, ok := v.(*goja.Object)
	if !ok || o.ClassName() == "Array" {
		panic(rt.NewTypeError("call(): query must be an object of names and values"))
	}
	scalar := func(name string, v goja.Value) string {
		switch {
		case goja.IsString(v), goja.IsNumber(v):
			return v.String()
		}
		if _, isObj := v.(*goja.Object); !isObj && v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) && !goja.IsBigInt(v) {
			if _, isSym := v.(*goja.Symbol); !isSym {
				return v.String() // a boolean
			}
		}
		panic(rt.NewTypeError("call(): query %s must be a string, a number, a boolean, or an array of them", name))
	}
	q := url.Values{}
	for _, k := range o.Keys() {
		v := o.Get(k)
		if a, ok := v.(*goja.Object); ok && a.ClassName() == "Array" {
			n := toLength(a.Get("length"))
			if n > 1000 {
				panic(rt.NewTypeError("call(): query %s has more than 1000 values", k))
			}
			for i := int64(0); i < n; i++ {
				q.Add(k, scalar(k, a.Get(fmt.Sprint(i))))
			}
			continue
		}
		q.Add(k, scalar(k, v))
	}
	return q
}
