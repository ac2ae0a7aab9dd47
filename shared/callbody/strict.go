package callbody

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// DecodeStrict decodes data, exactly one JSON value, into v (a non-nil
// pointer), like encoding/json with DisallowUnknownFields and UseNumber, and
// refuses what encoding/json silently accepts:
//
//   - duplicate keys at any depth (encoding/json keeps the last);
//   - a key that matches a struct field only when case is ignored
//     ("Intent" for the tag "intent"; encoding/json takes it);
//   - everything ParseJSON refuses (depth, numbers, strings, trailing data).
//
// Keys are checked against the struct fields of v's type, following
// pointers, slices, arrays and map values; a type with its own UnmarshalJSON
// or UnmarshalText, a json.RawMessage and an interface are only checked by
// ParseJSON's rules. Struct fields are matched by their json tag name (or
// Go name); embedded structs are not supported.
//
// Every refusal is an *Error naming the field by its JSON path. Wrong value
// types are reported as ErrType.
func DecodeStrict(data []byte, v any, opts *Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("callbody: DecodeStrict needs a non-nil pointer, got %T", v)
	}
	t, err := typeOf(rv.Type())
	if err != nil {
		return err
	}
	p := parser{data: data, maxDepth: opts.maxDepth()}
	if _, err := p.document(t); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			path := "$"
			if te.Field != "" {
				path += "." + te.Field
			}
			return &Error{Kind: ErrType, Path: path, Offset: int(te.Offset), Detail: fmt.Sprintf("want %s, got %s", te.Type, te.Value)}
		}
		// An UnmarshalText or UnmarshalJSON error carries its own words
		// (e.g. `intent: unknown intent "x"`); encoding/json does not say
		// where it was.
		return &Error{Kind: ErrType, Path: "$", Offset: -1, Detail: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return nil
}

// typeInfo is what the parser needs to know about a Go type to check object
// keys: nil means anything goes (ParseJSON's rules only).
type typeInfo struct {
	// fields is set for a struct: JSON name → the field's type.
	fields map[string]*typeInfo
	// names lists the fields' JSON names, for the case-insensitive check.
	names []string
	// elem is set for a slice, an array or a map (its values).
	elem *typeInfo
}

// field returns the type of the struct field k names, or an error when t is
// a struct with no field named exactly k. For maps it returns the element.
func (t *typeInfo) field(p *parser, k string, at int) (*typeInfo, error) {
	if t == nil {
		return nil, nil
	}
	if t.fields == nil {
		return t.elem, nil
	}
	if ft, ok := t.fields[k]; ok {
		return ft, nil
	}
	for _, n := range t.names {
		if strings.EqualFold(n, k) {
			return nil, p.fail(ErrFieldCase, at, "%s matches the field %s only when case is ignored", quoteKey(k), quoteKey(n))
		}
	}
	return nil, p.fail(ErrUnknownField, at, "%s is not a field here", quoteKey(k))
}

func (t *typeInfo) element() *typeInfo {
	if t == nil || t.fields != nil {
		return nil
	}
	return t.elem
}

var typeCache sync.Map // reflect.Type → *typeInfo

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func typeOf(rt reflect.Type) (*typeInfo, error) {
	if t, ok := typeCache.Load(rt); ok {
		return t.(*typeInfo), nil
	}
	t, err := buildType(rt, map[reflect.Type]*typeInfo{})
	if err != nil {
		return nil, err
	}
	typeCache.Store(rt, t)
	return t, nil
}

func buildType(rt reflect.Type, seen map[reflect.Type]*typeInfo) (*typeInfo, error) {
	for rt.Kind() == reflect.Pointer {
		if rt.Implements(jsonUnmarshaler) || rt.Implements(textUnmarshaler) {
			return nil, nil
		}
		rt = rt.Elem()
	}
	if rt.Implements(jsonUnmarshaler) || rt.Implements(textUnmarshaler) ||
		reflect.PointerTo(rt).Implements(jsonUnmarshaler) || reflect.PointerTo(rt).Implements(textUnmarshaler) {
		return nil, nil
	}
	if t, ok := seen[rt]; ok {
		return t, nil
	}
	switch rt.Kind() {
	case reflect.Struct:
		t := &typeInfo{fields: map[string]*typeInfo{}}
		seen[rt] = t
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Anonymous {
				return nil, fmt.Errorf("callbody: %s embeds %s: embedded structs are not supported", rt, f.Type)
			}
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ft, err := buildType(f.Type, seen)
			if err != nil {
				return nil, err
			}
			t.fields[name] = ft
			t.names = append(t.names, name)
		}
		return t, nil
	case reflect.Slice, reflect.Array, reflect.Map:
		if rt.Kind() == reflect.Slice && rt.Elem().Kind() == reflect.Uint8 {
			return nil, nil // []byte, json.RawMessage
		}
		t := &typeInfo{}
		seen[rt] = t
		elem, err := buildType(rt.Elem(), seen)
		if err != nil {
			return nil, err
		}
		if elem == nil {
			return nil, nil
		}
		t.elem = elem
		return t, nil
	}
	return nil, nil
}
