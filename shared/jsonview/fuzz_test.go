package jsonview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRender: for any input and any limits, Pretty and Compact never panic
// and never write more than MaxBytes; the output of valid JSON is valid JSON
// and says "truncated" exactly when something was left out; what was not
// truncated is the input, re-indented (Pretty) or compacted (Compact).
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"path":{"id":"12"},"query":{},"body":{"amount":5}}`), uint16(0), uint8(0), uint16(0), uint16(0))
	f.Add([]byte(strings.Repeat(`{"a":`, 200)+"1"+strings.Repeat("}", 200)), uint16(0), uint8(0), uint16(0), uint16(0))
	f.Add([]byte(`["`+strings.Repeat(`\u00e9`, 50)+`"]`), uint16(1024), uint8(2), uint16(1), uint16(16))
	f.Add([]byte(`[1,2,3,{"a":[4,5]}]`), uint16(0), uint8(1), uint16(2), uint16(0))
	f.Add([]byte("not json \xff"), uint16(0), uint8(0), uint16(0), uint16(0))
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
			if !pcut && p != strings.ToValidUTF8(string(raw), "\uFFFD") {
				t.Fatalf("Pretty output %q is neither JSON nor the input", p)
			}
			return
		}
		if !pcut {
			var want bytes.Buffer
			json.Indent(&want, raw, "", "  ")
			if p != strings.TrimRight(want.String(), " \t\r\n") {
				t.Fatalf("Pretty = %q, json.Indent = %q", p, want.String())
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
