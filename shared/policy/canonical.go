package policy

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PathError says why a concrete path has no canonical form. The message
// names the segment as it was written.
type PathError struct {
	Segment string
	Reason  string
}

func (e *PathError) Error() string {
	return "path segment " + strconv.Quote(e.Segment) + " " + e.Reason
}

// CanonicalPath returns the one spelling of a concrete path that the
// gateway routes, binds, shows and sends upstream, so that what is decided
// is what runs whatever the upstream's router does with escapes:
//
//   - a percent-escape of an unreserved character (RFC 3986 section 2.3:
//     ALPHA DIGIT - . _ ~) is decoded: /contacts/%61ll is /contacts/all;
//   - every other escape is written with upper-case hex (%c3%a9 is %C3%A9),
//     and a byte that may not appear raw in a path (a space, a non-ASCII
//     byte, ", <, [ ...) is escaped;
//   - a segment is refused when it holds, raw or escaped, a backslash, a
//     ";" (Tomcat and Spring read path parameters after it), NUL or another
//     control character, when it is not valid UTF-8 once decoded, when an
//     escape is malformed, or when it is a dot segment ("." or "..", also
//     encoded).
//
// An encoded slash (%2F) is kept, and slash reports it: an upstream that
// decodes the path before routing (every WSGI server) reads it as a
// separator, so only an endpoint parameter that opts in may hold one
// (Endpoint.SlashParams). The path must start with "/". A path that is
// already canonical is returned as it is, without allocating.
func CanonicalPath(p string) (canon string, slash bool, err error) {
	if p == "" || p[0] != '/' {
		return "", false, &PathError{Segment: p, Reason: "is not a path: it must start with /"}
	}
	if plainPath(p) {
		if err := dotSegments(p); err != nil {
			return "", false, err
		}
		return p, false, nil
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for start := 1; start <= len(p); {
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		seg := p[start:end]
		b.WriteByte('/')
		s, err := canonicalSegment(&b, seg)
		if err != nil {
			return "", false, err
		}
		slash = slash || s
		start = end + 1
	}
	return b.String(), slash, nil
}

// plainPath reports a path of bytes that are their own canonical form:
// unreserved characters, sub-delimiters other than ";", ":", "@" and "/".
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; !(c == '/' || pathSafe(c)) {
			return false
		}
	}
	return true
}

// dotSegments refuses a "." or ".." segment of a plain path.
func dotSegments(p string) error {
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return &PathError{Segment: seg, Reason: "is a dot segment (. or ..): upstreams resolve it to another path"}
		}
	}
	return nil
}

// unreserved reports RFC 3986's unreserved characters.
func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// pathSafe reports a byte written raw in a canonical segment: unreserved,
// a sub-delimiter other than ";", ":" or "@" (RFC 3986 pchar).
func pathSafe(c byte) bool {
	if unreserved(c) {
		return true
	}
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', '=', ':', '@':
		return true
	}
	return false
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

const upperHex = "0123456789ABCDEF"

// canonicalSegment writes seg's canonical form to b and reports an encoded
// slash in it.
func canonicalSegment(b *strings.Builder, seg string) (slash bool, err error) {
	refuse := func(reason string) (bool, error) { return false, &PathError{Segment: seg, Reason: reason} }
	// decoded holds the segment's bytes once decoded, for the UTF-8 and
	// dot-segment checks; segments are short, so it stays on the stack.
	var buf [64]byte
	decoded := buf[:0]
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		escaped := false
		if c == '%' {
			if i+2 >= len(seg) {
				return refuse("has a malformed percent-escape (want %XX)")
			}
			hi, ok1 := unhex(seg[i+1])
			lo, ok2 := unhex(seg[i+2])
			if !ok1 || !ok2 {
				return refuse("has a malformed percent-escape (want %XX)")
			}
			c, escaped = hi<<4|lo, true
			i += 2
		}
		switch {
		case c == '/' && escaped:
			slash = true
		case c == '\\':
			return refuse(`holds a backslash (\), which some upstreams read as a path separator`)
		case c == ';':
			return refuse("holds a ; (Tomcat and Spring read what follows as path parameters)")
		case c < 0x20 || c == 0x7f:
			return refuse("holds NUL or another control character")
		}
		decoded = append(decoded, c)
		if pathSafe(c) && (unreserved(c) || !escaped) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	if !utf8.Valid(decoded) {
		return refuse("is not valid UTF-8 once decoded")
	}
	// Every % in decoded came from %25: followed by two hex digits it is
	// an escape of its own, which an upstream (or a proxy before it) that
	// decodes twice reads as another character (%252F is / there).
	if doubleEscape(decoded) {
		return refuse("holds a percent-encoded escape (%25 and two hex digits): an upstream that decodes twice reads another path")
	}
	// A dot segment, or one between encoded slashes that an upstream
	// decoding the path would resolve.
	if dotPart(decoded) {
		return refuse("is or holds a dot segment (. or ..): upstreams resolve it to another path")
	}
	return slash, nil
}

