package config

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign/shared/canon"
)

// src reports problems found in one file.
type src struct {
	l    *loader
	file string // the directory joined with the file's relative path
}

func (s *src) errf(path, format string, args ...any) {
	s.l.errs = append(s.l.errs, &Error{File: s.file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// errNull: a null where a value is expected. JSON v2 reads null as the
// zero value (false, 0, nothing); a file saying null means something else
// than leaving the field out, so it is refused.
var errNull = errors.New("null")

// decodeOptions are JSON v2's rules for the files: a member that is no
// field is refused, names match exactly, a name twice is refused (read
// checks the whole file too, but stops at the strict reader's first
// refusal), null is refused but where a part is still read field by field
// (a jsontext.Value).
var decodeOptions = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v any) error {
		if _, raw := v.(*jsontext.Value); !raw && dec.PeekKind() == 'n' {
			return errNull
		}
		return errors.ErrUnsupported
	})),
)

// decode reads raw into v, a pointer to the Go shape of the value at path
// (struct fields named by their json tags are the fields allowed), with
// JSON v2. The first problem is reported at its field, in the words of the
// field-by-field readers: an unknown field naming those allowed, or "want
// a string, got a number". It reports whether raw was read.
//
// After an unknown field the value is read again without that rule, so the
// fields that are known are still read and checked (a value of the wrong
// type stops the reading of its object).
func (s *src) decode(path string, raw []byte, v any) bool {
	err := jsonv2.Unmarshal(raw, v, decodeOptions)
	if errors.Is(err, jsonv2.ErrUnknownName) {
		s.report(path, v, err)
		err = jsonv2.Unmarshal(raw, v, decodeOptions, jsonv2.RejectUnknownMembers(false))
	}
	if err != nil {
		s.report(path, v, err)
		return false
	}
	return true
}

// report reports err, Unmarshal's error for v, at the field it names.
func (s *src) report(path string, v any, err error) {
	var se *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
	case errors.As(err, &syn) && syn.Err == jsontext.ErrDuplicateName:
		// read refuses a key given twice, unless another refusal of the
		// strict reader came first (a number that does not round trip).
		path, _, _ := walk(path, reflect.TypeOf(v), syn.JSONPointer.Parent())
		s.errf(path, "duplicate key: %q appears twice (readers disagree on which one counts)", syn.JSONPointer.LastToken())
		return
	default:
		s.errf(path, "%v", err)
		return
	}
	path, t, allowed := walk(path, reflect.TypeOf(v), se.JSONPointer)
	switch got := canon.Kind([]byte{byte(se.JSONKind)}); {
	case se.Err == jsonv2.ErrUnknownName:
		s.errf(path, "unknown field %q (allowed: %s)", se.JSONPointer.LastToken(), strings.Join(allowed, ", "))
	case se.Err == errNull:
		s.errf(path, "want %s, got null", want(t))
	case se.JSONKind == '0' && len(se.JSONValue) > 0:
		s.errf(path, "want %s, got %s", want(t), se.JSONValue)
	default:
		s.errf(path, "want %s, got %s", want(t), got)
	}
}

// walk follows the JSON pointer ptr from path through the Go type t: it
// returns the path it names (endpoints[1].approval, array indexes told
// from keys by the type), the Go type there (nil inside raw JSON), and
// the JSON names of the struct that holds the last token, if one does.
func walk(path string, t reflect.Type, ptr jsontext.Pointer) (string, reflect.Type, []string) {
	var allowed []string
	for tok := range ptr.Tokens() {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == rawType {
			t = nil
		}
		switch kindOf(t) {
		case reflect.Slice:
			n, _ := strconv.Atoi(tok)
			path, t = index(path, n), t.Elem()
		case reflect.Map:
			path, t = field(path, tok), t.Elem()
		case reflect.Struct:
			var ft reflect.Type
			allowed = allowed[:0]
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				if name == "" || name == "-" {
					continue
				}
				allowed = append(allowed, name)
				if name == tok {
					ft = t.Field(i).Type
				}
			}
			path, t = field(path, tok), ft
		default:
			path, t = field(path, tok), nil
		}
	}
	return path, t, allowed
}

var rawType = reflect.TypeFor[jsontext.Value]()

func kindOf(t reflect.Type) reflect.Kind {
	if t == nil {
		return reflect.Invalid
	}
	if t.Kind() == reflect.Array {
		return reflect.Slice
	}
	return t.Kind()
}

// want names what a Go type reads, as the field-by-field readers say it.
func want(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch kindOf(t) {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64:
		return "a JSON number"
	case reflect.Slice:
		return "a JSON array"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	}
	return "a JSON value"
}

// httpURL checks an absolute http(s) URL and returns it without a trailing slash.
func (s *src) httpURL(path, v string) (string, bool) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		s.errf(path, "%q is not an absolute http:// or https:// URL", v)
		return "", false
	}
	return strings.TrimRight(v, "/"), true
}

// validName reports whether s matches [a-z0-9][a-z0-9_-]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Byte classes for the checks above, written as loops: a package-level
// regexp is compiled at every start of every function, a cost a cold
// start pays whether or not it is used.
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLetter(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// allBytes reports whether every byte of s satisfies ok.
func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
