package callbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxDepth is the deepest nesting of arrays and objects accepted when
// Options.MaxDepth is zero.
const DefaultMaxDepth = 64

// maxMaxDepth caps Options.MaxDepth (jsontext's own limit).
const maxMaxDepth = 10000

// MaxNumberLen is the longest number literal accepted, in bytes. It is
// checked before any arithmetic, so no literal costs more than a bounded
// amount of work. Every 64-bit float can be written exactly in far fewer
// bytes (the longest useful form, 0.000…0005 for the smallest subnormal, is
// under 330).
const MaxNumberLen = 1024

// Options tunes the strict reader; a nil *Options means the defaults.
type Options struct {
	// MaxDepth is the deepest nesting of arrays and objects accepted: 1
	// allows [1,2] but not [[1]]. Zero means DefaultMaxDepth; values above
	// 10000 are treated as 10000.
	MaxDepth int
}

func (o *Options) maxDepth() int {
	switch {
	case o == nil || o.MaxDepth <= 0:
		return DefaultMaxDepth
	case o.MaxDepth > maxMaxDepth:
		return maxMaxDepth
	}
	return o.MaxDepth
}

// textOptions are jsontext's rules that are also ours (they are its
// defaults, spelt out): a name twice in one object and invalid UTF-8 are
// refused.
var textOptions = []jsontext.Options{jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)}

// ParseJSON reads data as exactly one JSON value under the strict rules of
// the package documentation. The value is built from map[string]any, []any,
// json.Number (the literal as written), string, bool and nil. Any refusal is
// an *Error wrapping one of ErrSyntax, ErrDuplicateKey, ErrTooDeep,
// ErrNumber, ErrString or ErrTrailingData.
func ParseJSON(data []byte, opts *Options) (any, error) {
	r := newReader(data, opts, true)
	defer r.release()
	return r.document()
}

// Valid reports whether data is accepted by ParseJSON, without building the
// value. The error is ParseJSON's.
func Valid(data []byte, opts *Options) error {
	r := newReader(data, opts, false)
	defer r.release()
	_, err := r.document()
	return err
}

// reader walks jsontext's tokens, which check the grammar, UTF-8 and
// duplicate names, and adds our rules: the depth limit, the number
// round trip, nothing after the value. With build false it only validates.
type reader struct {
	dec      jsontext.Decoder
	src      bytes.Buffer
	data     []byte
	maxDepth int
	build    bool
	scratch  [32]byte
}

// readers keeps decoders for reuse: a jsontext.Decoder is large, and the
// gateway reads every call's envelope and body.
var readers = sync.Pool{New: func() any { return new(reader) }}

func newReader(data []byte, opts *Options, build bool) *reader {
	r := readers.Get().(*reader)
	r.src = *bytes.NewBuffer(data)
	r.dec.Reset(&r.src, textOptions...)
	r.data, r.maxDepth, r.build = data, opts.maxDepth(), build
	return r
}

// release returns r to the pool holding nothing of the input, so a pooled
// reader does not keep the last body alive.
func (r *reader) release() {
	r.data, r.src = nil, bytes.Buffer{}
	r.dec.Reset(&r.src)
	readers.Put(r)
}

