package httpapi

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

// editsOf reads the approve POST's edits (approval.editable):
// edit.<op>.<field>=<JSON value>, e.g. edit.0.body.amount=500. The
// approval page's own form (edit_form=page) sends its inputs' plain
// values instead, typed by the agent's value of each field: a string as
// it is typed, a number as its digits, a boolean as "true" or "false" (its
// checkbox follows a hidden "false", the last value counts). A field
// given twice, or an index that is not a number, is invalid_edit;
// everything else is checked by the pipeline.
func editsOf(form url.Values, c *countersign.Confirmation) ([]confirm.EditRequest, error) {
	plain := form.Get(approvalpage.EditFormField) == approvalpage.EditFormPage
	var out []confirm.EditRequest
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range form {
			if !yield(k) {
				return
			}
		}
	}) {
		rest, ok := strings.CutPrefix(k, approvalpage.EditPrefix)
		if !ok {
			continue
		}
		if len(out) == confirm.MaxEdits {
			return nil, fault.Errorf(fault.InvalidEdit, "more than %d edits; nothing was decided", confirm.MaxEdits)
		}
		n, field, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= len(c.Operations) || field == "" {
			return nil, fault.Errorf(fault.InvalidEdit, "%.100q does not name an operation and a field (edit.<op>.<field>); nothing was decided", k)
		}
		vs := form[k]
		kind := confirm.FieldKind(&c.Operations[i], field)
		if len(vs) != 1 && !(plain && kind == "a boolean" && len(vs) == 2 && vs[0] == "false") {
			return nil, fault.Errorf(fault.InvalidEdit, "%.100q is given %d times; nothing was decided", k, len(vs))
		}
		v := vs[len(vs)-1]
		value := json.RawMessage(v)
		if plain {
			value = confirm.PlainEdit(&c.Operations[i], field, v)
		}
		out = append(out, confirm.EditRequest{Op: i, Field: field, Value: value})
	}
	return out, nil
}

// editInputs are the page's inputs for operation i of c
// (confirm.EditInputs, which the MCP card shows too).
func editInputs(c *countersign.Confirmation, i int) []approvalpage.Edit {
	var out []approvalpage.Edit
	for _, e := range confirm.EditInputs(c, i) {
		out = append(out, approvalpage.Edit{Field: e.Field, Kind: e.Kind, Value: e.Value})
	}
	return out
}
