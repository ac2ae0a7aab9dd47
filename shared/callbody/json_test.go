package callbody

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/canon"
)

func TestParseJSONAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // canonical form (RFC 8785)
	}{
		{name: "object", in: `{"b": 2, "a": [true, false, null, "x"]}`, want: `{"a":[true,false,null,"x"],"b":2}`},
		{name: "white space around the value", in: " \t\r\n{}\n ", want: `{}`},
		{name: "a scalar at the top", in: `"hi"`, want: `"hi"`},
		{name: "0.1 is the shortest form of its double", in: `0.1`, want: `0.1`},
		{name: "1.0 has the exact value 1", in: `1.0`, want: `1`},
		{name: "1e3 is 1000", in: `1e3`, want: `1000`},
		{name: "1E+2 is 100", in: `1E+2`, want: `100`},
		{name: "-0 is zero", in: `-0`, want: `0`},
		{name: "trailing zeros keep the value", in: `12.50000`, want: `12.5`},
		{name: "2^53 is exact", in: `9007199254740992`, want: `9007199254740992`},
		{name: "-2^53 is exact", in: `-9007199254740992`, want: `-9007199254740992`},
		{name: "the largest double in its shortest form", in: `1.7976931348623157e308`, want: `1.7976931348623157e+308`},
		{name: "the smallest subnormal in its shortest form", in: `5e-324`, want: `5e-324`},
		{name: "2^53 written with an exponent", in: `9.007199254740992e15`, want: `9007199254740992`},
		{name: "leading zeros after the point", in: `0.000001`, want: `0.000001`},
		{name: "zero with a huge exponent is still zero", in: `0e999999999999`, want: `0`},
		{name: "keys that differ only in case are different keys", in: `{"amount":5,"Amount":99999}`, want: `{"Amount":99999,"amount":5}`},
		{name: "escapes decode", in: `"\u00e9\n\/\"\\"`, want: `"é\n/\"\\"`},
		{name: "a surrogate pair decodes", in: `"\ud83d\ude00"`, want: `"😀"`},
		{name: "UTF-8 is kept", in: `{"naïve":"日本"}`, want: `{"naïve":"日本"}`},
		{name: "64 levels deep", in: strings.Repeat("[", 64) + strings.Repeat("]", 64), want: strings.Repeat("[", 64) + strings.Repeat("]", 64)},
		{name: "the same key in two objects is no duplicate", in: `[{"a":1},{"a":1}]`, want: `[{"a":1},{"a":1}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseJSON([]byte(tt.in), nil)
			if err != nil {
				t.Fatalf("ParseJSON(%s): %v", tt.in, err)
			}
			if err := Valid([]byte(tt.in), nil); err != nil {
				t.Errorf("Valid: %v", err)
			}
			got, err := canon.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("canonical form %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseJSONNumbersStayAsWritten(t *testing.T) {
	v, err := ParseJSON([]byte(`{"n":1.50}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.(map[string]any)["n"]; n != json.Number("1.50") {
		t.Errorf("got %#v, want json.Number(\"1.50\")", n)
	}
}

func TestParseJSONRefuses(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		kind   error
		path   string // exact
		offset *int   // exact when set
		detail string // substring
	}{
		{name: "duplicate key", in: `{"a":1,"a":2}`, kind: ErrDuplicateKey, path: "$", offset: at(7), detail: `"a" appears twice`},
		{name: "duplicate key spelt with an escape", in: `{"a":1,"\u0061":2}`, kind: ErrDuplicateKey, path: "$", offset: at(7)},
		{name: "duplicate key deep inside", in: `{"x":[{"b":1},{"b":1,"b":1}]}`, kind: ErrDuplicateKey, path: "$.x[1]", offset: at(21)},
		{name: "duplicate key with a null value", in: `{"amount":null,"amount":99999}`, kind: ErrDuplicateKey, path: "$"},
		{name: "duplicate key shown with a quoted path", in: `{"a b":{"c":1,"c":2}}`, kind: ErrDuplicateKey, path: `$["a b"]`},
		{name: "65 levels deep", in: strings.Repeat("[", 65) + strings.Repeat("]", 65), kind: ErrTooDeep, offset: at(64), detail: "more than 64 levels"},
		{name: "9,990 levels deep stops at the limit", in: strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990), kind: ErrTooDeep, offset: at(64 * 5)},
		{name: "2^53 + 1 is not a double", in: `9007199254740993`, kind: ErrNumber, path: "$", offset: at(0), detail: "the nearest is 9007199254740992"},
		{name: "a fraction finer than a double", in: `1.00000000000000000001`, kind: ErrNumber, detail: "the nearest is 1"},
		{name: "1e400 is out of range", in: `{"amount":1e400}`, kind: ErrNumber, path: "$.amount", offset: at(10), detail: "out of the range"},
		{name: "-1e400 is out of range", in: `[-1e400]`, kind: ErrNumber, path: "$[0]"},
		{name: "1e-400 underflows to zero", in: `1e-400`, kind: ErrNumber, detail: "the nearest is 0"},
		{name: "an 18-digit integer", in: `123456789012345678`, kind: ErrNumber},
		{name: "the exact decimal of the double nearest 0.1", in: `0.1000000000000000055511151231257827021181583404541015625`, kind: ErrNumber},
		{name: "a number longer than MaxNumberLen", in: "1." + strings.Repeat("0", MaxNumberLen), kind: ErrNumber, detail: "bytes long"},
		{name: "a huge exponent", in: `1e99999999999999999999`, kind: ErrNumber},
		{name: "trailing brace", in: `{"amount":5}}`, kind: ErrTrailingData, path: "$", offset: at(12)},
		{name: "two values", in: `{} {}`, kind: ErrTrailingData, offset: at(3)},
		{name: "two numbers", in: `1 2`, kind: ErrTrailingData},
		{name: "a leading zero", in: `01`, kind: ErrSyntax, detail: "leading zero"},
		{name: "a lone minus", in: `-`, kind: ErrSyntax},
		{name: "no digit after the point", in: `1.`, kind: ErrSyntax},
		{name: "no digit before the point", in: `.5`, kind: ErrSyntax},
		{name: "a plus sign", in: `+1`, kind: ErrSyntax},
		{name: "NaN", in: `NaN`, kind: ErrSyntax},
		{name: "Infinity", in: `[Infinity]`, kind: ErrSyntax, path: "$[0]"},
		{name: "invalid UTF-8", in: "\"a\xffb\"", kind: ErrString, offset: at(2), detail: "invalid UTF-8"},
		{name: "UTF-8 of a surrogate", in: "\"\xed\xa0\x80\"", kind: ErrString},
		{name: "a lone high surrogate", in: `"\ud800"`, kind: ErrString, detail: "high surrogate"},
		{name: "a high surrogate before a non-surrogate", in: `"\ud800\u0041"`, kind: ErrString},
		{name: "a lone low surrogate", in: `"\udc00"`, kind: ErrString, detail: "low surrogate"},
		{name: "an unescaped control character", in: "\"a\x01\"", kind: ErrString, detail: "U+0001"},
		{name: "an unknown escape", in: `"\x41"`, kind: ErrSyntax, detail: "invalid escape"},
		{name: "a short \\u escape", in: `"\u12"`, kind: ErrSyntax},
		{name: "a byte order mark", in: "\xef\xbb\xbf{}", kind: ErrSyntax, detail: "byte order mark"},
		{name: "empty", in: ``, kind: ErrSyntax, detail: "empty body"},
		{name: "white space only", in: " \n", kind: ErrSyntax},
		{name: "missing colon", in: `{"a" 1}`, kind: ErrSyntax},
		{name: "a trailing comma in an array", in: `[1,]`, kind: ErrSyntax, path: "$[1]"},
		{name: "a trailing comma in an object", in: `{"a":1,}`, kind: ErrSyntax},
		{name: "a key that is not a string", in: `{a:1}`, kind: ErrSyntax},
		{name: "an unterminated string", in: `"abc`, kind: ErrSyntax},
		{name: "an unterminated object", in: `{"a":1`, kind: ErrSyntax},
		{name: "single quotes", in: `{'a':1}`, kind: ErrSyntax},
		{name: "a comment", in: `{"a":1 /* no */}`, kind: ErrSyntax},
		{name: "tru", in: `tru`, kind: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tt.in), nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseJSON(%.60q) = %v, want an *Error", tt.in, err)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %q is not %v", err, tt.kind)
			}
			if tt.path != "" && e.Path != tt.path {
				t.Errorf("path %q, want %q (%v)", e.Path, tt.path, err)
			}
			if tt.offset != nil && e.Offset != *tt.offset {
				t.Errorf("offset %d, want %d (%v)", e.Offset, *tt.offset, err)
			}
			if !strings.Contains(e.Error(), tt.detail) {
				t.Errorf("error %q does not say %q", err, tt.detail)
			}
			if len(e.Error()) > 512 {
				t.Errorf("error is %d bytes long", len(e.Error()))
			}
			if verr := Valid([]byte(tt.in), nil); verr == nil || verr.Error() != err.Error() {
				t.Errorf("Valid = %v, want %v", verr, err)
			}
		})
	}
}

