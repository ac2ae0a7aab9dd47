package script

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// maxCallDepth bounds JavaScript recursion: deeper is a clean
// StackOverflowError (script_limit_exceeded), never a crashed process.
const maxCallDepth = 1000

// prelude runs in every runtime before the script: it takes away code
// generation from strings (eval, the Function constructors, which would
// parse code the size of a string the script builds), the binary buffers
// (whose constructors allocate any size at once), and goja's GoError.
// goja itself has no timers, network, file system or require. Compiled at
// the first sandbox, not at start: a binary that links this package for
// the journal alone (the gateway's script status) never compiles it.
var prelude struct {
	once    sync.Once
	program *goja.Program
}

const preludeSource = `(function (g) {
  'use strict';
  var blocked = function Function() {
    throw new EvalError('code generation from strings is not allowed in scripts');
  };
  [function () {}, async function () {}, function* () {}].forEach(function (f) {
    Object.defineProperty(Object.getPrototypeOf(f), 'constructor',
      {value: blocked, writable: false, enumerable: false, configurable: false});
  });
  Object.defineProperty(blocked, 'prototype', {value: Function.prototype, writable: false});
  Object.defineProperty(g, 'Function', {value: blocked, writable: false, enumerable: false, configurable: false});
  ['eval', 'GoError', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'WebAssembly',
   'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
   'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'].forEach(function (n) { delete g[n]; });
})(this);`

// sandbox is one goja runtime prepared for one run of a script. Runtimes
// are never reused: a script may change any global or prototype, and the
// next script must not see it. (Compiled programs are reused; see
// programCache. Sandboxes are built ahead; see warm.)
type sandbox struct {
	rt     *goja.Runtime
	limits Limits
	// stopped reports that the run was stopped: the long loops of the
	// bounded built-ins give up then (an interrupt only stops JavaScript).
	stopped *atomic.Bool
	// x is the run the sandbox was given to: call() and console act for it.
	x *execution
	// Built-ins captured before the script runs, which may replace them.
	parse       goja.Callable
	boolValueOf goja.Callable
	rangeCtor   *goja.Object
}

func preludeProgram() *goja.Program {
	prelude.once.Do(func() { prelude.program = goja.MustCompile("prelude.js", preludeSource, true) })
	return prelude.program
}

// newSandbox builds a runtime: the prelude run, and the built-ins that
// could build a huge value in one uninterruptible call bounded by limits.
// It costs a few hundred microseconds (goja builds its built-ins lazily,
// and these are most of them); see warm.
func newSandbox(limits Limits) (*sandbox, error) {
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(maxCallDepth)
	sb := &sandbox{rt: rt, limits: limits, stopped: new(atomic.Bool)}
	if _, err := rt.RunProgram(preludeProgram()); err != nil {
		return nil, fmt.Errorf("script prelude: %w", err)
	}
	json := rt.Get("JSON").(*goja.Object)
	sb.parse, _ = goja.AssertFunction(json.Get("parse"))
	boolProto := rt.Get("Boolean").(*goja.Object).Get("prototype").(*goja.Object)
	sb.boolValueOf, _ = goja.AssertFunction(boolProto.Get("valueOf"))
	sb.rangeCtor = rt.Get("RangeError").(*goja.Object)
	if err := sb.bound(); err != nil {
		return nil, fmt.Errorf("script built-ins: %w", err)
	}
	strProto := rt.Get("String").(*goja.Object).Get("prototype").(*goja.Object)
	if err := sb.method(strProto, "localeCompare", sb.localeCompare); err != nil {
		return nil, fmt.Errorf("script built-ins: %w", err)
	}
	if err := sb.hostFunctions(); err != nil {
		return nil, fmt.Errorf("script host functions: %w", err)
	}
	return sb, nil
}

// start gives the run its Math.random, seeded with seed, and its Date
// clock, reading now.
func (sb *sandbox) start(seed uint64, now func() time.Time) {
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sb.rt.SetRandSource(rnd.Float64)
	sb.rt.SetTimeSource(now)
}

// warmSize is how many sandboxes a Service keeps built ahead.
const warmSize = 2

// warm keeps sandboxes built ahead of the runs that take them, so that a
// run does not wait for one to be built. A sandbox is never reused: each
// is taken once, and a script may change any global of its own. The zero
// value is ready.
type warm struct {
	mu      sync.Mutex
	limits  Limits
	ready   []*sandbox
	filling bool
}

