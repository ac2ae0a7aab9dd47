package approvalpage

import (
	"strings"
	"testing"
	"time"
)

// TestEditInputs: a pending page shows each editable field as an input of
// the agent's value's type, named edit.<op>.<field> and holding that
// value, in the first form (with edit_form=page); a value too long to show
// whole is not offered; the remember form carries no edits; a decided
// page shows none. Every page also goes through the template (TestMain).
func TestEditInputs(t *testing.T) {
	op := Operation{Index: 0, Connection: "bank", Method: "POST", Path: "/payments", Endpoint: "/payments",
		Args: PrettyJSON([]byte(`{"path":{},"query":{},"body":{"amount":900,"memo":"rent \"May\"","urgent":true}}`)), Selected: true,
		Edits: []Edit{{Field: "body.amount", Kind: "number", Value: "900"}, {Field: "body.memo", Kind: "string", Value: `rent "May"`},
			{Field: "body.urgent", Kind: "boolean", Value: "true"}, {Field: "body.note", Kind: "string", Value: strings.Repeat("x", maxEditValue+1)}}}
	p := Page{Workspace: "Acme", State: Pending, ID: "cf_1", Operations: []Operation{op}, TimeLeft: time.Minute, ExpiresAt: expiresAt, Form: form,
		Remember: &Remember{MaxMinutes: 30, Calls: 3, What: "POST /payments"}}
	body, _, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	first, second, _ := strings.Cut(page, `class="remember"`)
	for _, want := range []string{
		`<input type="hidden" name="edit_form" value="page">`,
		`<input type="number" name="edit.0.body.amount" id="edit-0-0" step="any" value="900" autocomplete="off">`,
		`<input type="text" name="edit.0.body.memo" id="edit-0-1" value="rent &#34;May&#34;" autocomplete="off">`,
		`<input type="hidden" name="edit.0.body.urgent" value="false"><input type="checkbox" name="edit.0.body.urgent" id="edit-0-2" value="true" checked>`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the first form lacks %s", want)
		}
	}
	if strings.Contains(page, "body.note") {
		t.Error("a value too long to show whole is offered for editing")
	}
	if strings.Contains(second, "edit") {
		t.Error("the remember form carries edits")
	}
	p.State, p.Decision = Decided, "approved"
	if body, _, _ := Render(p); strings.Contains(string(body), "edit.0") {
		t.Error("a decided page shows edit inputs")
	}
}
