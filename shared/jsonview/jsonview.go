package jsonview

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/display"
)

// Defaults used when the corresponding Limits field is zero.
const (
	DefaultMaxBytes  = 16 << 10
	DefaultMaxDepth  = 16
	DefaultMaxItems  = 200
	DefaultMaxString = 1 << 10
)

// Bounds on the limits themselves: the output is never longer than
// MaxBytes, which needs room for the closing brackets and markers of
// MaxDepth levels.
const (
	minMaxBytes = 1 << 10
	maxMaxDepth = 32
	minMaxItem  = 1
	minMaxStr   = 16
)

// Limits bounds a rendering; a nil *Limits, or a zero field, means the
// default.
type Limits struct {
	// MaxBytes bounds the output, in bytes (DefaultMaxBytes; at least 1024).
	MaxBytes int
	// MaxDepth is how many levels of arrays and objects are shown
	// (DefaultMaxDepth; at most 32). Deeper ones are replaced by a marker.
	MaxDepth int
	// MaxItems is how many elements or members of one array or object are
	// shown (DefaultMaxItems).
	MaxItems int
	// MaxString is how many bytes of one string (as written in the JSON,
	// escapes included) are shown (DefaultMaxString; at least 16).
	MaxString int
	// Visible makes Compact write what display.Hidden reports (bidi
	// controls, zero-width and other format characters, ...) as JSON
	// escapes, as Pretty always does: the JSON means the same, only its
	// spelling changes, so a person reading it sees every character. Leave
	// it unset where the output is data for a program.
	Visible bool
}

type limits struct {
	maxBytes, maxDepth, maxItems, maxString int
	visible                                 bool
}

func (l *Limits) resolve() limits {
	r := limits{maxBytes: DefaultMaxBytes, maxDepth: DefaultMaxDepth, maxItems: DefaultMaxItems, maxString: DefaultMaxString}
	if l != nil {
		if l.MaxBytes > 0 {
			r.maxBytes = max(l.MaxBytes, minMaxBytes)
		}
		if l.MaxDepth > 0 {
			r.maxDepth = min(l.MaxDepth, maxMaxDepth)
		}
		if l.MaxItems > 0 {
			r.maxItems = max(l.MaxItems, minMaxItem)
		}
		if l.MaxString > 0 {
			r.maxString = max(l.MaxString, minMaxStr)
		}
		r.visible = l.Visible
	}
	return r
}

// Pretty renders raw for a person, indented by two spaces as json.Indent
// does, within l; every character display.Hidden reports is written as its
// JSON escape (see Limits.Visible). truncated reports whether anything was
// left out. Raw that is not JSON is returned as text (invalid UTF-8
// replaced, hidden characters escaped as display.Block does), cut to
// l.MaxBytes; empty raw gives "".
func Pretty(raw []byte, l *Limits) (text string, truncated bool) {
	if len(raw) == 0 {
		return "", false
	}
	lim := l.resolve()
	lim.visible = true
	out, cut, ok := render(raw, lim, true)
	if !ok {
		return asText(raw, lim.maxBytes, true)
	}
	return string(out), cut
}

// Compact renders raw as compact JSON within l; the output is valid JSON
// whenever raw is (markers are JSON strings). truncated reports whether
// anything was left out. Raw that is not JSON becomes a JSON string holding
// its text, cut to fit; empty raw gives null.
func Compact(raw []byte, l *Limits) (out json.RawMessage, truncated bool) {
	if len(raw) == 0 {
		return json.RawMessage("null"), false
	}
	lim := l.resolve()
	b, cut, ok := render(raw, lim, false)
	if !ok {
		// Every byte may become a six-byte escape.
		text, cut := asText(raw, (lim.maxBytes-64)/6, lim.visible)
		q, _ := json.Marshal(text)
		return q, cut
	}
	return b, cut
}

// asText returns raw as valid UTF-8 text (invalid bytes become U+FFFD) of
// at most max bytes, marked when cut; visible writes hidden characters as
// display.Block does (line feeds and tabs kept).
func asText(raw []byte, max int, visible bool) (string, bool) {
	const mark = "… (truncated)"
	var b strings.Builder
	var esc []byte
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size <= 1 {
			r = utf8.RuneError
		}
		esc = utf8.AppendRune(esc[:0], r)
		if visible && display.Hidden(r) && r != '\n' && r != '\t' {
			esc = display.AppendEscape(esc[:0], r)
		}
		if b.Len()+len(esc) > max-len(mark) {
			b.WriteString(mark)
			return b.String(), true
		}
		b.Write(esc)
		i += size
	}
	return b.String(), false
}

// render walks raw once. ok is false when raw is not JSON (as far as it was
// read: once the output is full the rest is not looked at).
func render(raw []byte, lim limits, pretty bool) (out []byte, cut, ok bool) {
	p := printer{in: raw, lim: lim, pretty: pretty, visible: lim.visible}
	// Room kept for the closing brackets, indentation and markers of
	// every open level, and one element's punctuation.
	reserve := (lim.maxDepth+1)*(2*lim.maxDepth+2) + (lim.maxDepth+1)*8 + 256
	p.budget = lim.maxBytes - reserve
	p.out = make([]byte, 0, min(lim.maxBytes, 2*len(raw)+64))
	p.ws()
	p.value(0)
	if p.bad {
		return nil, false, false
	}
	if !p.full {
		p.ws()
		if p.i < len(p.in) {
			return nil, false, false // trailing data: not one JSON value
		}
	}
	return p.out, p.cut, true
}

