package confirm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/countersign/countersign/shared/canon"
	"maps"
	"slices"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// Edit and approve (approval.editable): an approver may change the fields
// an endpoint lists before approving. An edit is a new call: the pipeline
// (calls.Service.Answer) checks the edits against the record (EditedArgs),
// decides the edited call again with the same policy and binds it; the
// lifecycle stores the edited operation in the write that records the
// approval (Answer.Edited), keeping the agent's beside it
// (countersign.Operation.EditedCall). What runs, on every path, is the
// edited call (countersign.Operation.Runs, in RunClaimed); the agent's
// redemption matches its own call's binding, which stays.

// EditRequest is one field an approver changed, as a surface read it:
// operation index, field ("body.amount", "query.limit") and the new value
// as JSON.
type EditRequest struct {
	Op    int             `json:"op"`
	Field string          `json:"field"`
	Value json.RawMessage `json:"value"`
}

// Edited is an operation edited, checked and bound, ready to be stored
// with the approval.
type Edited struct {
	// Index is the operation's place in the record.
	Index int
	// From is the binding the edit was made against: the lifecycle
	// refuses it if the record's operation is bound otherwise by then.
	From string
	// Op is the edited operation (its Args and Binding the edited call's).
	Op countersign.Operation
	// Fields is what changed, by field.
	Fields map[string]countersign.EditedField
}

// MaxEdits bounds the edits of one answer.
const MaxEdits = 50

func invalidEdit(format string, args ...any) error {
	return fault.Errorf(fault.InvalidEdit, format+"; nothing was decided", args...)
}

// GroupEdits checks the shape of edits (operations of c, no field twice,
// at most MaxEdits) and groups them by operation.
func GroupEdits(c *countersign.Confirmation, edits []EditRequest) (map[int][]EditRequest, error) {
	if len(edits) > MaxEdits {
		return nil, invalidEdit("%d edits: at most %d", len(edits), MaxEdits)
	}
	by := map[int][]EditRequest{}
	seen := map[string]bool{}
	for _, e := range edits {
		if e.Op < 0 || e.Op >= len(c.Operations) {
			return nil, invalidEdit("operation %d is not part of confirmation %s", e.Op, c.ID)
		}
		key := fmt.Sprintf("%d.%s", e.Op, e.Field)
		if seen[key] {
			return nil, invalidEdit("%s of operation %d is edited twice", e.Field, e.Op)
		}
		seen[key] = true
		by[e.Op] = append(by[e.Op], e)
	}
	return by, nil
}

// EditedArgs applies edits to op's arguments: each field must be listed in
// op.Editable, exist in the agent's call, and keep its JSON type (a
// string, a number or a boolean). It returns the edited arguments and what
// changed; a refusal is invalid_edit. The body is re-encoded (its keys
// sorted); the caller checks it against the body limits.
func EditedArgs(op *countersign.Operation, edits []EditRequest) (countersign.Args, map[string]countersign.EditedField, error) {
	args := op.Args
	var body map[string]any
	fields := map[string]countersign.EditedField{}
	query := maps.Clone(args.Query)
	for _, e := range edits {
		if !slices.Contains(op.Editable, e.Field) {
			// %q: the field is what the form sent, hidden characters and all.
			return args, nil, invalidEdit("%.100q of %s %s is not editable (approval.editable lists %s)", e.Field, op.Method, op.Endpoint, listed(op.Editable))
		}
		to := bytes.TrimSpace(e.Value)
		// Valid JSON, not "decodes to a float64": a number past a double's
		// range (1e400) is JSON, refused below with its reason rather than
		// as "not JSON".
		if len(to) == 0 || !json.Valid(to) {
			return args, nil, invalidEdit("the value of %s is not JSON", e.Field)
		}
		// Invalid UTF-8 or a lone surrogate would be decoded to U+FFFD in
		// the body that runs while the record kept the bytes posted.
		// So would a number past a double's range (1e400): the binding's
		// canonical form cannot hold it, nor can the body's round trip.
		if _, err := canon.Transform(to); err != nil {
			return args, nil, invalidEdit("the value of %s is not valid JSON text that can be bound (UTF-8, no lone surrogate, no number past a double's range): %.100s",
				e.Field, strings.TrimPrefix(err.Error(), "canonicalize: "))
		}
		where, rest, _ := strings.Cut(e.Field, ".")
		switch where {
		case "query":
			from, ok := query[rest].(string)
			if !ok {
				return args, nil, invalidEdit("the call has no single query parameter %s to change", rest)
			}
			var s string
			if canon.Kind(to) != "a string" || json.Unmarshal(to, &s) != nil {
				return args, nil, invalidEdit("%s is a string; the edit is %s", e.Field, canon.Kind(to))
			}
			if s == from {
				continue // unchanged: not an edit
			}
			fromJSON, _ := json.Marshal(from)
			query[rest] = s
			fields[e.Field] = countersign.EditedField{From: fromJSON, To: json.RawMessage(to)}
		case "body":
			if body == nil {
				d := json.NewDecoder(bytes.NewReader(args.Body))
				d.UseNumber()
				if err := d.Decode(&body); err != nil || body == nil {
					return args, nil, invalidEdit("the body of this call is not a JSON object, so %s cannot be changed", e.Field)
				}
			}
			from, err := setBody(body, strings.Split(rest, "."), to)
			if err != nil {
				return args, nil, invalidEdit("%s: %v", e.Field, err)
			}
			if sameJSON(from, to) {
				continue // unchanged: not an edit
			}
			fields[e.Field] = countersign.EditedField{From: from, To: json.RawMessage(to)}
		default:
			return args, nil, invalidEdit("%s is not a body or query field", e.Field)
		}
	}
	args.Query = query
	if len(fields) == 0 {
		return op.Args, nil, nil
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return args, nil, invalidEdit("the edited body could not be encoded: %v", err)
		}
		args.Body = b
	}
	return args, fields, nil
}

