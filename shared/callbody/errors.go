package callbody

import (
	"errors"
	"strconv"
	"strings"
)

// The kinds of refusal. An *Error wraps exactly one of them, so callers can
// test with errors.Is.
var (
	// ErrSyntax: not JSON (including an empty body).
	ErrSyntax = errors.New("malformed JSON")
	// ErrDuplicateKey: an object names the same key twice.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrTooDeep: arrays and objects nested deeper than the limit.
	ErrTooDeep = errors.New("nested too deep")
	// ErrNumber: a number that does not survive a round trip through a
	// 64-bit float, or is longer than MaxNumberLen.
	ErrNumber = errors.New("number does not survive a round trip")
	// ErrString: a string that is not valid Unicode (invalid UTF-8, an
	// unpaired surrogate escape) or holds an unescaped control character.
	ErrString = errors.New("invalid string")
	// ErrTrailingData: something other than white space after the value.
	ErrTrailingData = errors.New("trailing data after the JSON value")
	// ErrUnknownField: DecodeStrict met a key that is no field of the struct.
	ErrUnknownField = errors.New("unknown field")
	// ErrFieldCase: DecodeStrict met a key that matches a field only when
	// case is ignored.
	ErrFieldCase = errors.New("field name in the wrong case")
	// ErrType: DecodeStrict met a value of the wrong type for its field.
	ErrType = errors.New("wrong type")
	// ErrForm: a form-encoded body that ParseForm refuses.
	ErrForm = errors.New("malformed form body")
	// ErrQuery: a query string, or a decoded query parameter, that
	// ParseQuery or CheckPair refuses (the rules of ParseForm).
	ErrQuery = errors.New("malformed query")
)

// Error is a refusal of the strict reader: what is wrong, where in the JSON
// value, and at which byte of the input.
type Error struct {
	// Kind is one of the Err* values above.
	Kind error
	// Path is the JSON path of the value being read: "$" for the whole
	// value, "$.items[3].amount", `$["a b"]`. Long keys are shortened.
	// Empty for form bodies.
	Path string
	// Offset is the byte offset in the input where the problem was found
	// (-1 when unknown).
	Offset int
	// Detail says more, e.g. `"amount" appears twice`.
	Detail string
}

// Error returns "<path>: <kind>: <detail> (at byte <offset>)"; parts that
// are empty or unknown are left out.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Offset >= 0 {
		b.WriteString(" (at byte ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// maxKeyInMessage bounds a key quoted in a path or detail, so an error
// message stays small whatever the input.
const maxKeyInMessage = 64

// quoteKey quotes a key for a message, shortened to maxKeyInMessage bytes.
func quoteKey(k string) string {
	if len(k) > maxKeyInMessage {
		n := maxKeyInMessage
		for n > 0 && k[n]&0xC0 == 0x80 {
			n--
		}
		return strconv.Quote(k[:n]) + "…"
	}
	return strconv.Quote(k)
}

// pathSeg is one step of a JSON path: an object key or an array index.
type pathSeg struct {
	key   string
	index int
	isKey bool
}

// formatPath renders segs as "$", "$.a[3]", `$["a b"]`.
func formatPath(segs []pathSeg) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range segs {
		if !s.isKey {
			b.WriteString("[")
			b.WriteString(strconv.Itoa(s.index))
			b.WriteString("]")
			continue
		}
		if isIdent(s.key) && len(s.key) <= maxKeyInMessage {
			b.WriteString(".")
			b.WriteString(s.key)
			continue
		}
		b.WriteString("[")
		b.WriteString(quoteKey(s.key))
		b.WriteString("]")
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}
