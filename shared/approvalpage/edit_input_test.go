package approvalpage

import "testing"

func TestEditInputHoldsTheNumber(t *testing.T) {
	for _, c := range []struct{ kind, value, want string }{
		{"number", "900", "number"},
		{"number", "9007199254740993", "number"},
		{"number", "-0", "number"},
		{"number", "1e400", "text"},
		{"number", "-1e400", "text"},
		{"boolean", "true", "checkbox"},
		{"string", "abc", "text"},
	} {
		if got := (Edit{Kind: c.kind, Value: c.value}).Input(); got != c.want {
			t.Errorf("Edit{%s %s}.Input() = %s, want %s", c.kind, c.value, got, c.want)
		}
	}
}
