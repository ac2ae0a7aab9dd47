package jsonview

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/display"
)

// hasHidden reports whether raw holds a rune display.Hidden reports, JSON
// white space aside.
func hasHidden(raw []byte) bool {
	for _, r := range string(raw) {
		if display.Hidden(r) && !strings.ContainsRune(" \t\r\n", r) {
			return true
		}
	}
	return false
}

// FuzzRender: for any input and any limits, Pretty and Compact never panic
// and never write more than MaxBytes; the output of valid JSON is valid JSON
// and says "truncated" exactly when something was left out; what was not
// truncated is the input, re-indented (Pretty) or compacted (Compact);
// Pretty leaves no hidden character (display.Hidden) unescaped, and means
// what the input means.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"path":{"id":"12"},"query":{},"body":{"amount":5}}`), uint16(0), uint8(0), uint16(0), uint16(0))
	f.Add([]byte(strings.Repeat(`{"a":`, 200)+"1"+strings.Repeat("}", 200)), uint16(0), uint8(0), uint16(0), uint16(0))
	f.Add([]byte(`["`+strings.Repeat(`\u00e9`, 50)+`"]`), uint16(1024), uint8(2), uint16(1), uint16(16))
	f.Add([]byte(`[1,2,3,{"a":[4,5]}]`), uint16(0), uint8(1), uint16(2), uint16(0))
	f.Add([]byte("not json \xff"), uint16(0), uint8(0), uint16(0), uint16(0))
	f.Add([]byte("{\"to_account\": \"ACME-\u202e4321-8765\u202c\", \"k\U000E0041\": 1}"), uint16(0), uint8(0), uint16(0), uint16(20))
	f.Fuzz(func(t *testing.T, raw []byte, maxBytes uint16, maxDepth uint8, maxItems, maxString uint16) {
		l := &Limits{MaxBytes: int(maxBytes), MaxDepth: int(maxDepth), MaxItems: int(maxItems), MaxString: int(maxString)}
		bound := l.resolve().maxBytes
		p, pcut := Pretty(raw, l)
		c, ccut := Compact(raw, l)
		if len(p) > bound || len(c) > bound {
			t.Fatalf("Pretty %d bytes, Compact %d bytes, bound %d", len(p), len(c), bound)
		}
		if !utf8.ValidString(p) || !json.Valid(c) {
			t.Fatalf("invalid output: %q / %q", p, c)
		}
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return
		}
		if pcut != strings.Contains(p, "truncated") && !strings.Contains(string(raw), "truncated") {
			t.Fatalf("truncated %v but the marker says otherwise: %q", pcut, p)
		}
		if !json.Valid([]byte(p)) {
			// Input json.Valid accepts but Pretty shows as text (an
			// unusual escape, a nesting encoding/json allows): fine when
			// it is the input itself.
			if !pcut && p != display.Block(string(raw)) {
				t.Fatalf("Pretty output %q is neither JSON nor the input", p)
			}
			return
		}
		for _, r := range p {
			if display.Hidden(r) && r != '\n' {
				t.Fatalf("Pretty left U+%04X in %q", r, p)
			}
		}
		if !pcut {
			var want bytes.Buffer
			json.Indent(&want, raw, "", "  ")
			if !hasHidden(raw) && p != strings.TrimRight(want.String(), " \t\r\n") {
				t.Fatalf("Pretty = %q, json.Indent = %q", p, want.String())
			}
			// Escaping changes the spelling only: the value is the input's.
			// Numbers are compared as written (1E999 is valid JSON that no
			// float64 holds).
			a, aerr := decodeNumbers([]byte(p))
			b, berr := decodeNumbers(raw)
			if aerr != nil || berr != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("Pretty %q does not mean what %q means", p, raw)
			}
		}
		if !ccut {
			var want bytes.Buffer
			json.Compact(&want, raw)
			if string(c) != want.String() {
				t.Fatalf("Compact = %s, json.Compact = %s", c, want.String())
			}
		}
	})
}

// decodeNumbers decodes JSON keeping numbers as written.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}
