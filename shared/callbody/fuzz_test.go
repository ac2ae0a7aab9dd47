package callbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/canon"
)

// sameValue compares two values read by ParseJSON as JSON values: numbers by
// their exact decimal value, objects regardless of key order.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		da, oka := normalise([]byte(x))
		db, okb := normalise([]byte(y))
		return oka && okb && da.equal(&db)
	default:
		return a == b
	}
}

func binding(tb testing.TB, v any) string {
	tb.Helper()
	b, err := canon.Binding("cred", "crm", "POST", "/payments", map[string]any{"body": v})
	if err != nil {
		tb.Fatalf("Binding of an accepted value: %v", err)
	}
	return b
}

// FuzzParseJSON: the reader never panics; it accepts only what
// encoding/json calls valid; an accepted value canonicalises, the canonical
// form (and the raw bytes canonicalised directly) re-parses to the same
// value, canonicalisation is idempotent, and a re-indented copy of the body
// binds the same approval.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"amount":5}`, `{"amount":5,"Amount":99999}`, `{"a":1,"a":2}`, `9007199254740993`, `1e400`,
		`0.1`, `-0`, `1.0`, `[1,2,{"x":"\ud83d\ude00"}]`, `"\ud800"`, `{"a":{"b":[null,true,false]}}`, "{\"a\":1}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON(data, nil)
		if verr := Valid(data, nil); (verr == nil) != (err == nil) {
			t.Fatalf("ParseJSON says %v, Valid says %v", err, verr)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if n := len(err.Error()); n > 16<<10 {
				t.Fatalf("error message is %d bytes", n)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted %q, which encoding/json calls invalid", data)
		}
		c1, err := canon.Marshal(v)
		if err != nil {
			t.Fatalf("canon.Marshal of an accepted value: %v", err)
		}
		raw, err := canon.Transform(data)
		if err != nil {
			t.Fatalf("canon.Transform of accepted bytes: %v", err)
		}
		if !bytes.Equal(raw, c1) {
			t.Fatalf("the raw bytes canonicalise to %s, the value to %s", raw, c1)
		}
		v2, err := ParseJSON(c1, nil)
		if err != nil {
			t.Fatalf("the canonical form %s does not re-parse: %v", c1, err)
		}
		if !sameValue(v, v2) {
			t.Fatalf("the canonical form %s re-parses to another value", c1)
		}
		c2, err := canon.Marshal(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonicalisation is not idempotent: %s then %s (%v)", c1, c2, err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, data, "", "\t"); err == nil {
			v3, err := ParseJSON(indented.Bytes(), nil)
			if err != nil {
				t.Fatalf("the re-indented body is refused: %v", err)
			}
			if binding(t, v) != binding(t, v3) {
				t.Fatalf("white space changed the binding")
			}
		}
	})
}

// FuzzBinding: two accepted bodies bind the same approval exactly when they
// are equal as JSON values (numbers by exact decimal value, keys in any
// order): equal bodies bind equally, different bodies never do.
func FuzzBinding(f *testing.F) {
	pairs := [][2]string{
		{`{"amount":1}`, `{"amount":1.0}`},
		{`{"amount":9007199254740992}`, `{"amount":9007199254740993}`},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`{"amount":5}`, `{"Amount":5}`},
		{`"\u00e9"`, `"é"`},
		{`0`, `-0`},
		{`1e2`, `100`},
		{`[1,2]`, `[2,1]`},
		{`0.1`, `0.10000000000000001`},
	}
	for _, p := range pairs {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, err := ParseJSON(a, nil)
		if err != nil {
			return
		}
		vb, err := ParseJSON(b, nil)
		if err != nil {
			return
		}
		same := sameValue(va, vb)
		if bound := binding(t, va) == binding(t, vb); bound != same {
			t.Fatalf("%q and %q: same value %v, same binding %v", a, b, same, bound)
		}
	})
}

