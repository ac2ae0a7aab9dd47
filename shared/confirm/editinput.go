package confirm

import (
	"encoding/json"
	"strings"

	"github.com/countersign/countersign"
)

// EditInput is a field a person may change before approving, as every
// surface offers it (the approval page, the MCP card): an input of the
// agent's value's type holding that value.
type EditInput struct {
	// Field is the field as approval.editable lists it ("body.amount").
	Field string
	// Kind is the agent's value's JSON type: "number", "string" or "boolean".
	Kind string
	// Value is the agent's value as an input holds it: a number's text, a
	// string as it is, "true" or "false".
	Value string
}

// MaxEditInput bounds a value offered for editing: a longer one is not
// offered (an input would cut it, and it would post as a change nobody
// made).
const MaxEditInput = 1000

// EditInputs are the inputs of operation i of c: each field its endpoint
// lists in approval.editable that the call has, with a string, a number or
// a boolean (the only values an edit may change) of at most MaxEditInput
// bytes, a string only if an input holds it as it is (inputHolds). None where c cannot be edited: a quorum or a passkey approves the
// call as it was made, and an operation is edited once.
func EditInputs(c *countersign.Confirmation, i int) []EditInput {
	if i < 0 || i >= len(c.Operations) || c.Required > 1 || NeedsPasskey(c, nil) || c.Kind == countersign.KindReview {
		return nil
	}
	op := &c.Operations[i]
	if op.EditedCall != nil {
		return nil
	}
	var out []EditInput
	for _, f := range op.Editable {
		v, ok := FieldValue(op, f)
		if !ok {
			continue
		}
		e := EditInput{Field: f, Value: string(v)}
		switch FieldKind(op, f) {
		case "a number":
			e.Kind = "number"
		case "a boolean":
			e.Kind = "boolean"
		case "a string":
			var s string
			if json.Unmarshal(v, &s) != nil || !inputHolds(s) {
				continue
			}
			e.Kind, e.Value = "string", s
		default:
			continue
		}
		if len(e.Value) > MaxEditInput {
			continue
		}
		out = append(out, e)
	}
	return out
}

// inputHolds reports whether a text input holds s as it is, so that an
// Approve that leaves it alone posts s back: an HTML page writes a NUL as
// U+FFFD and a browser strips a text input's line breaks, which would post
// as a change nobody made.
func inputHolds(s string) bool {
	return !strings.ContainsAny(s, "\x00\r\n")
}

// PlainEdit is an input's plain text as the JSON value of an edit of field,
// typed by the agent's value (FieldKind): a string as it is typed, a number
// as its digits, a boolean as "true" or "false". A field the call lacks
// keeps the text as JSON; the edit's checks refuse what does not fit.
func PlainEdit(op *countersign.Operation, field, text string) json.RawMessage {
	switch FieldKind(op, field) {
	case "a string":
		b, _ := json.Marshal(text)
		return b
	case "a number":
		return json.RawMessage(strings.TrimSpace(text))
	}
	return json.RawMessage(text)
}
