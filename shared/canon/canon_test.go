package canon

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rfc8785Dir holds the reference vectors of RFC 8785, copied with their
// licence and source (testdata/rfc8785/README.md).
const rfc8785Dir = "testdata/rfc8785"

func TestTransformRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(rfc8785Dir, "input", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatalf("no RFC 8785 vectors under %s: the shared/ folder must sit beside the project", rfc8785Dir)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			src := mustRead(t, in)
			want := mustRead(t, filepath.Join(rfc8785Dir, "output", name+".json"))
			hexWant, err := hex.DecodeString(strings.Join(strings.Fields(string(mustRead(t, filepath.Join(rfc8785Dir, "outhex", name+".txt")))), ""))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, hexWant) {
				t.Fatalf("vector files disagree for %s", name)
			}
			got, err := Transform(src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Transform(%s)\n got %s\nwant %s", name, got, want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"key order by UTF-16 code units", map[string]any{"\u20ac": 1, "\r": 2, "\U0001f600": 3, "\u0080": 4, "1": 5}, "{\"\\r\":2,\"1\":5,\"\u0080\":4,\"\u20ac\":1,\"\U0001f600\":3}"},
		{"number forms", []any{1e21, 1e-7, 0.000001, math.Copysign(0, -1), 100.0, 333333333.3333333}, `[1e+21,1e-7,0.000001,0,100,333333333.3333333]`},
		{"json.Number keeps the ECMAScript form", []any{json.Number("10001"), json.Number("1.50")}, `[10001,1.5]`},
		{"html characters are not escaped", map[string]any{"a": "<&>"}, `{"a":"<&>"}`},
		{"control characters escaped minimally", "\u0001\n\"\\/", `"\u0001\n\"\\/"`},
		{"raw message canonicalized", json.RawMessage(`{ "b" : 1, "a" : [ 2 , 3 ] }`), `{"a":[2,3],"b":1}`},
		{"null", nil, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBinding(t *testing.T) {
	args := func(id string, body string) map[string]any {
		return map[string]any{"path": map[string]string{"id": id}, "query": map[string]any{}, "body": json.RawMessage(body)}
	}
	base, err := Binding("chat-user", "crm", "DELETE", "/contacts/{id}", args("12", `null`))
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 64 {
		t.Fatalf("binding %q is not hex sha256", base)
	}
	same, _ := Binding("chat-user", "crm", "DELETE", "/contacts/{id}", map[string]any{"body": json.RawMessage(" null "), "query": map[string]any{}, "path": map[string]string{"id": "12"}})
	if same != base {
		t.Errorf("key order or white space changed the binding")
	}
	others := map[string][]any{
		"another contact":    {"chat-user", "crm", "DELETE", "/contacts/{id}", args("13", `null`)},
		"another credential": {"agent", "crm", "DELETE", "/contacts/{id}", args("12", `null`)},
		"another connection": {"chat-user", "billing", "DELETE", "/contacts/{id}", args("12", `null`)},
		"another method":     {"chat-user", "crm", "POST", "/contacts/{id}", args("12", `null`)},
		"another endpoint":   {"chat-user", "crm", "DELETE", "/accounts/{id}", args("12", `null`)},
		"a body":             {"chat-user", "crm", "DELETE", "/contacts/{id}", args("12", `{}`)},
		"a field split":      {"chat-user", "crm", "DELETE", "/contacts/{id}", args("1", `null`)},
	}
	for name, in := range others {
		got, err := Binding(in[0].(string), in[1].(string), in[2].(string), in[3].(string), in[4])
		if err != nil {
			t.Fatal(err)
		}
		if got == base {
			t.Errorf("%s: same binding as the original call", name)
		}
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func BenchmarkBinding(b *testing.B) {
	args := map[string]any{"path": map[string]string{"id": "12"}, "query": map[string]any{}, "body": json.RawMessage(`{"amount": 10001, "currency": "EUR", "to": "ACME"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Binding("chat-user", "crm", "POST", "/payments", args); err != nil {
			b.Fatal(err)
		}
	}
}
