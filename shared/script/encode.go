package script

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// maxNesting bounds how deeply nested a value may be encoded.
const maxNesting = 1000

// encoder writes goja values as JSON exactly as JSON.stringify does, but
// never past limit bytes: the script's result, call bodies, console.log
// arguments, and JSON.stringify itself (so that one call cannot build a
// huge string from a small value that shares references). It runs in the
// runtime's goroutine; JavaScript it calls (toJSON, getters, a replacer,
// proxy traps) may throw or be interrupted, which panics as a native
// function's failure does in goja: callers outside a running script guard
// it (see sandbox.guard).
type encoder struct {
	sb       *sandbox
	limit    int
	buf      []byte
	stack    []*goja.Object
	replacer goja.Callable
	// keys is the replacer array's property list; nil means every key.
	keys []string
	gap  string
	// indent is the current indentation (gap repeated by depth).
	indent string
	// over is set when the limit was reached, to tell it from a script error.
	over bool
}

func (sb *sandbox) newEncoder(limit int) *encoder {
	return &encoder{sb: sb, limit: limit}
}

// encode returns v as JSON; ok is false when JSON.stringify would give
// undefined (undefined, a function, a symbol).
func (e *encoder) encode(v goja.Value) (b []byte, ok bool) {
	e.buf = e.buf[:0]
	var holder *goja.Object
	if e.replacer != nil {
		holder = e.sb.rt.NewObject()
		if err := holder.Set("", v); err != nil {
			panic(err)
		}
	}
	if !e.value(holder, "", v) {
		return nil, false
	}
	return e.buf, true
}

// tooLarge stops the encoding with a RangeError.
func (e *encoder) tooLarge() {
	e.over = true
	panic(e.sb.rangeError("the JSON is longer than " + strconv.Itoa(e.limit) + " bytes"))
}

func (e *encoder) grow(n int) {
	if len(e.buf)+n > e.limit {
		e.tooLarge()
	}
}

func (e *encoder) write(s string) {
	e.grow(len(s))
	e.buf = append(e.buf, s...)
}

// value writes the JSON of holder[key] = v (SerializeJSONProperty); false
// means nothing was written (undefined).
func (e *encoder) value(holder *goja.Object, key string, v goja.Value) bool {
	if o, ok := v.(*goja.Object); ok {
		if f, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			v = e.sb.mustCall(f, o, e.sb.rt.ToValue(key))
		}
	}
	if e.replacer != nil {
		v = e.sb.mustCall(e.replacer, holder, e.sb.rt.ToValue(key), v)
	}
	if o, ok := v.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			v = e.sb.rt.ToValue(o.ToNumber())
		case "String":
			v = e.sb.rt.ToValue(o.String())
		case "Boolean":
			v = e.sb.mustCall(e.sb.boolValueOf, o)
		case "BigInt":
			panic(e.sb.rt.NewTypeError("Do not know how to serialize a BigInt"))
		}
	}
	switch x := v.(type) {
	case nil:
		return false
	case *goja.Symbol:
		return false
	case *goja.Object:
		if _, ok := goja.AssertFunction(x); ok {
			return false
		}
		if x.ClassName() == "Array" {
			e.array(x)
		} else {
			e.object(x)
		}
		return true
	}
	switch {
	case goja.IsUndefined(v):
		return false
	case goja.IsNull(v):
		e.write("null")
	case goja.IsBigInt(v):
		panic(e.sb.rt.NewTypeError("Do not know how to serialize a BigInt"))
	case goja.IsString(v):
		e.quote(v.(goja.String))
	case goja.IsNumber(v):
		if goja.IsNaN(v) || goja.IsInfinity(v) {
			e.write("null")
		} else {
			e.write(v.String())
		}
	default: // a boolean
		if v.ToBoolean() {
			e.write("true")
		} else {
			e.write("false")
		}
	}
	return true
}

// enter guards against cycles and deep nesting.
func (e *encoder) enter(o *goja.Object) {
	for _, s := range e.stack {
		if s == o {
			panic(e.sb.rt.NewTypeError("Converting circular structure to JSON"))
		}
	}
	if len(e.stack) >= maxNesting {
		panic(e.sb.rangeError("the value is nested more than " + strconv.Itoa(maxNesting) + " levels deep"))
	}
	e.stack = append(e.stack, o)
}

func (e *encoder) leave() { e.stack = e.stack[:len(e.stack)-1] }