func at(n int) *int { return &n }

func TestParseJSONMaxDepth(t *testing.T) {
	tests := []struct {
		name  string
		depth int
		in    string
		ok    bool
	}{
		{name: "1 allows a flat array", depth: 1, in: `[1,2]`, ok: true},
		{name: "1 refuses an array in an array", depth: 1, in: `[[1]]`},
		{name: "1 allows a scalar", depth: 1, in: `3`, ok: true},
		{name: "a large limit is capped", depth: 1 << 30, in: strings.Repeat("[", maxMaxDepth+1) + strings.Repeat("]", maxMaxDepth+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tt.in), &Options{MaxDepth: tt.depth})
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrTooDeep) {
				t.Errorf("err = %v, want ErrTooDeep", err)
			}
		})
	}
}

func TestErrorMessagesStayShort(t *testing.T) {
	long := strings.Repeat("k", 10000)
	in := `{"` + long + `":{"` + long + `":1,"` + long + `":2}}`
	_, err := ParseJSON([]byte(in), nil)
	if !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("err = %v", err)
	}
	if n := len(err.Error()); n > 300 {
		t.Errorf("error message is %d bytes: %.200s", n, err)
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{name: "1 and 1.0", a: "1", b: "1.0", same: true},
		{name: "1 and 1e0", a: "1", b: "1e0", same: true},
		{name: "100 and 1e2", a: "100", b: "1e+02", same: true},
		{name: "0.001 and 1e-3", a: "0.001", b: "1e-03", same: true},
		{name: "0 and -0", a: "0", b: "-0.0e5", same: true},
		{name: "1 and -1", a: "1", b: "-1"},
		{name: "1 and 10", a: "1", b: "10"},
		{name: "12 and 21", a: "12", b: "21"},
		{name: "0 and 1e-400", a: "0", b: "1e-400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := normalise([]byte(tt.a))
			b, _ := normalise([]byte(tt.b))
			if got := a.equal(&b); got != tt.same {
				t.Errorf("equal = %v, want %v (%+v, %+v)", got, tt.same, a, b)
			}
		})
	}
}

func BenchmarkParseJSON(b *testing.B) {
	in := []byte(`{"amount": 10001, "currency": "EUR", "to": "ACME", "lines": [{"sku": "a-1", "qty": 2, "price": 12.5}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseJSON(in, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseJSONAllocations bounds the reader's work on the body of
// BenchmarkParseJSON: the value's own maps, slices, strings and numbers (24
// allocations, 27 with the hand-written parser it replaced), and nothing for
// Valid, which builds no value (the decoders are pooled).
func TestParseJSONAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	in := []byte(`{"amount": 10001, "currency": "EUR", "to": "ACME", "lines": [{"sku": "a-1", "qty": 2, "price": 12.5}]}`)
	if _, err := ParseJSON(in, nil); err != nil { // warm the pool
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseJSON(in, nil) }); n > 24 {
		t.Errorf("ParseJSON: %v allocations, want at most 24", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Valid(in, nil) }); n > 0 {
		t.Errorf("Valid: %v allocations, want none", n)
	}
}
