package countersign_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

func TestChanges(t *testing.T) {
	const contact = `{"id":12,"name":"John McCarthy","email":"john@example.com","address":{"city":"Boston","zip":"02134"},"tags":["a","b"]}`
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name    string
		method  string
		body    string
		current string
		want    string // the changes' JSON; "null" for none
	}{
		{name: "patch one field", method: "PATCH", body: `{"email":"jm@example.org"}`, current: contact,
			want: `[{"field":"email","from":"john@example.com","to":"jm@example.org"}]`},
		{name: "patch a nested field, dotted", method: "PATCH", body: `{"address":{"city":"Cambridge"}}`, current: contact,
			want: `[{"field":"address.city","from":"Boston","to":"Cambridge"}]`},
		{name: "patch adds a field: no from", method: "PATCH", body: `{"phone":"555"}`, current: contact,
			want: `[{"field":"phone","to":"555"}]`},
		{name: "patch adds an object: each leaf", method: "PATCH", body: `{"company":{"name":"Acme","size":5}}`, current: contact,
			want: `[{"field":"company.name","to":"Acme"},{"field":"company.size","to":5}]`},
		{name: "patch null removes: no to", method: "PATCH", body: `{"email":null}`, current: contact,
			want: `[{"field":"email","from":"john@example.com"}]`},
		{name: "patch null of an absent field changes nothing", method: "PATCH", body: `{"phone":null}`, current: contact, want: `null`},
		{name: "patch the same value changes nothing", method: "PATCH", body: `{"name":"John McCarthy","id":12}`, current: contact, want: `null`},
		{name: "arrays whole", method: "PATCH", body: `{"tags":["a"]}`, current: contact,
			want: `[{"field":"tags","from":["a","b"],"to":["a"]}]`},
		{name: "a type changes", method: "PATCH", body: `{"address":"Boston"}`, current: contact,
			want: `[{"field":"address","from":{"city":"Boston","zip":"02134"},"to":"Boston"}]`},
		{name: "put removes what it leaves out", method: "PUT", body: `{"id":12,"name":"John McCarthy","email":"john@example.com"}`, current: contact,
			want: `[{"field":"address","from":{"city":"Boston","zip":"02134"}},{"field":"tags","from":["a","b"]}]`},
		{name: "numbers as written", method: "PUT", body: `{"amount":1.50}`, current: `{"amount":1.5}`,
			want: `[{"field":"amount","from":1.5,"to":1.50}]`},
		{name: "no html escaping", method: "PATCH", body: `{"name":"<b>&"}`, current: `{"name":"a"}`,
			want: `[{"field":"name","from":"a","to":"<b>&"}]`},
		{name: "a long value is cut", method: "PATCH", body: `{"note":"` + long + `"}`, current: `{"note":"short"}`,
			want: `[{"field":"note","from":"short","to":"` + long[:507] + `…"}]`},
		{name: "delete has none", method: "DELETE", body: `null`, current: contact, want: `null`},
		{name: "post has none", method: "POST", body: `{"name":"x"}`, current: contact, want: `null`},
		{name: "a body that is not an object", method: "PUT", body: `[1]`, current: contact, want: `null`},
		{name: "an answer that is text", method: "PATCH", body: `{"a":1}`, current: `"some text"`, want: `null`},
		{name: "an answer that is not JSON", method: "PATCH", body: `{"a":1}`, current: `<html>`, want: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(countersign.Changes(tt.method, json.RawMessage(tt.body), json.RawMessage(tt.current))); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSuffix(buf.String(), "\n")
			var want []countersign.Change
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if got != tt.want {
				t.Errorf("changes\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestChangesBounded: however many fields change, at most 100 are kept.
func TestChangesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"f` + strings.Repeat("0", 4-len(itoa(i))) + itoa(i) + `":1`)
	}
	b.WriteString("}")
	got := countersign.Changes("PATCH", json.RawMessage(b.String()), json.RawMessage(`{}`))
	if len(got) != 100 {
		t.Errorf("%d changes kept, want 100", len(got))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