// FuzzRead: Read never panics and its answer is consistent: Empty exactly
// for no bytes, a JSON value only from ParseJSON, an Unreadable body always
// with a short reason.
func FuzzRead(f *testing.F) {
	f.Add("application/json", []byte(`{"amount":5}`))
	f.Add("Application/JSON; charset=UTF-8", []byte(`{"amount":5,"Amount":99999}`))
	f.Add("application/x-www-form-urlencoded", []byte("amount=5&Amount=99999"))
	f.Add("application/x-www-form-urlencoded", []byte(`{"amount":99999}`))
	f.Add("text/plain", []byte("hello"))
	f.Add("", []byte("x"))
	f.Add("multipart/form-data; boundary=x", []byte("--x--"))
	f.Fuzz(func(t *testing.T, ct string, data []byte) {
		b := Read(ct, data, nil)
		if (b.Kind == Empty) != (len(data) == 0) {
			t.Fatalf("kind %s for %d bytes", b.Kind, len(data))
		}
		switch b.Kind {
		case JSON:
			if _, err := ParseJSON(data, nil); err != nil {
				t.Fatalf("JSON kind for bytes ParseJSON refuses: %v", err)
			}
		case Form:
			if b.Form == nil {
				t.Fatal("form kind without form values")
			}
		case Unreadable:
			if b.Reason == "" || len(b.Reason) > 1024 {
				t.Fatalf("reason %q", b.Reason)
			}
		}
		if b.Kind != Unreadable && (b.Reason != "" || b.Err != nil) {
			t.Fatalf("a readable body with a reason: %+v", b)
		}
	})
}

// FuzzParseForm: ParseForm never panics, and what it accepts re-encodes to
// a form that parses to the same values.
func FuzzParseForm(f *testing.F) {
	for _, s := range []string{"a=1&b=2", "a=%zz", "a=1;b=2", "+a=1", "q=a+b%20c", "a=%ff", "&&a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseForm(data)
		if err != nil {
			if !errors.Is(err, ErrForm) {
				t.Fatalf("error %v is not ErrForm", err)
			}
			return
		}
		again, err := ParseForm([]byte(v.Encode()))
		if err != nil {
			t.Fatalf("re-encoded form %q refused: %v", v.Encode(), err)
		}
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("re-encoded form parses to %v, want %v", again, v)
		}
		if _, err := url.ParseQuery(string(data)); err != nil {
			t.Fatalf("accepted %q, which url.ParseQuery refuses: %v", data, err)
		}
	})
}

// FuzzDecodeStrict: DecodeStrict never panics, and whatever it accepts
// encoding/json (with DisallowUnknownFields) accepts too, with the same
// result.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"connection":"crm","method":"POST","path":"/payments","body":{"amount":5},"intent":"write"}`,
		`{"Intent":"write"}`, `{"intent":"read","intent":"write"}`, `{"client":{"name":"x"}}`,
		`{"query":{"a":"1"}}`, `{"lines":[{"kind":"x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got envelope
		err := DecodeStrict(data, &got, nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		var want envelope
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, encoding/json %+v", got, want)
		}
	})
}

// FuzzNumber checks the round-trip rule against exact rational arithmetic:
// a number literal is accepted exactly when its value equals the value of
// the shortest form of its nearest double. (The reference is guarded
// against the huge exponents and digit strings that make big.Rat slow; the
// rule under test needs no such guard.)
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.1", "1.0", "1e3", "9007199254740993", "1.00000000000000000001", "1e400", "5e-324", "2.5e-324", "123456789012345678", "1e22", "1e23", "0.30000000000000004"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		v, err := ParseJSON([]byte(lit), &Options{MaxDepth: 1})
		if err != nil {
			if errors.Is(err, ErrNumber) && len(lit) <= MaxNumberLen {
				if ok, checked := exactReference(lit); checked && ok {
					t.Fatalf("%s refused (%v), but it is the shortest form's value", lit, err)
				}
			}
			return
		}
		if _, isNumber := v.(json.Number); !isNumber {
			return
		}
		if ok, checked := exactReference(lit); checked && !ok {
			t.Fatalf("%s accepted, but its value is not the shortest form's", lit)
		}
	})
}

// exactReference computes the rule with big.Rat; checked is false when the
// literal is too large for the reference to be cheap.
func exactReference(lit string) (ok, checked bool) {
	if len(lit) > 400 {
		return false, false
	}
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(lit[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return false, false
		}
	}
	exact, good := new(big.Rat).SetString(lit)
	if !good {
		return false, false
	}
	fl, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false, true
	}
	short, _ := new(big.Rat).SetString(strconv.FormatFloat(fl, 'e', -1, 64))
	return exact.Cmp(short) == 0, true
}
