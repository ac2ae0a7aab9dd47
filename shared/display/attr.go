package display

import "strings"

// The approval page and the operator page are written by hand rather than
// with html/template, whose reflection keeps the linker from dropping
// unused methods (docs/performance.md); their tests check every page byte
// for byte against html/template's rendering of the same template. These
// are the two escapers they share, written as html/template's are.

// WriteAttr writes s escaped for HTML text and quoted attribute values, as
// html/template's escaper does: & < > " ' + become entities, NUL becomes
// U+FFFD, everything else (invalid UTF-8 included) is written as it is.
func WriteAttr(b *strings.Builder, s string) {
	written := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		b.WriteString(s[written:i])
		b.WriteString(repl)
		written = i + 1
	}
	b.WriteString(s[written:])
}

// SafeURL is what html/template makes of a value in a URL attribute before
// escaping it for the attribute: a URL with a scheme other than http, https
// or mailto becomes "#ZgotmplZ"; bytes that are not allowed in a URL are
// percent-encoded (valid %XX escapes are kept).
func SafeURL(s string) string {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") {
		if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
			return "#ZgotmplZ"
		}
	}
	return NormalizeURL(s)
}

// NormalizeURL is what html/template makes of a value inside a URL (after
// its start, where no scheme is checked): bytes that are not allowed in a
// URL are percent-encoded (valid %XX escapes are kept).
func NormalizeURL(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		case strings.IndexByte("!#$&*+,/:;=?@[]-._~", c) >= 0:
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		b.WriteString(s[written:i])
		b.WriteByte('%')
		b.WriteByte("0123456789abcdef"[c>>4])
		b.WriteByte("0123456789abcdef"[c&15])
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