// setBody replaces the value at path in body with to, which must have the
// JSON type of the value there (a string, a number or a boolean); it
// returns the value replaced.
func setBody(body map[string]any, path []string, to json.RawMessage) (json.RawMessage, error) {
	m := body
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the call's body has no object %q on the way", k)
		}
		m = next
	}
	last := path[len(path)-1]
	old, ok := m[last]
	if !ok {
		return nil, fmt.Errorf("the call's body has no such field to change")
	}
	from, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	fk, tk := canon.Kind(from), canon.Kind(to)
	if fk != "a string" && fk != "a number" && fk != "a boolean" {
		return nil, fmt.Errorf("it is %s; only strings, numbers and booleans can be edited", fk)
	}
	if fk != tk {
		return nil, fmt.Errorf("it is %s; the edit is %s, and an edit keeps the type", fk, tk)
	}
	d := json.NewDecoder(bytes.NewReader(to))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	m[last] = v
	return from, nil
}

func listed(fs []string) string {
	if len(fs) == 0 {
		return "none"
	}
	return strings.Join(fs, ", ")
}

// applyEdited stores the edited operations of an approval in c (inside the
// write that records it): each operation keeps the agent's call (its
// Args and Binding) and gains the edited one (EditedCall), which is what
// runs, and what changed (Edited). An operation bound otherwise than the edit was made against,
// or already edited, or not selected, refuses the edit.
func applyEdited(c *countersign.Confirmation, edited []Edited) error {
	for _, e := range edited {
		if e.Index < 0 || e.Index >= len(c.Operations) {
			return invalidEdit("operation %d is not part of confirmation %s", e.Index, c.ID)
		}
		op := &c.Operations[e.Index]
		if op.EditedCall != nil || op.Binding != e.From {
			return invalidEdit("operation %d of confirmation %s changed since the edit was made", e.Index, c.ID)
		}
		if !op.Selected {
			return invalidEdit("operation %d of confirmation %s is not kept, so it cannot be edited", e.Index, c.ID)
		}
		op.EditedCall = &countersign.EditedCall{Args: e.Op.Args, Binding: e.Op.Binding, Payload: e.Op.Payload, RawQuery: e.Op.RawQuery}
		op.Edited = e.Fields
		if op.Current.Read() && len(op.Changes) > 0 {
			// What the edited call changes in the resource the person saw.
			op.Changes = countersign.Changes(op.Method, e.Op.Args.Body, op.Current.Body)
		}
	}
	return nil
}

// EditSummary says what an approver changed in c, for the audit trail:
// "edited body.amount 900 → 500", "" when nothing was.
func EditSummary(c *countersign.Confirmation) string {
	var parts []string
	for i, op := range c.Operations {
		for _, f := range slices.Sorted(maps.Keys(op.Edited)) {
			e := op.Edited[f]
			p := f + " " + string(e.From) + " → " + string(e.To)
			if len(c.Operations) > 1 {
				p = fmt.Sprintf("operation %d %s", i, p)
			}
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "edited " + strings.Join(parts, ", ")
}

// sameJSON reports whether a and b are the same JSON value (numbers by
// their decimal text, so 500 and 500.0 differ as the upstream may see them).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// FieldKind is the JSON type of field in op's arguments as the agent sent
// them ("a string", "a number", "a boolean"), "" when the call has none:
// a surface whose form sends plain text (the approval page) types its
// values by it.
func FieldKind(op *countersign.Operation, field string) string {
	v, ok := FieldValue(op, field)
	if !ok {
		return ""
	}
	return canon.Kind(v)
}

// FieldValue is the value of field in op's arguments as the agent sent
// them, as JSON.
func FieldValue(op *countersign.Operation, field string) (json.RawMessage, bool) {
	args := op.Args
	where, rest, _ := strings.Cut(field, ".")
	switch where {
	case "query":
		s, ok := args.Query[rest].(string)
		if !ok {
			return nil, false
		}
		b, _ := json.Marshal(s)
		return b, true
	case "body":
		d := json.NewDecoder(bytes.NewReader(args.Body))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return nil, false
		}
		for _, k := range strings.Split(rest, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		}
		b, err := json.Marshal(v)
		return b, err == nil
	}
	return nil, false
}
