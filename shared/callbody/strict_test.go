package callbody

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/policy"
)

// envelope has the shape of the /v1/calls request (docs/api.md, Agent calls).
type envelope struct {
	Connection     string            `json:"connection"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Query          map[string]string `json:"query"`
	Body           json.RawMessage   `json:"body"`
	Intent         *policy.Intent    `json:"intent"`
	ConfirmationID string            `json:"confirmation_id"`
	Delegated      bool              `json:"delegated"`
	Client         *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"client"`
	Lines []struct {
		Kind string `json:"kind"`
	} `json:"lines,omitempty"`
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		kind   error  // nil: accepted
		path   string // exact, when refused
		detail string // substring, when refused
	}{
		{name: "a full call", in: `{"connection":"crm","method":"POST","path":"/payments","query":{"a":"1"},"body":{"amount":5},"intent":"write","delegated":false,"client":{"name":"x","version":"1"}}`},
		{name: "null fields", in: `{"connection":"crm","body":null,"client":null,"query":null}`},
		{name: "a field in the wrong case", in: `{"connection":"crm","Intent":"write"}`, kind: ErrFieldCase, path: "$.Intent", detail: `"Intent" matches the field "intent" only when case is ignored`},
		{name: "a field in upper case", in: `{"CONNECTION":"crm"}`, kind: ErrFieldCase, path: "$.CONNECTION"},
		{name: "a field spelt with the Kelvin sign (Unicode folding, as encoding/json does)", in: `{"lines":[{"\u212aind":"x"}]}`, kind: ErrFieldCase, path: "$.lines[0][\"\u212aind\"]"},
		{name: "a duplicated field", in: `{"intent":"read","intent":"write"}`, kind: ErrDuplicateKey, path: "$", detail: `"intent" appears twice`},
		{name: "a duplicated field spelt with an escape", in: `{"intent":"read","\u0069ntent":"write"}`, kind: ErrDuplicateKey},
		{name: "an unknown field", in: `{"connection":"crm","force":true}`, kind: ErrUnknownField, path: "$.force", detail: `"force" is not a field here`},
		{name: "an unknown field in a nested struct", in: `{"client":{"name":"x","os":"y"}}`, kind: ErrUnknownField, path: "$.client.os"},
		{name: "a nested field in the wrong case", in: `{"client":{"Name":"x"}}`, kind: ErrFieldCase, path: "$.client.Name"},
		{name: "a duplicate key in a map field", in: `{"query":{"limit":"1","limit":"5000"}}`, kind: ErrDuplicateKey, path: "$.query"},
		{name: "map keys are free in case", in: `{"query":{"limit":"1","Limit":"5000"}}`},
		{name: "a duplicate key inside the raw body", in: `{"body":{"amount":5,"amount":99999}}`, kind: ErrDuplicateKey, path: "$.body"},
		{name: "keys inside the raw body are not fields", in: `{"body":{"Intent":1,"anything":2}}`},
		{name: "a number that does not round trip inside the body", in: `{"body":{"amount":9007199254740993}}`, kind: ErrNumber, path: "$.body.amount"},
		{name: "a wrong type", in: `{"connection":5}`, kind: ErrType, path: "$.connection", detail: "want string, got number"},
		{name: "a wrong nested type", in: `{"client":{"name":true}}`, kind: ErrType, path: "$.client.name"},
		{name: "an unknown intent", in: `{"intent":"delete"}`, kind: ErrType, detail: `unknown intent "delete"`},
		{name: "trailing data", in: `{"connection":"crm"}}`, kind: ErrTrailingData},
		{name: "two values", in: `{} {}`, kind: ErrTrailingData},
		{name: "not an object", in: `[]`, kind: ErrType},
		{name: "empty", in: ``, kind: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e envelope
			err := DecodeStrict([]byte(tt.in), &e, nil)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("DecodeStrict: %v", err)
				}
				// Accepted: the same as encoding/json.
				var want envelope
				dec := json.NewDecoder(strings.NewReader(tt.in))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, e); diff != "" {
					t.Errorf("differs from encoding/json (-want +got):\n%s", diff)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			if tt.path != "" && se.Path != tt.path {
				t.Errorf("path %q, want %q (%v)", se.Path, tt.path, err)
			}
			if !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("err %q does not say %q", err, tt.detail)
			}
		})
	}
}

// TestEncodingJSONAcceptsWhatDecodeStrictRefuses documents why DecodeStrict
// exists: each of these passes encoding/json with DisallowUnknownFields.
func TestEncodingJSONAcceptsWhatDecodeStrictRefuses(t *testing.T) {
	for _, in := range []string{
		`{"Intent":"write"}`,
		`{"intent":"read","intent":"write"}`,
		`{"lines":[{"\u212aind":"x"}]}`,
	} {
		var e envelope
		dec := json.NewDecoder(strings.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Errorf("encoding/json refuses %s (%v): the case for DecodeStrict is gone", in, err)
		}
		if err := DecodeStrict([]byte(in), &e, nil); err == nil {
			t.Errorf("DecodeStrict accepts %s", in)
		}
	}
}

func TestDecodeStrictNeedsAPointer(t *testing.T) {
	var e envelope
	if err := DecodeStrict([]byte(`{}`), e, nil); err == nil {
		t.Error("a non-pointer was accepted")
	}
	if err := DecodeStrict([]byte(`{}`), (*envelope)(nil), nil); err == nil {
		t.Error("a nil pointer was accepted")
	}
}

// TestDecodeStrictEmbedded: JSON v2 inlines an embedded struct's fields, and
// they are checked like the others.
func TestDecodeStrictEmbedded(t *testing.T) {
	type embedded struct {
		envelope
		Extra string `json:"extra"`
	}
	var e embedded
	if err := DecodeStrict([]byte(`{"connection":"crm","extra":"x"}`), &e, nil); err != nil || e.Connection != "crm" || e.Extra != "x" {
		t.Errorf("DecodeStrict = %v, %+v", err, e)
	}
	err := DecodeStrict([]byte(`{"Connection":"crm"}`), &e, nil)
	if !errors.Is(err, ErrFieldCase) || !strings.Contains(err.Error(), `the field "connection"`) {
		t.Errorf("a promoted field in the wrong case: err = %v", err)
	}
}

func TestDecodeStrictRecursiveType(t *testing.T) {
	type node struct {
		Name string  `json:"name"`
		Kids []*node `json:"kids"`
	}
	var n node
	if err := DecodeStrict([]byte(`{"name":"a","kids":[{"name":"b","kids":[]}]}`), &n, nil); err != nil {
		t.Fatal(err)
	}
	err := DecodeStrict([]byte(`{"name":"a","kids":[{"Name":"b"}]}`), &n, nil)
	if !errors.Is(err, ErrFieldCase) || !strings.Contains(err.Error(), "$.kids[0].Name") {
		t.Errorf("err = %v", err)
	}
}
