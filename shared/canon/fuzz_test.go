package canon

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/countersign/countersign/shared/callbody"
)

// FuzzTransform: canonicalisation never panics, is idempotent and gives
// valid JSON; every body the strict reader accepts canonicalises, to the
// same value.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,null,"x"]}`, `{"\u20ac":1,"\r":2,"\ud83d\ude00":3}`, `[1e21,1e-7,0.000001,-0,100.0]`,
		`{"a":1,"a":2}`, `1e400`, `"\ud800"`, `9007199254740993`, `{"amount":5,"Amount":99999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Transform(data)
		strict := callbody.Valid(data, nil) == nil
		if err != nil {
			if strict {
				t.Fatalf("a body the strict reader accepts does not canonicalise: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form %q is not JSON", out)
		}
		again, err := Transform(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %s → %s (%v)", out, again, err)
		}
		if !strict {
			return
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil || json.Unmarshal(out, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s canonicalises to another value: %s", data, out)
		}
	})
}

// FuzzBindingFields: the binding is unambiguous: changing any one of the
// credential, connection, method, endpoint or arguments, or moving the
// boundary between two of them, changes it.
func FuzzBindingFields(f *testing.F) {
	f.Add("chat-user", "crm", "DELETE", "/contacts/{id}", []byte(`{"path":{"id":"12"}}`))
	f.Add("a", "", "", "", []byte(`null`))
	f.Add("a\"", "b,", "c]", "d", []byte(`"e"`))
	f.Fuzz(func(t *testing.T, cred, conn, method, endpoint string, args []byte) {
		if !json.Valid(args) || callbody.Valid(args, nil) != nil {
			args = []byte(`null`)
		}
		bind := func(c, n, m, e string, a []byte) string {
			b, err := Binding(c, n, m, e, json.RawMessage(a))
			if err != nil {
				t.Fatalf("Binding: %v", err)
			}
			return b
		}
		base := bind(cred, conn, method, endpoint, args)
		variants := map[string]string{
			"credential": bind(cred+"x", conn, method, endpoint, args),
			"connection": bind(cred, conn+"x", method, endpoint, args),
			"method":     bind(cred, conn, method+"x", endpoint, args),
			"endpoint":   bind(cred, conn, method, endpoint+"x", args),
			"arguments":  bind(cred, conn, method, endpoint, []byte(`{"x":`+string(args)+`}`)),
			"boundary":   bind(cred+conn, "", method, endpoint, args),
		}
		for name, v := range variants {
			if v == base && !(name == "boundary" && conn == "") {
				t.Fatalf("changing the %s keeps the binding", name)
			}
		}
	})
}
