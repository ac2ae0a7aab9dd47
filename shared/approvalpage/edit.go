package approvalpage

import "strconv"

// Edit and approve (approval.editable): the pending page shows each field
// an approver may change as an input of the agent's value's type, named
// edit.<op>.<field>, in the first form (the one with Approve). The form
// then also posts EditFormField=EditFormPage, which tells the server its
// values are an input's plain text, typed by the agent's value. A value
// left as it was is no edit. The remember form carries no edits.

// Names of the edit form fields.
const (
	// EditPrefix starts an edit's field name: edit.<op>.<field>.
	EditPrefix = "edit."
	// EditFormField marks a form whose edits are plain input values.
	EditFormField = "edit_form"
	// EditFormPage is EditFormField's value on the page's form.
	EditFormPage = "page"
)

// maxEditValue bounds a value shown in an input: a longer one is not
// offered for editing (cut, it would post as a change nobody made).
const maxEditValue = 1000

// Edit is one field an approver may change.
type Edit struct {
	// Field is the field as approval.editable lists it ("body.amount").
	Field string
	// Kind is the agent's value's JSON type: "number", "string" or "boolean".
	Kind string
	// Value is the agent's value: a number's text, a string as it is,
	// "true" or "false".
	Value string
}

// Input is the input's type: number, text or checkbox. A number a number
// input cannot hold (past a double's range, such as 1e400, which a browser
// empties) is offered as text, as the card does, so an unchanged value
// posts back as it was.
func (e Edit) Input() string {
	switch e.Kind {
	case "number":
		if _, err := strconv.ParseFloat(e.Value, 64); err == nil {
			return "number"
		}
	case "boolean":
		return "checkbox"
	}
	return "text"
}

// editView is an Edit as the page writes it.
type editView struct {
	Edit
	Name, ID string
	Checked  bool
}

// editsOf are op's edits the page can offer.
func editsOf(op *Operation) []editView {
	var out []editView
	for i, e := range op.Edits {
		if len(e.Value) > maxEditValue || (e.Kind != "number" && e.Kind != "string" && e.Kind != "boolean") {
			continue
		}
		out = append(out, editView{Edit: e, Name: EditPrefix + strconv.Itoa(op.Index) + "." + e.Field,
			ID: "edit-" + strconv.Itoa(op.Index) + "-" + strconv.Itoa(i), Checked: e.Kind == "boolean" && e.Value == "true"})
	}
	return out
}