func (e *encoder) array(o *goja.Object) {
	e.enter(o)
	defer e.leave()
	n := toLength(o.Get("length"))
	// Every element takes at least a byte: refuse at once what cannot fit.
	if n > int64(e.limit-len(e.buf)) {
		e.tooLarge()
	}
	if n == 0 {
		e.write("[]")
		return
	}
	outer := e.indent
	e.indent += e.gap
	e.write("[")
	for i := int64(0); i < n; i++ {
		e.sb.check(i)
		if i > 0 {
			e.write(",")
		}
		e.newline()
		k := strconv.FormatInt(i, 10)
		if !e.value(o, k, o.Get(k)) {
			e.write("null")
		}
	}
	e.indent = outer
	e.newline()
	e.write("]")
}

func (e *encoder) object(o *goja.Object) {
	e.enter(o)
	defer e.leave()
	keys := e.keys
	if keys == nil {
		keys = o.Keys()
	}
	outer := e.indent
	e.indent += e.gap
	e.write("{")
	n := 0
	for i, k := range keys {
		e.sb.check(int64(i))
		mark := len(e.buf)
		if n > 0 {
			e.write(",")
		}
		e.newline()
		e.quote(e.sb.rt.ToValue(k).(goja.String))
		e.write(":")
		if e.gap != "" {
			e.write(" ")
		}
		if !e.value(o, k, o.Get(k)) {
			e.buf = e.buf[:mark]
			continue
		}
		n++
	}
	e.indent = outer
	if n > 0 {
		e.newline()
	}
	e.write("}")
}

func (e *encoder) newline() {
	if e.gap != "" {
		e.write("\n")
		e.write(e.indent)
	}
}

// quote writes a string as JSON.stringify does: the escapes of
// QuoteJSONString, lone surrogates as \uXXXX, everything else as UTF-8.
func (e *encoder) quote(s goja.String) {
	// Every code unit takes at least a byte.
	if s.Length()+2 > e.limit-len(e.buf) {
		e.tooLarge()
	}
	str := s.String()
	if utf8.ValidString(str) && !strings.ContainsRune(str, utf8.RuneError) {
		e.grow(len(str) + 2)
		e.buf = append(e.buf, '"')
		for i := 0; i < len(str); {
			j := i
			for j < len(str) && str[j] >= 0x20 && str[j] != '"' && str[j] != '\\' {
				j++
			}
			e.buf = append(e.buf, str[i:j]...)
			if j < len(str) {
				e.byte(str[j])
				j++
			}
			i = j
		}
		e.buf = append(e.buf, '"')
		return
	}
	// A string with lone surrogates (or U+FFFD): walk its code units.
	e.write(`"`)
	n := s.Length()
	for i := 0; i < n; i++ {
		c := s.CharAt(i)
		switch {
		case c < 0x80:
			e.grow(1)
			e.byte(byte(c))
		case c >= 0xd800 && c < 0xdc00 && i+1 < n && s.CharAt(i+1) >= 0xdc00 && s.CharAt(i+1) < 0xe000:
			r := (rune(c)-0xd800)<<10 | (rune(s.CharAt(i+1)) - 0xdc00) + 0x10000
			e.grow(4)
			e.buf = utf8.AppendRune(e.buf, r)
			i++
		case c >= 0xd800 && c < 0xe000:
			e.write(`\u` + strconv.FormatUint(uint64(c), 16))
		default:
			e.grow(3)
			e.buf = utf8.AppendRune(e.buf, rune(c))
		}
	}
	e.write(`"`)
}

// byte appends one byte of a string, escaped; the caller reserved one byte.
func (e *encoder) byte(c byte) {
	switch c {
	case '"':
		e.esc(`\"`)
	case '\\':
		e.esc(`\\`)
	case '\b':
		e.esc(`\b`)
	case '\f':
		e.esc(`\f`)
	case '\n':
		e.esc(`\n`)
	case '\r':
		e.esc(`\r`)
	case '\t':
		e.esc(`\t`)
	default:
		if c < 0x20 {
			e.esc(`\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
			return
		}
		e.buf = append(e.buf, c)
	}
}

// esc appends an escape in place of one reserved byte.
func (e *encoder) esc(s string) {
	e.grow(len(s) - 1)
	e.buf = append(e.buf, s...)
}

// toLength is ToLength of a value: an integer from 0 to 2^53-1.
func toLength(v goja.Value) int64 {
	if v == nil || goja.IsUndefined(v) {
		return 0
	}
	f := v.ToFloat()
	switch {
	case f != f || f <= 0:
		return 0
	case f > 1<<53-1:
		return 1<<53 - 1
	}
	return int64(f)
}
