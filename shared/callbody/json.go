package callbody

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxDepth is the deepest nesting of arrays and objects accepted when
// Options.MaxDepth is zero.
const DefaultMaxDepth = 64

// maxMaxDepth caps Options.MaxDepth: the parser recurses once per level.
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

// ParseJSON reads data as exactly one JSON value under the strict rules of
// the package documentation. The value is built from map[string]any, []any,
// json.Number (the literal as written), string, bool and nil. Any refusal is
// an *Error wrapping one of ErrSyntax, ErrDuplicateKey, ErrTooDeep,
// ErrNumber, ErrString or ErrTrailingData.
func ParseJSON(data []byte, opts *Options) (any, error) {
	p := parser{data: data, maxDepth: opts.maxDepth(), build: true}
	return p.document(nil)
}

// Valid reports whether data is accepted by ParseJSON, without building the
// value (object keys are still decoded, to find duplicates). The error is
// ParseJSON's.
func Valid(data []byte, opts *Options) error {
	p := parser{data: data, maxDepth: opts.maxDepth()}
	_, err := p.document(nil)
	return err
}

// parser is a recursive-descent reader over data. With build false it only
// validates. With a type t (DecodeStrict), object keys are also checked
// against the struct fields t describes.
type parser struct {
	data     []byte
	i        int
	maxDepth int
	build    bool
	path     []pathSeg
	scratch  [32]byte
}

func (p *parser) fail(kind error, off int, format string, args ...any) *Error {
	return &Error{Kind: kind, Path: formatPath(p.path), Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// unexpected reports the byte at p.i (or the end of the input) as a syntax error.
func (p *parser) unexpected(want string) *Error {
	if p.i >= len(p.data) {
		return p.fail(ErrSyntax, p.i, "unexpected end of input, want %s", want)
	}
	c := p.data[p.i]
	if c < utf8.RuneSelf && strconv.IsPrint(rune(c)) {
		return p.fail(ErrSyntax, p.i, "unexpected %q, want %s", c, want)
	}
	return p.fail(ErrSyntax, p.i, "unexpected byte 0x%02x, want %s", c, want)
}

func (p *parser) document(t *typeInfo) (any, error) {
	if len(p.data) >= 3 && p.data[0] == 0xEF && p.data[1] == 0xBB && p.data[2] == 0xBF {
		return nil, p.fail(ErrSyntax, 0, "byte order mark before the value")
	}
	p.ws()
	if p.i >= len(p.data) {
		return nil, p.fail(ErrSyntax, p.i, "no JSON value (empty body)")
	}
	v, err := p.value(0, t)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(p.data) {
		return nil, p.fail(ErrTrailingData, p.i, "%d more bytes", len(p.data)-p.i)
	}
	return v, nil
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads the value at p.i (white space already skipped); depth is the
// number of arrays and objects around it.
func (p *parser) value(depth int, t *typeInfo) (any, error) {
	if p.i >= len(p.data) {
		return nil, p.unexpected("a value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth, t)
	case c == '[':
		return p.array(depth, t)
	case c == '"':
		s, err := p.str()
		if err != nil || !p.build {
			return nil, err
		}
		return s, nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected("a value")
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return p.unexpected("a value")
	}
	p.i += len(word)
	return nil
}

func (p *parser) object(depth int, t *typeInfo) (any, error) {
	start := p.i
	if depth+1 > p.maxDepth {
		return nil, p.fail(ErrTooDeep, start, "more than %d levels of arrays and objects", p.maxDepth)
	}
	p.i++ // {
	var m map[string]any
	var seen map[string]struct{}
	if p.build {
		m = map[string]any{}
	} else {
		seen = map[string]struct{}{}
	}
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, p.unexpected("a string key")
		}
		keyAt := p.i
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.unexpected(`":" after the key`)
		}
		p.i++
		p.ws()
		if p.build {
			if _, dup := m[k]; dup {
				return nil, p.fail(ErrDuplicateKey, keyAt, "%s appears twice", quoteKey(k))
			}
		} else {
			if _, dup := seen[k]; dup {
				return nil, p.fail(ErrDuplicateKey, keyAt, "%s appears twice", quoteKey(k))
			}
			seen[k] = struct{}{}
		}
		p.path = append(p.path, pathSeg{key: k, isKey: true})
		ft, err := t.field(p, k, keyAt)
		if err != nil {
			return nil, err
		}
		v, err := p.value(depth+1, ft)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		if p.build {
			m[k] = v
		}
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.unexpected(`"," or "}"`)
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.unexpected(`"," or "}"`)
		}
	}
}

