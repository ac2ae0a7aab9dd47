package display

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// CSS styles what HTML and JSONHTML write; a page puts it in its style
// block. An escape is set apart (monospace, red on pink, boxed) so it
// cannot pass for the text around it, and reads left to right wherever it
// stands.
const CSS = `bdi { unicode-bidi: isolate; }
.esc { unicode-bidi: isolate; direction: ltr; font: .85em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: #991b1b; background: #fee2e2; border: 1px solid #fca5a5; border-radius: .2rem; padding: 0 .15em; margin: 0 .05em; }
`

const (
	escOpen  = `<span class="esc">`
	escClose = `</span>`
)

// HTML returns s for HTML text (not an attribute): escaped for HTML,
// hidden runes and bytes that are not UTF-8 written as marked escapes
// (<span class="esc">\u202E</span>), the whole in a <bdi> of its own.
func HTML(s string) string {
	var b strings.Builder
	WriteHTML(&b, s)
	return b.String()
}

// WriteHTML writes what HTML returns to b.
func WriteHTML(b *strings.Builder, s string) {
	b.WriteString("<bdi>")
	writeRuns(b, s, false)
	b.WriteString("</bdi>")
}

// BlockHTML is HTML for multi-line text shown in a <pre>: line feeds and
// tabs are kept.
func BlockHTML(s string) string {
	var b strings.Builder
	b.WriteString("<bdi>")
	writeRuns(&b, s, true)
	b.WriteString("</bdi>")
	return b.String()
}

// writeRuns writes s escaped for HTML text, hidden runes marked.
func writeRuns(b *strings.Builder, s string, block bool) {
	var esc []byte
	written := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			var repl string
			switch c {
			case '&':
				repl = "&amp;"
			case '<':
				repl = "&lt;"
			case '>':
				repl = "&gt;"
			case '"':
				repl = "&#34;"
			case '\'':
				repl = "&#39;"
			default:
				if (c < 0x20 || c == 0x7f) && !keep(rune(c), block) {
					b.WriteString(s[written:i])
					b.WriteString(escOpen)
					b.Write(AppendEscape(esc[:0], rune(c)))
					b.WriteString(escClose)
					written = i + 1
				}
				i++
				continue
			}
			b.WriteString(s[written:i])
			b.WriteString(repl)
			i++
			written = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && size <= 1
		if bad || Hidden(r) {
			b.WriteString(s[written:i])
			b.WriteString(escOpen)
			if bad {
				b.Write(appendByte(esc[:0], c))
			} else {
				b.Write(AppendEscape(esc[:0], r))
			}
			b.WriteString(escClose)
			written = i + size
		}
		i += size
	}
	b.WriteString(s[written:])
}

// JSONHTML returns pretty JSON (as package jsonview writes it) for a
// <pre>: escaped for HTML, each string, key or value, in a <bdi> of its own
// (inside its quotes), and every \u escape that stands for a hidden rune
// marked, as are hidden runes written as they are (each becomes its JSON
// escape). Text that is not JSON is shown the same way: a string left open
// ends at the line's end.
func JSONHTML(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8 + 32)
	WriteJSONHTML(&b, s)
	return b.String()
}

// WriteJSONHTML writes what JSONHTML returns to b.
func WriteJSONHTML(b *strings.Builder, s string) {
	inString := false
	start := 0 // of the run not yet written
	flush := func(i int) {
		writeRuns(b, s[start:i], true)
		start = i
	}
	mark := func(i, end int, escape []byte) {
		flush(i)
		b.WriteString(escOpen)
		b.Write(escape)
		b.WriteString(escClose)
		start = end
	}
	var esc []byte
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			flush(i)
			if inString {
				b.WriteString(`</bdi>&#34;`)
			} else {
				b.WriteString(`&#34;<bdi>`)
			}
			inString = !inString
			i++
			start = i
		case c == '\n' && inString:
			flush(i)
			b.WriteString("</bdi>")
			inString = false
			i++
		case c == '\\' && inString:
			if i+1 >= len(s) {
				i++
				continue
			}
			if s[i+1] != 'u' {
				i += 2 // \" \\ \n ...: shown as they are
				continue
			}
			r, n := unicodeEscape(s[i:])
			if n == 0 {
				i += 2
				continue
			}
			if r < 0 || Hidden(r) {
				mark(i, i+n, []byte(s[i:i+n]))
			}
			i += n
		case c >= utf8.RuneSelf || c < 0x20 || c == 0x7f:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size <= 1:
				mark(i, i+1, appendByte(esc[:0], c))
			case c == '\n' || c == '\t':
				// kept: the lines and indentation of the text
			case Hidden(r) && inString:
				mark(i, i+size, AppendJSONEscape(esc[:0], r))
			case Hidden(r):
				mark(i, i+size, AppendEscape(esc[:0], r))
			}
			i += size
		default:
			i++
		}
	}
	flush(len(s))
	if inString {
		b.WriteString("</bdi>")
	}
}

// unicodeEscape reads the \uXXXX escape at the start of s, and the low
// surrogate's escape after a high surrogate's: it returns the rune and
// how many bytes it took (0 if s does not start with one). A surrogate
// without its pair is returned as -1: nothing a person can read.
func unicodeEscape(s string) (rune, int) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	switch {
	case 0xd800 <= r && r < 0xdc00:
		if lo, ok := hex4(s[6:]); ok && 0xdc00 <= lo && lo < 0xe000 {
			return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
		}
		return -1, 6
	case 0xdc00 <= r && r < 0xe000:
		return -1, 6
	}
	return r, 6
}

// hex4 decodes the \uXXXX at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(s[2:6], 16, 32)
	return rune(n), err == nil
}