// doubleEscape reports a % followed by two hex digits in a decoded segment.
func doubleEscape(b []byte) bool {
	for i := 0; i+2 < len(b); i++ {
		if b[i] != '%' {
			continue
		}
		if _, ok := unhex(b[i+1]); !ok {
			continue
		}
		if _, ok := unhex(b[i+2]); ok {
			return true
		}
	}
	return false
}

// dotPart reports a decoded segment that is, or between decoded slashes
// holds, "." or "..".
func dotPart(b []byte) bool {
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != '/' {
			continue
		}
		if part := b[start:i]; len(part) == 1 && part[0] == '.' || len(part) == 2 && part[0] == '.' && part[1] == '.' {
			return true
		}
		start = i + 1
	}
	return false
}

// segmentFold reports whether two canonical segments name the same thing
// to a router that decodes escapes and ignores case (ASP.NET, Spring with
// case-insensitive matching, many WSGI apps with lower-cased routes). It
// compares rune by rune with Unicode simple case folding, as
// strings.EqualFold does, and does not allocate.
func segmentFold(a, b string) bool {
	if a == b {
		return true
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var ra, rb rune
		var ok bool
		if ra, i, ok = decodeRune(a, i); !ok {
			return false
		}
		if rb, j, ok = decodeRune(b, j); !ok {
			return false
		}
		if ra == rb {
			continue
		}
		ra, rb = fullWidth(ra), fullWidth(rb)
		if ra < utf8.RuneSelf && rb < utf8.RuneSelf {
			if 'A' <= ra && ra <= 'Z' {
				ra += 'a' - 'A'
			}
			if 'A' <= rb && rb <= 'Z' {
				rb += 'a' - 'A'
			}
			if ra != rb {
				return false
			}
			continue
		}
		r := unicode.SimpleFold(ra)
		for r != ra && r != rb {
			r = unicode.SimpleFold(r)
		}
		if r != rb {
			return false
		}
	}
	return i == len(a) && j == len(b)
}

// twinFold reports whether a parameter's canonical segment names the
// literal lit to some router: segmentFold's case and escapes, and also
// the spellings routers reduce to the literal: full-width forms of ASCII
// (U+FF01 to U+FF5E, which NFKC and IIS's best-fit mapping turn into
// ASCII: ａｌｌ), trailing dots and spaces (all., all%20, which Windows
// and IIS trim), and a format suffix (all.json: Rails' (.:format) and
// Spring's suffix patterns route it to all). It does not allocate.
func twinFold(lit, seg string) bool {
	if segmentFold(lit, seg) {
		return true
	}
	v := trimDotsAndSpaces(seg)
	if v != seg && segmentFold(lit, v) {
		return true
	}
	if i := strings.IndexByte(v, '.'); i > 0 && strings.IndexByte(lit, '.') < 0 && segmentFold(lit, v[:i]) {
		return true
	}
	return false
}

// plainSegment reports a canonical segment of ASCII bytes without an
// escape or a dot: what twinFold reads in it is its bytes, its spellings
// that routers reduce (escapes, full-width forms, trailing dots and
// spaces, a format suffix) are absent, and no byte folds to a non-ASCII
// rune that way.
func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '%' || c == '.' {
			return false
		}
	}
	return true
}

// plainTwin is twinFold of two plain segments (plainSegment): ASCII bytes
// equal but for case. It compares lengths first, so a parameter value
// that is no literal's length costs one comparison per literal.
func plainTwin(lit, seg string) bool {
	if len(lit) != len(seg) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		a, b := lit[i], seg[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// trimDotsAndSpaces cuts trailing dots and (escaped) spaces off a
// canonical segment.
func trimDotsAndSpaces(s string) string {
	for {
		switch {
		case strings.HasSuffix(s, "."):
			s = s[:len(s)-1]
		case strings.HasSuffix(s, "%20"):
			s = s[:len(s)-3]
		default:
			return s
		}
	}
}

// fullWidth maps a full-width form of an ASCII character (U+FF01 to
// U+FF5E) to that character, as NFKC does.
func fullWidth(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		return r - 0xFEE0
	}
	return r
}

// decodeRune decodes the rune at s[i], percent-escapes decoded.
func decodeRune(s string, i int) (r rune, next int, ok bool) {
	var buf [utf8.UTFMax]byte
	n := 0
	for n < len(buf) && i < len(s) {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		buf[n] = c
		n++
		i++
		if utf8.FullRune(buf[:n]) {
			break
		}
	}
	r, size := utf8.DecodeRune(buf[:n])
	if size != n || r == utf8.RuneError && size <= 1 && buf[0] >= utf8.RuneSelf {
		return 0, i, false
	}
	return r, i, true
}