func (p *parser) array(depth int, t *typeInfo) (any, error) {
	start := p.i
	if depth+1 > p.maxDepth {
		return nil, p.fail(ErrTooDeep, start, "more than %d levels of arrays and objects", p.maxDepth)
	}
	p.i++ // [
	var a []any
	if p.build {
		a = []any{}
	}
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return a, nil
	}
	et := t.element()
	for n := 0; ; n++ {
		p.ws()
		p.path = append(p.path, pathSeg{index: n})
		v, err := p.value(depth+1, et)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		if p.build {
			a = append(a, v)
		}
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.unexpected(`"," or "]"`)
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.unexpected(`"," or "]"`)
		}
	}
}

// str reads the string at p.i (an opening quote) and returns it decoded.
func (p *parser) str() (string, error) {
	start := p.i + 1
	for i := start; i < len(p.data); i++ {
		c := p.data[i]
		if c == '"' {
			p.i = i + 1
			return string(p.data[start:i]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return p.strSlow(start)
		}
	}
	return "", p.fail(ErrSyntax, p.i, "unterminated string")
}

// strSlow decodes a string with escapes or non-ASCII bytes from start (just
// after the opening quote).
func (p *parser) strSlow(start int) (string, error) {
	buf := make([]byte, 0, 32)
	i := start
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(buf), nil
		case c == '\\':
			if i+1 >= len(p.data) {
				return "", p.fail(ErrSyntax, i, "unterminated string")
			}
			esc := p.data[i+1]
			switch esc {
			case '"', '\\', '/':
				buf = append(buf, esc)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(p.data, i+2)
				if !ok {
					return "", p.fail(ErrSyntax, i, `\u needs four hexadecimal digits`)
				}
				n := 6
				switch {
				case 0xD800 <= r && r < 0xDC00:
					lo, ok := rune(0), false
					if i+7 < len(p.data) && p.data[i+6] == '\\' && p.data[i+7] == 'u' {
						lo, ok = hex4(p.data, i+8)
					}
					if !ok || lo < 0xDC00 || lo >= 0xE000 {
						return "", p.fail(ErrString, i, `\u%04x is a high surrogate without its low surrogate`, r)
					}
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					n = 12
				case 0xDC00 <= r && r < 0xE000:
					return "", p.fail(ErrString, i, `\u%04x is a low surrogate without its high surrogate`, r)
				}
				buf = utf8.AppendRune(buf, r)
				i += n
				continue
			default:
				return "", p.fail(ErrSyntax, i, "invalid escape \\%c", esc)
			}
			i += 2
		case c < 0x20:
			return "", p.fail(ErrString, i, "control character U+%04X must be escaped", c)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail(ErrString, i, "invalid UTF-8")
			}
			buf = append(buf, p.data[i:i+size]...)
			i += size
		}
	}
	return "", p.fail(ErrSyntax, len(p.data), "unterminated string")
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads a number literal (RFC 8259 grammar) and checks that it
// survives a round trip; the value is the literal as a json.Number.
func (p *parser) number() (any, error) {
	start := p.i
	d := p.data
	i := start
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
		if i < len(d) && '0' <= d[i] && d[i] <= '9' {
			return nil, p.fail(ErrSyntax, start, "number with a leading zero")
		}
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		p.i = i
		return nil, p.unexpected("a digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			p.i = i
			return nil, p.unexpected("a digit after the decimal point")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			p.i = i
			return nil, p.unexpected("a digit in the exponent")
		}
	}
	lit := d[start:i]
	if len(lit) > MaxNumberLen {
		return nil, p.fail(ErrNumber, start, "%d bytes long, more than %d", len(lit), MaxNumberLen)
	}
	if detail := roundTrip(lit, p.scratch[:0]); detail != "" {
		return nil, p.fail(ErrNumber, start, "%s %s", shorten(lit), detail)
	}
	p.i = i
	if !p.build {
		return nil, nil
	}
	return json.Number(lit), nil
}

// shorten returns lit for a message, cut to 40 bytes.
func shorten(lit []byte) string {
	if len(lit) > 40 {
		return string(lit[:40]) + "…"
	}
	return string(lit)
}
