package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
)

// arrayBinding is Binding as the general path computes it: the canonical
// form of the whole array, encoded by encoding/json.
func arrayBinding(tb testing.TB, credential, connection, method, endpoint string, args any) (string, error) {
	tb.Helper()
	b, err := Marshal([]any{bindingVersion, credential, connection, method, endpoint, args})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TestPlainBindingMatchesArray: the binding built without re-encoding the
// four strings is the general path's, for the strings the fast path takes
// and those it leaves (which must still agree through Binding).
func TestPlainBindingMatchesArray(t *testing.T) {
	args := map[string]any{"path": map[string]string{"id": "12"}, "query": map[string]any{"q": []string{"<a&b>"}}, "body": json.RawMessage(`{"n": 1e3, "s": "\u00e9\u2028", "z": [3,1]}`)}
	for _, tc := range []struct {
		cred, conn, method, endpoint string
		args                         any
		fast                         bool
	}{
		{"chat-user", "crm", "DELETE", "/contacts/{id}", args, true},
		{"a b", "<&>", "~", "/x?y=z#w", nil, true},
		{"", "", "", "", json.RawMessage(`"s"`), true},
		{"a\"b", "crm", "GET", "/x", args, false},
		{"a\\b", "crm", "GET", "/x", args, false},
		{"é", "crm", "GET", "/x", args, false},
		{"a\x7f", "crm", "GET", "/x", args, false},
		{"a\nb", "crm", "GET", "/x", args, false},
		{"\xff", "crm", "GET", "/x", args, false},
		{"chat-user", "crm", "GET", "/x", json.RawMessage(`{"a":`), false},
		{"chat-user", "crm", "GET", "/x", func() {}, false},
	} {
		want, wantErr := arrayBinding(t, tc.cred, tc.conn, tc.method, tc.endpoint, tc.args)
		got, gotErr := Binding(tc.cred, tc.conn, tc.method, tc.endpoint, tc.args)
		if got != want || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("Binding(%q, %q, %q, %q): %s %v, want %s %v", tc.cred, tc.conn, tc.method, tc.endpoint, got, gotErr, want, wantErr)
		}
		if _, ok := plainBinding(tc.cred, tc.conn, tc.method, tc.endpoint, tc.args); ok != tc.fast {
			t.Errorf("plainBinding(%q, %q, %q, %q) took the fast path: %v, want %v", tc.cred, tc.conn, tc.method, tc.endpoint, ok, tc.fast)
		}
	}
}

// FuzzPlainBinding: Binding equals the general path's for any strings and
// arguments.
func FuzzPlainBinding(f *testing.F) {
	f.Add("chat-user", "crm", "DELETE", "/contacts/{id}", []byte(`{"path":{"id":"12"},"body":{"b":1,"a":[1.50,"\u0041"]}}`))
	f.Add("a\"", "b,", "c]", "d", []byte(`"e"`))
	f.Fuzz(func(t *testing.T, cred, conn, method, endpoint string, args []byte) {
		if !json.Valid(args) {
			args = []byte(`null`)
		}
		want, wantErr := arrayBinding(t, cred, conn, method, endpoint, json.RawMessage(args))
		got, gotErr := Binding(cred, conn, method, endpoint, json.RawMessage(args))
		if got != want || (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("Binding: %s %v, want %s %v", got, gotErr, want, wantErr)
		}
	})
}

// TestBindingAllocs bounds a call's binding (BenchmarkBinding's call): the
// four strings are no longer encoded and re-parsed with the arguments.
func TestBindingAllocs(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	args := map[string]any{"path": map[string]string{"id": "12"}, "query": map[string]any{}, "body": json.RawMessage(`{"amount": 10001, "currency": "EUR", "to": "ACME"}`)}
	n := testing.AllocsPerRun(100, func() {
		if _, err := Binding("chat-user", "crm", "POST", "/payments", args); err != nil {
			t.Fatal(err)
		}
	})
	if n > 72 {
		t.Errorf("Binding: %v allocations, want ≤ 72 (95 before)", n)
	}
}