func (r *reader) fail(kind error, off int, ptr jsontext.Pointer, format string, args ...any) *Error {
	return &Error{Kind: kind, Path: r.path(ptr), Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// next is the offset of the next byte after white space, from the end of
// the last token read.
func (r *reader) next() int {
	i := int(r.dec.InputOffset())
	for i < len(r.data) && (r.data[i] == ' ' || r.data[i] == '\t' || r.data[i] == '\n' || r.data[i] == '\r') {
		i++
	}
	return i
}

func (r *reader) document() (any, error) {
	if bytes.HasPrefix(r.data, []byte("\xEF\xBB\xBF")) {
		return nil, r.fail(ErrSyntax, 0, "", "byte order mark before the value")
	}
	if r.next() == len(r.data) {
		return nil, r.fail(ErrSyntax, len(r.data), "", "no JSON value (empty body)")
	}
	v, err := r.value()
	if err != nil {
		return nil, err
	}
	if i := r.next(); i < len(r.data) {
		return nil, r.fail(ErrTrailingData, i, "", "%d more bytes", len(r.data)-i)
	}
	return v, nil
}

// value reads the next value; StackDepth arrays and objects are around it.
func (r *reader) value() (any, error) {
	switch k := r.dec.PeekKind(); k {
	case '{', '[':
		if r.dec.StackDepth() >= r.maxDepth {
			at := int(r.dec.InputOffset()) // then white space, a : or a , and the bracket
			at += bytes.IndexAny(r.data[at:], "[{")
			return nil, r.fail(ErrTooDeep, at, r.dec.StackPointer(), "more than %d levels of arrays and objects", r.maxDepth)
		}
		if _, err := r.dec.ReadToken(); err != nil {
			return nil, r.refusal(err)
		}
		if k == '{' {
			return r.object()
		}
		return r.array()
	case '0':
		return r.number()
	case '"':
		t, err := r.dec.ReadToken()
		if err != nil || !r.build {
			return nil, r.refusal(err)
		}
		return t.String(), nil
	default:
		t, err := r.dec.ReadToken()
		if err != nil {
			return nil, r.refusal(err)
		}
		if t.Kind() == 'n' {
			return nil, nil
		}
		return t.Bool(), nil
	}
}

func (r *reader) object() (any, error) {
	var m map[string]any
	if r.build {
		m = map[string]any{}
	}
	for r.dec.PeekKind() != '}' {
		name, err := r.dec.ReadToken()
		if err != nil {
			return nil, r.refusal(err)
		}
		var k string
		if r.build {
			k = name.String() // before the next read voids the token
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if r.build {
			m[k] = v
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.refusal(err)
	}
	return m, nil
}

func (r *reader) array() (any, error) {
	var a []any
	if r.build {
		a = []any{}
	}
	for r.dec.PeekKind() != ']' {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if r.build {
			a = append(a, v)
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.refusal(err)
	}
	return a, nil
}

// number reads a number literal and checks that it survives a round trip;
// the value is the literal as a json.Number.
func (r *reader) number() (any, error) {
	lit, err := r.dec.ReadValue()
	if err != nil {
		return nil, r.refusal(err)
	}
	start := int(r.dec.InputOffset()) - len(lit)
	if end := start + len(lit); (string(lit) == "0" || string(lit) == "-0") && end < len(r.data) && '0' <= r.data[end] && r.data[end] <= '9' {
		return nil, r.fail(ErrSyntax, start, r.dec.StackPointer(), "number with a leading zero")
	}
	if len(lit) > MaxNumberLen {
		return nil, r.fail(ErrNumber, start, r.dec.StackPointer(), "%d bytes long, more than %d", len(lit), MaxNumberLen)
	}
	if detail := roundTrip(lit, r.scratch[:0]); detail != "" {
		return nil, r.fail(ErrNumber, start, r.dec.StackPointer(), "%s %s", shorten(lit), detail)
	}
	if !r.build {
		return nil, nil
	}
	return json.Number(lit), nil
}

// refusal turns jsontext's error into an *Error. In a string (a name or a
// value) a control character, invalid UTF-8 and an unpaired surrogate
// escape are ErrString.
func (r *reader) refusal(err error) error {
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	switch {
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return r.fail(ErrSyntax, len(r.data), r.dec.StackPointer(), "unexpected end of input")
	case !errors.As(err, &se):
		return r.fail(ErrSyntax, -1, "", "%v", err)
	case se.Err == jsontext.ErrDuplicateName:
		return r.fail(ErrDuplicateKey, int(se.ByteOffset), se.JSONPointer.Parent(), "%s appears twice", quoteKey(se.JSONPointer.LastToken()))
	}
	off := int(se.ByteOffset)
	kind, detail := ErrSyntax, se.Err.Error()
	token := int(r.dec.InputOffset()) // the failed token starts after white space, a : or a ,
	for token < len(r.data) && bytes.IndexByte([]byte(" \t\r\n:,"), r.data[token]) >= 0 {
		token++
	}
	if token < off && off < len(r.data) && r.data[token] == '"' {
		switch c := r.data[off]; {
		case c == '\\':
			if u, ok := hex4(r.data, off+2); ok && off+1 < len(r.data) && r.data[off+1] == 'u' && 0xD800 <= u && u < 0xE000 {
				kind, detail = ErrString, fmt.Sprintf(`\u%04x is a high surrogate without its low surrogate`, u)
				if u >= 0xDC00 {
					detail = fmt.Sprintf(`\u%04x is a low surrogate without its high surrogate`, u)
				}
			} else {
				detail = "invalid escape: " + detail
			}
		case c < 0x20:
			kind, detail = ErrString, fmt.Sprintf("control character U+%04X must be escaped", c)
		case c >= 0x80:
			kind, detail = ErrString, "invalid UTF-8"
		}
	}
	return r.fail(kind, off, se.JSONPointer, "%s", detail)
}

// path renders ptr as "$.items[3]": the decoder's stack says which tokens
// index an array. For a name the library adds at the end (a duplicate, an
// error inside a name's value) the token is a key; a refusal at the start
// of an array's next element names that element.
func (r *reader) path(ptr jsontext.Pointer) string {
	var segs []pathSeg
	level := 1
	for tok := range ptr.Tokens() {
		seg := pathSeg{key: tok, isKey: true}
		if level <= r.dec.StackDepth() {
			if k, _ := r.dec.StackIndex(level); k == '[' {
				seg = pathSeg{isKey: false}
				seg.index, _ = strconv.Atoi(tok)
			}
		}
		segs = append(segs, seg)
		level++
	}
	if level == r.dec.StackDepth() {
		if k, n := r.dec.StackIndex(level); k == '[' && n > 0 {
			segs = append(segs, pathSeg{index: int(n)})
		}
	}
	return formatPath(segs)
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	r, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(r), err == nil
}

// shorten returns lit for a message, cut to 40 bytes.
func shorten(lit []byte) string {
	if len(lit) > 40 {
		return string(lit[:40]) + "…"
	}
	return string(lit)
}
