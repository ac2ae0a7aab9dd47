package httpapi

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// TestEditsOf: the approve POST's edit.<op>.<field> fields, as JSON values
// or (edit_form=page) as the page's inputs' plain text typed by the
// agent's value; a repeat (but a checkbox's hidden false then true on the
// page) or a name without an operation is invalid_edit.
func TestEditsOf(t *testing.T) {
	c := &countersign.Confirmation{ID: "cf_1", Operations: []countersign.Operation{{
		Args:     countersign.Args{Body: json.RawMessage(`{"amount":900,"memo":"rent","urgent":true}`), Query: map[string]any{"x": "1"}},
		Editable: []string{"body.amount", "body.memo", "body.urgent", "query.x"}}}}
	for _, tc := range []struct {
		form string
		want map[string]string // field: JSON value
		bad  bool
	}{
		{"edit.0.body.amount=500&edit.0.body.memo=%22June%22", map[string]string{"body.amount": "500", "body.memo": `"June"`}, false},
		{"edit_form=page&edit.0.body.amount=+500+&edit.0.body.memo=June+rent&edit.0.query.x=2", map[string]string{"body.amount": "500", "body.memo": `"June rent"`, "query.x": `"2"`}, false},
		{"edit_form=page&edit.0.body.urgent=false", map[string]string{"body.urgent": "false"}, false},
		{"edit_form=page&edit.0.body.urgent=false&edit.0.body.urgent=true", map[string]string{"body.urgent": "true"}, false},
		{"edit.0.body.urgent=false&edit.0.body.urgent=true", nil, true},
		{"edit_form=page&edit.0.body.amount=1&edit.0.body.amount=2", nil, true},
		{"edit.x.body.amount=1", nil, true},
		{"edit.1.body.amount=1", nil, true},
		{"edit.0=1", nil, true},
		{"decision=approve", map[string]string{}, false},
	} {
		form, err := url.ParseQuery(tc.form)
		if err != nil {
			t.Fatal(err)
		}
		got, err := editsOf(form, c)
		if tc.bad {
			if fault.CodeOf(err) != fault.InvalidEdit {
				t.Errorf("%s: %v, want invalid_edit", tc.form, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %+v, %v", tc.form, got, err)
			continue
		}
		for _, e := range got {
			if e.Op != 0 || string(e.Value) != tc.want[e.Field] {
				t.Errorf("%s: %s = %s, want %s", tc.form, e.Field, e.Value, tc.want[e.Field])
			}
		}
	}
}