// take returns a fresh sandbox for limits, one built ahead when one is ready.
func (w *warm) take(limits Limits) (*sandbox, error) {
	w.mu.Lock()
	if w.limits != limits {
		w.limits, w.ready = limits, nil
	}
	var sb *sandbox
	if n := len(w.ready); n > 0 {
		sb, w.ready = w.ready[n-1], w.ready[:n-1]
	}
	w.mu.Unlock()
	if sb != nil {
		return sb, nil
	}
	return newSandbox(limits)
}

// refill builds the next sandboxes in the background; a run calls it when
// it ends, so that it is not slowed by the building.
func (w *warm) refill(limits Limits) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limits != limits {
		w.limits, w.ready = limits, nil
	}
	if !w.filling && len(w.ready) < warmSize {
		w.filling = true
		go w.fill(limits)
	}
}

func (w *warm) fill(limits Limits) {
	for {
		sb, err := newSandbox(limits)
		w.mu.Lock()
		if err != nil || w.limits != limits || len(w.ready) >= warmSize {
			w.filling = false
			w.mu.Unlock()
			return
		}
		w.ready = append(w.ready, sb)
		w.mu.Unlock()
	}
}

// rangeError is a new RangeError (from the constructor the script started with).
func (sb *sandbox) rangeError(msg string) *goja.Object {
	o, err := sb.rt.New(sb.rangeCtor, sb.rt.ToValue(msg))
	if err != nil {
		panic(err)
	}
	return o
}

// check gives up a built-in's loop, every 1024 steps, once the run was
// stopped: the script's next step is then its interrupt.
func (sb *sandbox) check(i int64) {
	if i&1023 == 1023 && sb.stopped.Load() {
		panic(sb.rangeError("the script was stopped"))
	}
}

// mustCall calls f and passes on what it throws, as a native function must
// (an interrupt keeps unwinding the script).
func (sb *sandbox) mustCall(f goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := f(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// errPanic is a Go panic in the runtime's goroutine that is not a
// JavaScript exception: a bug, reported as internal, never a crash.
type errPanic struct {
	value any
	stack []byte
}

func (e *errPanic) Error() string { return fmt.Sprintf("panic in a script's runtime: %v", e.value) }

// guard runs f, which may run JavaScript, outside a running script (the
// result's encoding): an exception, an interrupt or a stack overflow comes
// back as an error instead of a panic.
func (sb *sandbox) guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(r)
		}
	}()
	if ex := sb.rt.Try(f); ex != nil {
		return ex
	}
	return nil
}

// recovered turns a recovered panic into an error.
func recovered(r any) error {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	if err, ok := r.(error); ok && (errors.As(err, &ie) || errors.As(err, &so) || errors.As(err, &ex)) {
		return err
	}
	return &errPanic{value: r, stack: debug.Stack()}
}

