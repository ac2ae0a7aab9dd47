package jsonview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrettyLikeIndent(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "object", in: `{"a":[1,2],"b":{"c":null,"d":true,"e":false}}`},
		{name: "empty containers", in: `{"a":[],"b":{},"c":[ ],"d":{ }}`},
		{name: "scalar", in: ` 12.5e-3 `},
		{name: "string with escapes", in: `"a\"b\\c\u00e9\n"`},
		{name: "white space everywhere", in: " [ 1 ,\n\t2 , { \"x\" : \"y\" } ] "},
		{name: "nested to the depth limit", in: strings.Repeat("[", 16) + strings.Repeat("]", 16)},
		{name: "as many items as the limit", in: "[" + strings.Repeat("1,", 199) + "1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.Indent(&want, []byte(tt.in), "", "  "); err != nil {
				t.Fatal(err)
			}
			got, cut := Pretty([]byte(tt.in), nil)
			if got != strings.TrimSpace(want.String()) || cut {
				t.Errorf("Pretty = %q (truncated %v)\nwant %q", got, cut, want.String())
			}
			want.Reset()
			json.Compact(&want, []byte(tt.in))
			c, cut := Compact([]byte(tt.in), nil)
			if string(c) != want.String() || cut {
				t.Errorf("Compact = %s (truncated %v), want %s", c, cut, want.String())
			}
		})
	}
}

func TestNotJSONIsText(t *testing.T) {
	tests := []struct {
		name, in, pretty, compact string
	}{
		{name: "text", in: "not json", pretty: "not json", compact: `"not json"`},
		{name: "trailing data", in: `{"a":1}}`, pretty: `{"a":1}}`, compact: `"{\"a\":1}}"`},
		{name: "invalid UTF-8 is replaced", in: "\"a\xffb\"", pretty: "\"a\uFFFDb\"", compact: `"\"a` + "\uFFFD" + `b\""`},
		{name: "empty", in: "", pretty: "", compact: "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Pretty([]byte(tt.in), nil); got != tt.pretty {
				t.Errorf("Pretty = %q, want %q", got, tt.pretty)
			}
			if got, _ := Compact([]byte(tt.in), nil); string(got) != tt.compact {
				t.Errorf("Compact = %s, want %s", got, tt.compact)
			}
		})
	}
}

// nasty inputs: each must render within the bound, with a marker, in
// work linear in the input.
func nasty() []struct {
	name   string
	in     []byte
	marker string
} {
	deepObj := strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990)
	deepArr := strings.Repeat("[", 500000) + strings.Repeat("]", 500000)
	var wide, many, longs, escapes strings.Builder
	wide.WriteString("{")
	for i := range 100000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":%d`, i, i)
	}
	wide.WriteString("}")
	many.WriteString("[")
	for i := range 1000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"connection":"crm","method":"DELETE","path":"/contacts/%d","args":{"body":{"note":%q}}}`, i, strings.Repeat("x", 500))
	}
	many.WriteString("]")
	longs.WriteString(`{"note":"` + strings.Repeat("a", 1<<20) + `"}`)
	escapes.WriteString(`["` + strings.Repeat(`\u003c\"`, 100000) + `"]`)
	return []struct {
		name   string
		in     []byte
		marker string
	}{
		{name: "20 KB nested 9,990 levels deep", in: []byte(deepObj), marker: "deeper than"},
		{name: "1 MB of nested arrays", in: []byte(deepArr), marker: "deeper than"},
		{name: "an object with 100,000 members", in: []byte(wide.String()), marker: "more members"},
		{name: "1,000 operations", in: []byte(many.String()), marker: "truncated"},
		{name: "a 1 MiB string", in: []byte(longs.String()), marker: "(truncated: 1048576 bytes)"},
		{name: "a string of escapes", in: []byte(escapes.String()), marker: "truncated"},
		{name: "a 1 MiB number", in: []byte("[" + strings.Repeat("9", 1<<20) + "]"), marker: "a number of 1048576 bytes"},
		{name: "1 MiB that is not JSON", in: bytes.Repeat([]byte("<&\"\x00\xff"), 200000), marker: "truncated"},
		{name: "deep and then broken", in: []byte(strings.Repeat("[", 100) + "}"), marker: ""},
	}
}

func TestNastyInputsAreBounded(t *testing.T) {
	for _, tt := range nasty() {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range []*Limits{nil, {MaxBytes: 4096, MaxDepth: 4, MaxItems: 5, MaxString: 100}, {MaxBytes: 256 << 10, MaxDepth: 32}} {
				max := l.resolve().maxBytes
				var p string
				var c json.RawMessage
				var pcut, ccut bool
				alloc := allocated(func() {
					p, pcut = Pretty(tt.in, l)
					c, ccut = Compact(tt.in, l)
				})
				// Work is counted in bytes allocated, not timed: the output's
				// buffers (Pretty and Compact, within max each) and, for
				// nesting, a stack that grows with the input, read once. A
				// 200 MB page for a 1 MB input, or a copy per level, is
				// far past it.
				if bound := uint64(4*max + 6*len(tt.in)); alloc > bound {
					t.Errorf("limits %+v: %d bytes allocated for %d bytes in, bound %d", l, alloc, len(tt.in), bound)
				}
				if len(p) > max || len(c) > max {
					t.Errorf("limits %+v: Pretty %d bytes, Compact %d bytes, bound %d", l, len(p), len(c), max)
				}
				if tt.marker != "" && (!strings.Contains(p, tt.marker) || !strings.Contains(string(c), tt.marker) || !pcut || !ccut) {
					t.Errorf("limits %+v: no marker %q (truncated %v %v):\n%.300s", l, tt.marker, pcut, ccut, p)
				}
				if !utf8.ValidString(p) || !json.Valid(c) && utf8.Valid(tt.in) && json.Valid(tt.in) {
					t.Errorf("limits %+v: invalid output", l)
				}
			}
		})
	}
}

func TestCutStringsStayValid(t *testing.T) {
	for _, unit := range []string{`\u00e9`, `é`, `😀`, `\"`, `\\`, `a`, `\ud83d\ude00`} {
		for n := 1; n < 40; n++ {
			in := []byte(`["` + strings.Repeat(unit, n) + `"]`)
			out, _ := Compact(in, &Limits{MaxString: 16})
			if !json.Valid(out) {
				t.Fatalf("%d × %s: output %s is not JSON", n, unit, out)
			}
			var v []string
			if err := json.Unmarshal(out, &v); err != nil || len(v) != 1 {
				t.Fatalf("%s: %v", out, err)
			}
		}
	}
}

