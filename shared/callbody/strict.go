package callbody

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decodeOptions are the rules DecodeStrict adds to ParseJSON's: a member
// that is no field is refused, and names match fields exactly (the JSON v2
// default, spelt out; encoding/json ignores case).
var decodeOptions = []jsonv2.Options{
	jsonv2.RejectUnknownMembers(true),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
}

// DecodeStrict decodes data, exactly one JSON value, into v (a non-nil
// pointer) with JSON v2 (github.com/go-json-experiment/json), after
// checking it by ParseJSON's rules (duplicate keys at any depth, depth,
// numbers, strings, trailing data). It refuses what encoding/json silently
// accepts:
//
//   - a key that is no field of the struct (ErrUnknownField);
//   - a key that matches a field only when case is ignored ("Intent" for
//     the tag "intent", ErrFieldCase; encoding/json takes it);
//   - duplicate keys (encoding/json keeps the last).
//
// Every refusal is an *Error naming the field by its JSON path. Wrong value
// types, and the errors of a field's own UnmarshalJSON or UnmarshalText,
// are reported as ErrType.
func DecodeStrict(data []byte, v any, opts *Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("callbody: DecodeStrict needs a non-nil pointer, got %T", v)
	}
	if err := Valid(data, opts); err != nil {
		return err
	}
	err := jsonv2.Unmarshal(data, v, decodeOptions...)
	var se *jsonv2.SemanticError
	if err == nil || !errors.As(err, &se) {
		return err
	}
	segs, fields := walk(rv.Type(), se.JSONPointer)
	e := &Error{Kind: ErrType, Path: formatPath(segs), Offset: int(se.ByteOffset)}
	switch {
	case se.Err == jsonv2.ErrUnknownName:
		k := se.JSONPointer.LastToken()
		e.Kind, e.Detail = ErrUnknownField, quoteKey(k)+" is not a field here"
		for _, n := range fields {
			if strings.EqualFold(n, k) {
				e.Kind, e.Detail = ErrFieldCase, quoteKey(k)+" matches the field "+quoteKey(n)+" only when case is ignored"
			}
		}
	case se.Err != nil:
		// A field's UnmarshalText or UnmarshalJSON error carries its own
		// words (e.g. `intent: unknown intent "x"`).
		e.Detail = se.Err.Error()
	default:
		e.Detail = "want " + se.GoType.String() + ", got " + kindName(se.JSONKind)
	}
	return e
}

// walk follows the JSON pointer ptr through the Go type t, to tell array
// indexes from keys; fields are the JSON names of the struct that holds the
// last token, when it is one.
func walk(t reflect.Type, ptr jsontext.Pointer) (segs []pathSeg, fields []string) {
	for tok := range ptr.Tokens() {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		fields = nil
		switch {
		case t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			n, _ := strconv.Atoi(tok)
			segs, t = append(segs, pathSeg{index: n}), t.Elem()
			continue
		case t != nil && t.Kind() == reflect.Map:
			t = t.Elem()
		case t != nil && t.Kind() == reflect.Struct:
			var ft reflect.Type
			fields, ft = fieldNames(t, tok)
			t = ft
		default:
			t = nil
		}
		segs = append(segs, pathSeg{key: tok, isKey: true})
	}
	return segs, fields
}

// fieldNames lists the JSON names of t's fields (as JSON v2 names them) and
// returns the type of the field named name (nil when none is).
func fieldNames(t reflect.Type, name string) (names []string, named reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if ft := f.Type; f.Anonymous && n == "" && ft.Kind() == reflect.Struct {
			inner, innerNamed := fieldNames(ft, name) // JSON v2 inlines it
			names, named = append(names, inner...), cmp.Or(named, innerNamed)
			continue
		}
		if !f.IsExported() || n == "-" {
			continue
		}
		if n == "" {
			n = f.Name
		}
		names = append(names, n)
		if n == name {
			named = f.Type
		}
	}
	return names, named
}

// kindName names a JSON kind as encoding/json's errors do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
