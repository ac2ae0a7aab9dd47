package upstream_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/upstream"
)

// rawJSONCases are bodies on the edges of JSON's grammar, where two
// compactors could disagree on what is valid or on the bytes they write.
var rawJSONCases = []string{
	`{"id":12,"name":"John McCarthy","open_payments":[{"amount":3600.00}]}`,
	"{\n  \"z\" : 1 ,\r\n\t\"a\":[ true , null , false ]\n}\n",
	` "text" `, `0`, `-0`, `-0.0e-0`, `1E+2`, `1e5`, `12345678901234567890123`,
	`01`, `-`, `1.`, `.5`, `+1`, `1e`, `0x10`, `NaN`, `Infinity`,
	`"\u00e9<>&\u2028\u2029"`, `"\/\b\f\n\r\t\"\\"`, `"\ud800"`, `"\udc00\ud800"`, `"\ud83d\ude00"`,
	`"\u00"`, `"\x41"`, `"\'"`, "\"a\tb\"", "\"a\x00b\"", "\"\x7f\"", `"é"`, `"🙂"`,
	`{"a":1,"a":2}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{'a':1}`,
	`[]`, `{}`, `[[[[[]]]]]`, `[{"a":[{"b":{}}]}]`, `null`, `nul`, `true`, `tru`, `True`,
	`{} {}`, `{}x`, `[] `, "\ufeff{}", ``, ` `, "\n", `"`, `"abc`, `[`, `]`, `{"a":1`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200),
}

// TestAppendRawJSONMatchesCompact: RawJSON takes exactly the bodies
// encoding/json.Compact takes (in valid UTF-8) and writes the same bytes.
func TestAppendRawJSONMatchesCompact(t *testing.T) {
	for _, body := range rawJSONCases {
		checkAgainstCompact(t, []byte(body))
	}
}

func FuzzAppendRawJSONMatchesCompact(f *testing.F) {
	for _, body := range rawJSONCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkAgainstCompact(t, body) })
}

func checkAgainstCompact(t *testing.T, body []byte) {
	t.Helper()
	var want bytes.Buffer
	wantOK := utf8.Valid(body) && json.Compact(&want, body) == nil
	r := &upstream.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	prefix := []byte("prefix:")
	got, ok := r.AppendRawJSON(prefix)
	if ok != wantOK {
		t.Fatalf("%.80q: ok = %v, encoding/json.Compact's %v", body, ok, wantOK)
	}
	if !ok {
		if string(got) != "prefix:" {
			t.Fatalf("%.80q: refused, but dst became %.80q", body, got)
		}
		return
	}
	if string(got) != "prefix:"+want.String() {
		t.Fatalf("%.80q: appended %.80q, encoding/json.Compact wrote %.80q", body, got[len(prefix):], want.Bytes())
	}
}

// TestAppendRawJSONAllocations: compacting into a buffer with room
// allocates nothing.
func TestAppendRawJSONAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t) // the race detector empties jsontext's pools at random
	r := &upstream.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"id":12, "name":"John McCarthy", "open_payments":[{"amount":3600.00}]}`)}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := r.AppendRawJSON(dst[:0]); !ok {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
}
