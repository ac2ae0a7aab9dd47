package display

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// blank holds the runes that are letters or marks by category but draw
// nothing (or nothing a person would notice): the combining grapheme
// joiner, the Hangul fillers, the Khmer inherent vowels, the Mongolian
// and the standard variation selectors, and the braille blank.
var blank = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x034f, Hi: 0x034f, Stride: 1},
		{Lo: 0x115f, Hi: 0x1160, Stride: 1},
		{Lo: 0x17b4, Hi: 0x17b5, Stride: 1},
		{Lo: 0x180b, Hi: 0x180f, Stride: 1},
		{Lo: 0x2800, Hi: 0x2800, Stride: 1},
		{Lo: 0x3164, Hi: 0x3164, Stride: 1},
		{Lo: 0xfe00, Hi: 0xfe0f, Stride: 1},
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0xe0100, Hi: 0xe01ef, Stride: 1},
	},
}

// Hidden reports whether r is written as an escape: a control (Cc), a
// format character (Cf: the bidi controls U+202A–U+202E and
// U+2066–U+2069, the marks U+200E, U+200F and U+061C, the zero-width
// space, joiner and non-joiner, U+FEFF, the soft hyphen, the tag
// characters U+E0000–U+E007F, ...), a line or paragraph separator, a
// space other than U+0020, a private-use character, a noncharacter, a
// variation selector or a blank letter. U+FFFD, which a person sees, is
// not hidden.
func Hidden(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	if r > unicode.MaxRune || 0xd800 <= r && r <= 0xdfff {
		return true
	}
	if 0xfdd0 <= r && r <= 0xfdef || r&0xfffe == 0xfffe {
		return true // noncharacters
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Zs, unicode.Co, blank)
}

// AppendEscape appends r's escape as Text writes it: \u202E in the basic
// plane, \U000E0041 above it.
func AppendEscape(dst []byte, r rune) []byte {
	const digits = "0123456789ABCDEF"
	if r < 0 || r > 0xffff {
		dst = append(dst, '\\', 'U')
		for shift := 28; shift >= 0; shift -= 4 {
			dst = append(dst, digits[(uint32(r)>>shift)&15])
		}
		return dst
	}
	return append(dst, '\\', 'u', digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15])
}

// AppendJSONEscape appends r as a JSON string escape: \u202E in the basic
// plane, a surrogate pair (\uDB40\uDC41) above it.
func AppendJSONEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		dst = AppendEscape(dst, 0xd800+(r>>10)&0x3ff)
		return AppendEscape(dst, 0xdc00+r&0x3ff)
	}
	return AppendEscape(dst, r)
}

// appendByte appends the escape of a byte that is not UTF-8: \xFF.
func appendByte(dst []byte, c byte) []byte {
	const digits = "0123456789ABCDEF"
	return append(dst, '\\', 'x', digits[c>>4], digits[c&15])
}

// Text returns s with every hidden rune written as its escape (see
// AppendEscape) and every byte that is not UTF-8 as \xNN; the rest is
// unchanged. A line break is an escape too: a value is one line.
func Text(s string) string { return text(s, false) }

// Block is Text for multi-line text: line feeds and tabs are kept.
func Block(s string) string { return text(s, true) }

func keep(r rune, block bool) bool { return block && (r == '\n' || r == '\t') }

func text(s string, block bool) string {
	i := clean(s, block)
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b = appendByte(b, s[i])
		case Hidden(r) && !keep(r, block):
			b = AppendEscape(b, r)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// clean returns the index of the first rune of s that needs an escape, or
// len(s).
func clean(s string, block bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !keep(rune(c), block) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || Hidden(r) {
			return i
		}
		i += size
	}
	return len(s)
}

// AgentLimit is how many runes of what an agent says about itself Agent
// keeps.
const AgentLimit = 64

// Agent returns what an agent chose to say about itself (its client name
// and version) ready to be shown as the agent's words: spaces trimmed,
// cut as Clip cuts it, hidden runes escaped as Text does. Callers label
// it ("the agent says it is …"): it is never a fact. A page that marks
// escapes writes Clip's result through HTML instead.
func Agent(s string, limit int) string { return Text(Clip(s, limit)) }

// Clip trims the spaces around s and cuts it so that, escaped as Text
// escapes it, it is at most limit runes (AgentLimit when limit is 0 or
// less), then "…"; an escape is cut whole, never in half. The hidden runes
// it keeps are left as they are, for Text or HTML to escape.
func Clip(s string, limit int) string {
	if limit <= 0 {
		limit = AgentLimit
	}
	s = strings.TrimSpace(s)
	n := 0
	var esc []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		w := 1
		switch {
		case r == utf8.RuneError && size <= 1:
			w = 4 // \xFF
		case Hidden(r):
			w = len(AppendEscape(esc[:0], r))
		}
		if n+w > limit {
			return s[:i] + "…"
		}
		n += w
		i += size
	}
	return s
}