// native makes a Go function a JavaScript function with a name and length.
func (sb *sandbox) native(name string, length int, f func(goja.FunctionCall) goja.Value) *goja.Object {
	o := sb.rt.ToValue(f).(*goja.Object)
	_ = o.DefineDataProperty("name", sb.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = o.DefineDataProperty("length", sb.rt.ToValue(length), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	return o
}

// method replaces obj[name] with f, as built-in methods are defined
// (without their name and length: a dozen of them on every runtime would
// cost more than they are worth).
func (sb *sandbox) method(obj *goja.Object, name string, f func(goja.FunctionCall) goja.Value) error {
	return obj.DefineDataProperty(name, sb.rt.ToValue(f), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// original returns the built-in obj[name].
func original(obj *goja.Object, name string) (goja.Callable, error) {
	f, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return nil, fmt.Errorf("%s is not a function", name)
	}
	return f, nil
}

// bound replaces the built-ins that build or walk something whose size
// comes from an argument or a length (one native call goja cannot
// interrupt) with versions that refuse, with a RangeError, what would pass
// the string or array limit. Growth spread over many JavaScript steps is
// the memory watchdog's (see run).
func (sb *sandbox) bound() error {
	rt := sb.rt
	maxStr, maxArr := sb.limits.maxString(), sb.limits.maxArray()
	strProto := rt.Get("String").(*goja.Object).Get("prototype").(*goja.Object)
	arrCtor := rt.Get("Array").(*goja.Object)
	arrProto := arrCtor.Get("prototype").(*goja.Object)
	tooLong := func(what string, n int64, limit int64) {
		if n > limit {
			panic(sb.rangeError(fmt.Sprintf("%s: %d is over the script's limit of %d", what, n, limit)))
		}
	}
	strLen := func(v goja.Value) int64 {
		if s, ok := v.(goja.String); ok {
			return int64(s.Length())
		}
		return 0
	}
	// arrayLen is the length of an array-like object (0 for primitives, so
	// a string's length is counted by the string checks).
	arrayLen := func(v goja.Value) int64 {
		if o, ok := v.(*goja.Object); ok {
			return toLength(o.Get("length"))
		}
		if s, ok := v.(goja.String); ok {
			return int64(s.Length())
		}
		return 0
	}
	wrap := func(obj *goja.Object, name string, check func(call goja.FunctionCall)) error {
		orig, err := original(obj, name)
		if err != nil {
			return err
		}
		return sb.method(obj, name, func(call goja.FunctionCall) goja.Value {
			check(call)
			return sb.mustCall(orig, call.This, call.Arguments...)
		})
	}

	// Strings built from a count.
	errs := []error{
		wrap(strProto, "repeat", func(c goja.FunctionCall) {
			if n := c.Argument(0).ToFloat() * float64(strLen(c.This)); n > float64(maxStr) {
				tooLong("String.prototype.repeat: the result's length", int64(min(n, 1<<62)), maxStr)
			}
		}),
		wrap(strProto, "padStart", func(c goja.FunctionCall) {
			tooLong("String.prototype.padStart: the target length", int64(min(c.Argument(0).ToFloat(), 1<<53)), maxStr)
		}),
		wrap(strProto, "padEnd", func(c goja.FunctionCall) {
			tooLong("String.prototype.padEnd: the target length", int64(min(c.Argument(0).ToFloat(), 1<<53)), maxStr)
		}),
		wrap(strProto, "concat", func(c goja.FunctionCall) {
			n := strLen(c.This)
			for _, a := range c.Arguments {
				n += strLen(a)
			}
			tooLong("String.prototype.concat: the result's length", n, maxStr)
		}),
		wrap(strProto, "split", func(c goja.FunctionCall) {
			n, sep := strLen(c.This), c.Argument(0)
			if o, ok := sep.(*goja.Object); ok {
				if _, ok := goja.AssertFunction(o.GetSymbol(goja.SymSplit)); ok {
					return // a RegExp's split bounds its pieces itself (see split); another's is JavaScript
				}
			}
			if s, ok := sep.(goja.String); ok && s.Length() > 0 {
				n /= int64(s.Length())
			}
			if lim := c.Argument(1); !goja.IsUndefined(lim) {
				n = min(n, int64(uint32(lim.ToInteger())))
			}
			tooLong("String.prototype.split: the number of pieces", n, maxArr)
		}),
		sb.boundReplace(strProto, "replace", maxStr),
		sb.boundReplace(strProto, "replaceAll", maxStr),
		wrap(arrCtor, "from", func(c goja.FunctionCall) {
			tooLong("Array.from: the length", arrayLen(c.Argument(0)), maxArr)
		}),
	}
	// Array methods walk this.length in Go whatever the array holds (a
	// sparse array of length 2^32-1 holds nothing): bound the length.
	for _, name := range []string{"concat", "copyWithin", "every", "fill", "filter", "find", "findIndex", "findLast",
		"findLastIndex", "flat", "flatMap", "forEach", "includes", "indexOf", "lastIndexOf", "map", "reduce", "reduceRight",
		"reverse", "shift", "slice", "some", "sort", "splice", "toLocaleString", "toReversed", "toSorted", "toSpliced",
		"unshift", "with"} {
		name := name
		errs = append(errs, wrap(arrProto, name, func(c goja.FunctionCall) {
			n := arrayLen(c.This)
			if name == "concat" {
				for _, a := range c.Arguments {
					n += max(arrayLen(a), 1)
				}
			}
			tooLong("Array.prototype."+name+": the length", n, maxArr)
			if name == "flat" {
				sb.flatLength(c.This, c.Argument(0), maxArr)
			}
		}))
	}
	errs = append(errs, sb.boundRegExp())
	errs = append(errs, sb.method(arrProto, "join", func(c goja.FunctionCall) goja.Value {
		return sb.join(c, maxStr, maxArr)
	}))
	json := rt.Get("JSON").(*goja.Object)
	errs = append(errs, sb.method(json, "stringify", func(c goja.FunctionCall) goja.Value {
		return sb.stringify(c, int(min(maxStr, 1<<31-1)))
	}))
	return errors.Join(errs...)
}

// flatLength refuses Array.prototype.flat when the flattened array would
// pass the limit (one array shared many times flattens to many copies).
func (sb *sandbox) flatLength(this, depth goja.Value, limit int64) {
	d := int64(1)
	if !goja.IsUndefined(depth) {
		d = int64(min(max(depth.ToFloat(), 0), 1<<20))
	}
	var total int64
	add := func(n int64) {
		if total += n; total > limit {
			panic(sb.rangeError(fmt.Sprintf("Array.prototype.flat: the result's length is over the script's limit of %d", limit)))
		}
	}
	var walk func(o *goja.Object, d int64)
	walk = func(o *goja.Object, d int64) {
		n := toLength(o.Get("length"))
		for i := int64(0); i < n; i++ {
			sb.check(i)
			el, ok := o.Get(strconv.FormatInt(i, 10)).(*goja.Object)
			switch {
			case d == 0 || !ok || el.ClassName() != "Array":
				add(1)
			case d == 1:
				add(toLength(el.Get("length")))
			default:
				walk(el, d-1)
			}
		}
	}
	if o, ok := this.(*goja.Object); ok {
		walk(o, d)
	}
}

// join is Array.prototype.join, building the string within the limit.
func (sb *sandbox) join(c goja.FunctionCall, maxStr, maxArr int64) goja.Value {
	o := c.This.ToObject(sb.rt)
	n := toLength(o.Get("length"))
	if n > maxArr {
		panic(sb.rangeError(fmt.Sprintf("Array.prototype.join: the length %d is over the script's limit of %d", n, maxArr)))
	}
	sep := ","
	if s := c.Argument(0); !goja.IsUndefined(s) {
		sep = s.String()
	}
	var b strings.Builder
	size := int64(0)
	add := func(s string) {
		if size += int64(len(s)); size > maxStr {
			panic(sb.rangeError(fmt.Sprintf("Array.prototype.join: the result is over the script's limit of %d characters", maxStr)))
		}
		b.WriteString(s)
	}
	for i := int64(0); i < n; i++ {
		sb.check(i)
		if i > 0 {
			add(sep)
		}
		el := o.Get(strconv.FormatInt(i, 10))
		if el == nil || goja.IsUndefined(el) || goja.IsNull(el) {
			continue
		}
		if s, ok := el.(goja.String); ok && size+int64(s.Length()) > maxStr {
			panic(sb.rangeError(fmt.Sprintf("Array.prototype.join: the result is over the script's limit of %d characters", maxStr)))
		}
		add(el.String())
	}
	return sb.rt.ToValue(b.String())
}

// stringify is JSON.stringify on the bounded encoder.
func (sb *sandbox) stringify(c goja.FunctionCall, limit int) goja.Value {
	e := sb.newEncoder(limit)
	if r, ok := c.Argument(1).(*goja.Object); ok {
		if f, ok := goja.AssertFunction(r); ok {
			e.replacer = f
		} else if r.ClassName() == "Array" {
			e.keys = []string{}
			seen := map[string]bool{}
			n := toLength(r.Get("length"))
			for i := int64(0); i < n && i < sb.limits.maxArray(); i++ {
				v := r.Get(strconv.FormatInt(i, 10))
				var k string
				switch x := v.(type) {
				case goja.String:
					k = x.String()
				case *goja.Object:
					if cn := x.ClassName(); cn != "String" && cn != "Number" {
						continue
					}
					k = x.String()
				default:
					if !goja.IsNumber(v) {
						continue
					}
					k = v.String()
				}
				if !seen[k] {
					seen[k] = true
					e.keys = append(e.keys, k)
				}
			}
		}
	}
	space := c.Argument(2)
	if o, ok := space.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			space = o.ToNumber()
		case "String":
			space = sb.rt.ToValue(o.String())
		}
	}
	switch {
	case goja.IsNumber(space):
		e.gap = strings.Repeat(" ", int(min(max(space.ToFloat(), 0), 10)))
	case goja.IsString(space):
		s := space.(goja.String)
		e.gap = s.Substring(0, min(s.Length(), 10)).String()
	}
	b, ok := e.encode(c.Argument(0))
	if !ok {
		return goja.Undefined()
	}
	return sb.rt.ToValue(string(b))
}

// boundReplace wraps String.prototype.replace or replaceAll so that the
// replacement goes through a function that counts what it adds: the
// result stays within the limit whatever the pattern matches. A
// replacement string keeps its $ patterns (GetSubstitution).
func (sb *sandbox) boundReplace(proto *goja.Object, name string, limit int64) error {
	orig, err := original(proto, name)
	if err != nil {
		return err
	}
	return sb.method(proto, name, func(c goja.FunctionCall) goja.Value {
		budget := limit
		if s, ok := c.This.(goja.String); ok {
			budget -= int64(s.Length())
		}
		calls := int64(0)
		spend := func(s string) goja.Value {
			calls++
			sb.check(calls)
			if budget -= int64(len(s)); budget < 0 {
				panic(sb.rangeError(fmt.Sprintf("String.prototype.%s: the result is over the script's limit of %d characters", name, limit)))
			}
			return sb.rt.ToValue(s)
		}
		var repl goja.Value
		if f, ok := goja.AssertFunction(c.Argument(1)); ok {
			repl = sb.rt.ToValue(func(a goja.FunctionCall) goja.Value {
				return spend(sb.mustCall(f, goja.Undefined(), a.Arguments...).String())
			})
		} else {
			tmpl := c.Argument(1).String()
			repl = sb.rt.ToValue(func(a goja.FunctionCall) goja.Value {
				return spend(substitute(tmpl, a.Arguments))
			})
		}
		return sb.mustCall(orig, c.This, c.Argument(0), repl)
	})
}

// substitute is GetSubstitution: the replacement template with $$, $&,
// $`, $', $n, $nn and $<name> expanded, given the arguments a replace
// function receives (matched, captures..., position, string[, groups]).
func substitute(tmpl string, args []goja.Value) string {
	if !strings.Contains(tmpl, "$") || len(args) < 3 {
		return tmpl
	}
	var groups *goja.Object
	if g, ok := args[len(args)-1].(*goja.Object); ok {
		groups, args = g, args[:len(args)-1]
	}
	matched := args[0].String()
	str, _ := args[len(args)-1].(goja.String)
	pos := int(args[len(args)-2].ToInteger())
	// Positions count UTF-16 code units, as the string does.
	slice := func(from, to int) string {
		if str == nil {
			return ""
		}
		n := str.Length()
		from, to = min(max(from, 0), n), min(max(to, 0), n)
		if from >= to {
			return ""
		}
		return str.Substring(from, to).String()
	}
	matchLen := 0
	if m, ok := args[0].(goja.String); ok {
		matchLen = m.Length()
	}
	captures := args[1 : len(args)-2]
	capture := func(i int) string {
		if v := captures[i-1]; v != nil && !goja.IsUndefined(v) {
			return v.String()
		}
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		ch := tmpl[i]
		if ch != '$' || i+1 == len(tmpl) {
			b.WriteByte(ch)
			continue
		}
		next := tmpl[i+1]
		switch {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '&':
			b.WriteString(matched)
			i++
		case next == '`':
			b.WriteString(slice(0, pos))
			i++
		case next == '\'':
			b.WriteString(slice(pos+matchLen, 1<<31-1))
			i++
		case next >= '0' && next <= '9':
			d := int(next - '0')
			if i+2 < len(tmpl) && tmpl[i+2] >= '0' && tmpl[i+2] <= '9' {
				if dd := d*10 + int(tmpl[i+2]-'0'); dd >= 1 && dd <= len(captures) {
					b.WriteString(capture(dd))
					i += 2
					continue
				}
			}
			if d >= 1 && d <= len(captures) {
				b.WriteString(capture(d))
				i++
				continue
			}
			b.WriteByte('$')
		case next == '<' && groups != nil:
			end := strings.IndexByte(tmpl[i+2:], '>')
			if end < 0 {
				b.WriteByte('$')
				continue
			}
			if v := groups.Get(tmpl[i+2 : i+2+end]); v != nil && !goja.IsUndefined(v) {
				b.WriteString(v.String())
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