func TestMarkers(t *testing.T) {
	tests := []struct {
		name string
		in   string
		lim  Limits
		want string // Compact
	}{
		{name: "too deep", in: `{"a":{"b":[1]}}`, lim: Limits{MaxDepth: 2}, want: `{"a":{"b":"[…] (truncated: deeper than 2 levels)"}}`},
		{name: "too many items", in: `[1,2,3,4]`, lim: Limits{MaxItems: 2}, want: `[1,2,"… (truncated: 2 more items)"]`},
		{name: "too many members", in: `{"a":1,"b":2,"c":3}`, lim: Limits{MaxItems: 1}, want: `{"a":1,"…":"(truncated: 2 more members)"}`},
		{name: "a long string", in: `"` + strings.Repeat("x", 20) + `"`, lim: Limits{MaxString: 16}, want: `"` + strings.Repeat("x", 16) + `… (truncated: 20 bytes)"`},
		{name: "a long key", in: `{"` + strings.Repeat("k", 20) + `":1}`, lim: Limits{MaxString: 16}, want: `{"` + strings.Repeat("k", 16) + `… (truncated: 20 bytes)":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Compact([]byte(tt.in), &tt.lim)
			if string(got) != tt.want || !cut {
				t.Errorf("got %s (truncated %v), want %s", got, cut, tt.want)
			}
		})
	}
}

func TestFullOutputClosesEveryContainer(t *testing.T) {
	in := `{"a":[` + strings.Repeat(`{"x":"`+strings.Repeat("y", 900)+`"},`, 200) + `{}]}`
	out, cut := Compact([]byte(in), &Limits{MaxBytes: 8192})
	if !cut || !json.Valid(out) || len(out) > 8192 || !strings.Contains(string(out), "the rest is not shown") {
		t.Errorf("truncated %v, %d bytes: %.200s…%s", cut, len(out), out, out[max(0, len(out)-100):])
	}
	p, _ := Pretty([]byte(in), &Limits{MaxBytes: 8192})
	if !json.Valid([]byte(p)) || len(p) > 8192 {
		t.Errorf("Pretty: %d bytes, valid %v", len(p), json.Valid([]byte(p)))
	}
}

func BenchmarkPrettyDeep(b *testing.B) {
	in := []byte(strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		Pretty(in, nil)
	}
}

// TestPrettyShowsHiddenCharacters: the bytes ACME-<U+202E>4321-8765<U+202C>
// read ACME-5678-1234 when shown as they are; Pretty writes the override,
// in keys as in values, as escapes a person sees, while Compact (data for
// programs) keeps the bytes unless Visible is set.
func TestPrettyShowsHiddenCharacters(t *testing.T) {
	raw := []byte("{\"to_account\": \"ACME-\u202e4321-8765\u202c\", \"note\u200b\": \"x\U000E0041\u00ad\x7f\"}")
	got, cut := Pretty(raw, nil)
	want := "{\n  \"to_account\": \"ACME-\\u202E4321-8765\\u202C\",\n  \"note\\u200B\": \"x\\uDB40\\uDC41\\u00AD\\u007F\"\n}"
	if got != want || cut {
		t.Errorf("Pretty = %s (cut %v), want %s", got, cut, want)
	}
	c, _ := Compact(raw, nil)
	if !strings.Contains(string(c), "ACME-\u202e4321-8765\u202c") {
		t.Errorf("Compact changed the data: %s", c)
	}
	c, _ = Compact(raw, &Limits{Visible: true})
	if !strings.Contains(string(c), `ACME-\u202E4321-8765\u202C`) {
		t.Errorf("Compact with Visible = %s", c)
	}
	if text, _ := Pretty([]byte("not json \u202e\n\tend"), nil); text != "not json \\u202E\n\tend" {
		t.Errorf("Pretty of text = %q", text)
	}
	// An escape counts as the bytes it is written as: the bound holds.
	long := []byte(`"` + strings.Repeat("\u202e", 4000) + `"`)
	if text, cut := Pretty(long, &Limits{MaxBytes: 1024}); len(text) > 1024 || !cut {
		t.Errorf("Pretty wrote %d bytes (cut %v) with MaxBytes 1024", len(text), cut)
	}
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