type printer struct {
	in     []byte
	i      int
	out    []byte
	lim    limits
	budget int
	pretty bool
	// visible writes hidden characters as JSON escapes (Limits.Visible).
	visible bool
	cut     bool // something was left out
	full    bool // the budget is spent: nothing more is written but closers
	bad     bool // the input is not JSON
}

func (p *printer) room() int { return p.budget - len(p.out) }

func (p *printer) ws() {
	for p.i < len(p.in) {
		switch p.in[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *printer) newline(depth int) {
	if !p.pretty {
		return
	}
	p.out = append(p.out, '\n')
	for range depth {
		p.out = append(p.out, ' ', ' ')
	}
}

// marker writes a JSON string holding a truncation note.
func (p *printer) marker(text string) {
	p.cut = true
	p.out = strconv.AppendQuote(p.out, text)
}

// value renders the value at p.i (white space skipped); depth is the
// number of containers around it.
func (p *printer) value(depth int) {
	if p.i >= len(p.in) {
		p.bad = true
		return
	}
	switch c := p.in[p.i]; {
	case c == '{' || c == '[':
		p.container(depth)
	case c == '"':
		p.str(p.lim.maxString)
	default:
		p.scalar()
	}
}

func (p *printer) container(depth int) {
	open := p.in[p.i]
	close, object := byte(']'), open == '{'
	if object {
		close = '}'
	}
	if depth >= p.lim.maxDepth {
		if !p.skip() {
			return
		}
		p.marker(string(open) + "…" + string(close) + " (truncated: deeper than " + strconv.Itoa(p.lim.maxDepth) + " levels)")
		return
	}
	p.i++
	p.ws()
	if p.i < len(p.in) && p.in[p.i] == close {
		p.i++
		p.out = append(p.out, open, close)
		return
	}
	p.out = append(p.out, open)
	for n := 0; ; n++ {
		if n > 0 {
			p.out = append(p.out, ',')
		}
		p.newline(depth + 1)
		if p.room() <= 0 {
			p.full = true
			if object {
				p.member("…", "(truncated: the rest is not shown)")
			} else {
				p.marker("… (truncated: the rest is not shown)")
			}
			break
		}
		if n == p.lim.maxItems {
			more := p.countRest(object, close)
			if p.bad {
				return
			}
			if object {
				p.member("…", "(truncated: "+strconv.Itoa(more)+" more members)")
			} else {
				p.marker("… (truncated: " + strconv.Itoa(more) + " more items)")
			}
			p.i-- // countRest consumed the closer; it is read again below
			break
		}
		if object {
			if p.i >= len(p.in) || p.in[p.i] != '"' {
				p.bad = true
				return
			}
			p.str(min(p.lim.maxString, max(p.room()/2, minMaxStr)))
			if p.bad {
				return
			}
			p.ws()
			if p.i >= len(p.in) || p.in[p.i] != ':' {
				p.bad = true
				return
			}
			p.i++
			p.ws()
			p.out = append(p.out, ':')
			if p.pretty {
				p.out = append(p.out, ' ')
			}
		}
		p.value(depth + 1)
		if p.bad || p.full {
			break
		}
		p.ws()
		if p.i >= len(p.in) {
			p.bad = true
			return
		}
		if c := p.in[p.i]; c == close {
			break
		} else if c != ',' {
			p.bad = true
			return
		}
		p.i++
		p.ws()
	}
	if p.bad {
		return
	}
	if !p.full {
		p.i++ // the closer
	}
	p.newline(depth)
	p.out = append(p.out, close)
}

// member writes an object member holding a marker.
func (p *printer) member(key, note string) {
	p.out = strconv.AppendQuote(p.out, key)
	p.out = append(p.out, ':')
	if p.pretty {
		p.out = append(p.out, ' ')
	}
	p.marker(note)
}

// str copies the string at p.i, cut to limit bytes of its content (and to
// the room left), never inside an escape or a UTF-8 sequence. With visible
// set, every rune display.Hidden reports is written as its JSON escape
// (\u202E; a surrogate pair above the basic plane), counted as the bytes
// it is written as.
func (p *printer) str(limit int) {
	limit = min(limit, max(p.room(), minMaxStr))
	start := p.i + 1
	i, cutAt, shown := start, -1, 0
	p.out = append(p.out, '"')
	var esc [12]byte
	for {
		if i >= len(p.in) {
			p.bad = true
			return
		}
		if cutAt >= 0 {
			// Nothing more of this string is shown: find its end fast.
			if i = closingQuote(p.in, i); i < 0 {
				p.bad = true
				return
			}
		}
		unit := i // where this character or escape begins
		var written []byte
		c := p.in[i]
		switch {
		case c == '"':
			p.i = i + 1
			if cutAt >= 0 {
				p.cut = true
				p.out = append(p.out, "… (truncated: "...)
				p.out = strconv.AppendInt(p.out, int64(i-start), 10)
				p.out = append(p.out, " bytes)"...)
			}
			p.out = append(p.out, '"')
			return
		case c == '\\':
			if i+1 >= len(p.in) {
				p.bad = true
				return
			}
			switch p.in[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p.in) || !isHex4(p.in[i+2:i+6]) {
					p.bad = true
					return
				}
				i += 6
			default:
				p.bad = true
				return
			}
			written = p.in[unit:i]
		case c < 0x20:
			p.bad = true
			return
		case c < utf8.RuneSelf:
			i++
			written = p.in[unit:i]
			if p.visible && c == 0x7f {
				written = display.AppendJSONEscape(esc[:0], rune(c))
			}
		default:
			r, size := utf8.DecodeRune(p.in[i:])
			if r == utf8.RuneError && size <= 1 {
				p.bad = true
				return
			}
			i += size
			written = p.in[unit:i]
			if p.visible && display.Hidden(r) {
				written = display.AppendJSONEscape(esc[:0], r)
			}
		}
		if cutAt >= 0 {
			continue
		}
		if shown+len(written) > limit {
			cutAt = unit // the last boundary that fits
			continue
		}
		p.out = append(p.out, written...)
		shown += len(written)
	}
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// scalar copies a number or a literal (true, false, null).
func (p *printer) scalar() {
	start := p.i
	for p.i < len(p.in) && isScalarByte(p.in[p.i]) {
		p.i++
	}
	tok := p.in[start:p.i]
	switch string(tok) {
	case "true", "false", "null":
		p.out = append(p.out, tok...)
		return
	}
	if !isNumber(tok) {
		p.bad = true
		return
	}
	if len(tok) > min(p.lim.maxString, max(p.room(), minMaxStr)) {
		p.marker(string(tok[:minMaxStr]) + "… (truncated: a number of " + strconv.Itoa(len(tok)) + " bytes)")
		return
	}
	p.out = append(p.out, tok...)
}

// isScalarByte reports whether c can be part of a number or of true, false
// and null: scanning a scalar stops at the first byte that cannot, so
// garbage is refused at once instead of after a scan to the next delimiter.
func isScalarByte(c byte) bool {
	switch {
	case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		return true
	case c == 't', c == 'r', c == 'u', c == 'f', c == 'a', c == 'l', c == 's', c == 'n':
		return true
	}
	return false
}

// isNumber checks the RFC 8259 number grammar.
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(b)
}

// skip passes over the value at p.i without rendering it, iteratively (it
// may be nested deeper than the stack should go). It reports false, and
// sets bad, when the value is malformed.
func (p *printer) skip() bool {
	var stack []byte
	for {
		if p.i >= len(p.in) {
			p.bad = true
			return false
		}
		switch c := p.in[p.i]; c {
		case '{', '[':
			stack = append(stack, c)
			p.i++
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				p.bad = true
				return false
			}
			stack = stack[:len(stack)-1]
			p.i++
		case '"':
			if !p.skipString() {
				p.bad = true
				return false
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if len(stack) == 0 {
				return true
			}
			p.i++
		default:
			start := p.i
			for p.i < len(p.in) && isScalarByte(p.in[p.i]) {
				p.i++
			}
			tok := p.in[start:p.i]
			if t := string(tok); t != "true" && t != "false" && t != "null" && !isNumber(tok) {
				p.bad = true
				return false
			}
		}
		if len(stack) == 0 {
			return true
		}
	}
}

// skipString passes over the string at p.i (its content is not checked).
func (p *printer) skipString() bool {
	end := closingQuote(p.in, p.i+1)
	if end < 0 {
		return false
	}
	p.i = end + 1
	return true
}

// closingQuote returns the index of the quote that ends the string whose
// content continues at from (a quote preceded by an even number of
// backslashes), or -1.
func closingQuote(in []byte, from int) int {
	for {
		j := bytes.IndexByte(in[from:], '"')
		if j < 0 {
			return -1
		}
		q := from + j
		n := 0
		for k := q - 1; k >= 0 && in[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// countRest counts the elements (or members) left in the container whose
// element or member starts at p.i, passing over them and the closer.
func (p *printer) countRest(object bool, close byte) int {
	n := 0
	for {
		if object {
			if p.i >= len(p.in) || p.in[p.i] != '"' || !p.skipString() {
				p.bad = true
				return n
			}
			p.ws()
			if p.i >= len(p.in) || p.in[p.i] != ':' {
				p.bad = true
				return n
			}
			p.i++
			p.ws()
		}
		if !p.skip() {
			return n
		}
		n++
		p.ws()
		if p.i >= len(p.in) {
			p.bad = true
			return n
		}
		switch p.in[p.i] {
		case close:
			p.i++
			return n
		case ',':
			p.i++
			p.ws()
		default:
			p.bad = true
			return n
		}
	}
}
