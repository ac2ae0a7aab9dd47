package callbody

import (
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/policy"
)

// Kind says how a call's body was read.
type Kind uint8

// Body kinds.
const (
	// Empty: no body at all (whatever the content type says).
	Empty Kind = iota
	// JSON: Body.Value holds the value.
	JSON
	// Form: Body.Form holds the form values (and Body.Value the JSON value
	// when the form-encoded body is also strict JSON).
	Form
	// Unreadable: the body cannot be checked; Body.Reason says why.
	Unreadable
)

var kindNames = [...]string{"empty", "json", "form", "unreadable"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Body is a call's body as the threshold and the binding see it.
type Body struct {
	Kind Kind
	// Value is the JSON value (Kind JSON; also Kind Form when the body is
	// strict JSON, see Read).
	Value any
	// Form holds the form values (Kind Form).
	Form url.Values
	// Reason says, for Kind Unreadable, why the body cannot be checked, as a
	// phrase that completes "the body could not be checked: ...", e.g.
	// `its Content-Type "text/plain" is neither JSON nor form-encoded`.
	Reason string
	// Err is set, for Kind Unreadable, when the Content-Type says JSON or
	// form-encoded but the bytes are not (strictly) that: the parse error,
	// an *Error. A caller may answer 400 with it instead of going on.
	Err error
}

// ApplyTo puts the body where tier's thresholds read it: Value in c.Body,
// Form in c.BodyForm and Reason in c.BodyUnreadable.
func (b *Body) ApplyTo(c *policy.Call) {
	c.Body, c.BodyForm, c.BodyUnreadable = b.Value, b.Form, b.Reason
}

// Read reads a call's body as the endpoint will receive it, by its
// Content-Type (media types and parameter names are case-insensitive):
//
//   - no bytes: Empty;
//   - application/json or application/<anything>+json, with no charset or
//     charset=utf-8: JSON under ParseJSON's rules; bytes that are not
//     strict JSON are Unreadable with Err set;
//   - application/x-www-form-urlencoded (same charset rule): Form, parsed
//     by ParseForm (malformed: Unreadable with Err set). When the bytes
//     begin like JSON ({ or [ after white space), an upstream that ignores
//     the Content-Type would decode JSON, so they must also be strict JSON
//     (else Unreadable, Err set) and Value holds that reading too: the
//     threshold checks both;
//   - anything else with bytes (no Content-Type, a malformed one, text/plain,
//     multipart/form-data, application/octet-stream, another charset):
//     Unreadable.
func Read(contentType string, data []byte, opts *Options) Body {
	if len(data) == 0 {
		return Body{Kind: Empty}
	}
	if strings.TrimSpace(contentType) == "" {
		return Body{Kind: Unreadable, Reason: "it has no Content-Type"}
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return Body{Kind: Unreadable, Reason: "its Content-Type " + quoteHeader(contentType) + " is malformed"}
	}
	json := mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
	form := mt == "application/x-www-form-urlencoded"
	if !json && !form {
		return Body{Kind: Unreadable, Reason: "its Content-Type " + quoteHeader(mt) + " is neither JSON nor form-encoded"}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return Body{Kind: Unreadable, Reason: "its charset " + quoteHeader(cs) + " is not UTF-8"}
	}
	if json {
		v, err := ParseJSON(data, opts)
		if err != nil {
			return Body{Kind: Unreadable, Reason: "it is not strict JSON (" + err.Error() + ")", Err: err}
		}
		return Body{Kind: JSON, Value: v}
	}
	b := Body{Kind: Form}
	if looksLikeJSON(data) {
		v, err := ParseJSON(data, opts)
		if err != nil {
			return Body{Kind: Unreadable, Reason: "it is sent as a form but looks like JSON, and is not strict JSON (" + err.Error() + ")", Err: err}
		}
		b.Value = v
	}
	f, err := ParseForm(data)
	if err != nil {
		return Body{Kind: Unreadable, Reason: "it is not a well-formed form (" + err.Error() + ")", Err: err}
	}
	b.Form = f
	return b
}

func looksLikeJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

// quoteHeader quotes a header value for a reason, shortened to 80 bytes.
func quoteHeader(s string) string {
	if len(s) > 80 {
		n := 80
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}

// ParseForm parses an application/x-www-form-urlencoded body strictly:
// pairs are separated by & only (a ; is refused, as Go's url.ParseQuery
// does), every percent-escape must be valid, and each decoded pair must
// pass CheckPair. Empty pairs (a=1&&b=2) are skipped. Errors are *Error
// wrapping ErrForm, with the byte offset of the pair.
func ParseForm(data []byte) (url.Values, error) {
	return parsePairs(string(data), ErrForm)
}

// ParseQuery reads a raw query string by the rules of ParseForm, so a
// query name is read as a form name is: errors wrap ErrQuery.
func ParseQuery(raw string) (url.Values, error) {
	return parsePairs(raw, ErrQuery)
}

func parsePairs(s string, kind error) (url.Values, error) {
	v := url.Values{}
	off := 0
	for off <= len(s) {
		pair := s[off:]
		next := len(s) + 1
		if j := strings.IndexByte(pair, '&'); j >= 0 {
			pair, next = pair[:j], off+j+1
		}
		if pair != "" {
			if err := addPair(v, pair, off, kind); err != nil {
				return nil, err
			}
		}
		off = next
	}
	return v, nil
}

func addPair(v url.Values, pair string, off int, kind error) error {
	fail := func(format string, args ...any) error {
		return &Error{Kind: kind, Offset: off, Detail: fmt.Sprintf(format, args...)}
	}
	if strings.IndexByte(pair, ';') >= 0 {
		return fail("a ; separates pairs (only & does)")
	}
	rawKey, rawValue, _ := strings.Cut(pair, "=")
	key, err := url.QueryUnescape(rawKey)
	if err != nil {
		return fail("key %s: invalid percent-encoding", quoteHeader(rawKey))
	}
	value, err := url.QueryUnescape(rawValue)
	if err != nil {
		return fail("value of %s: invalid percent-encoding", quoteKey(key))
	}
	if detail := pairProblem(key, value); detail != "" {
		return fail("%s", detail)
	}
	v[key] = append(v[key], value)
	return nil
}

// CheckPair applies the name and value rules of ParseForm to a decoded
// pair, for parameters that arrive decoded (the query object of a
// /v1/calls body, an MCP tool's or a script's query): it refuses what
// upstreams read differently from the gateway. A name must be non-empty,
// valid UTF-8, without leading or trailing white space (PHP trims it, so
// " amount" is amount there), without a + (form decoders read it as a
// space) and without control characters (PHP cuts a name at NUL); a value
// must be valid UTF-8 without control characters other than tab, CR and
// LF. The error wraps ErrQuery.
func CheckPair(key, value string) error {
	if detail := pairProblem(key, value); detail != "" {
		return &Error{Kind: ErrQuery, Offset: -1, Detail: detail}
	}
	return nil
}

// pairProblem says what is wrong with a decoded pair, or "".
func pairProblem(key, value string) string {
	switch {
	case key == "":
		return "a pair has no key"
	case !utf8.ValidString(key):
		return "key " + quoteKey(key) + " is not valid UTF-8"
	case !utf8.ValidString(value):
		return "value of " + quoteKey(key) + " is not valid UTF-8"
	case strings.TrimSpace(key) != key:
		return "key " + quoteKey(key) + " has leading or trailing white space"
	case strings.IndexByte(key, '+') >= 0:
		return "key " + quoteKey(key) + " holds a + (form decoders read it as a space)"
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return "key " + quoteKey(key) + " holds a control character"
		}
	}
	for _, r := range value {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return "value of " + quoteKey(key) + " holds a control character"
		}
	}
	return ""
}
