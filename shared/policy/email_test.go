package policy_test

import (
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

// TestSameEmail: e-mails compare after NFC with ASCII letters folded and
// nothing else; a character NFC turns into ASCII matches nothing.
func TestSameEmail(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"ada@example.com", "ada@example.com", true},
		{"Ada@Example.COM", "ada@example.com", true},
		{"caf\u00e9@example.com", "cafe\u0301@example.com", true}, // NFC: precomposed and combining
		{"CAF\u00c9@example.com", "caf\u00e9@example.com", false}, // É is not folded: not ASCII
		{"\u212aate@example.com", "kate@example.com", false},      // KELVIN SIGN
		{"\u212aate@example.com", "Kate@example.com", false},
		{"\u212aate@example.com", "\u212aate@example.com", false}, // nobody's, even to itself
		{"\u0130van@example.com", "ivan@example.com", false},      // dotted capital I
		{"ada@example.com", "ada@examp1e.com", false},
		{"", "", false},
	} {
		if got := policy.SameEmail(tc.a, tc.b); got != tc.same {
			t.Errorf("SameEmail(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestApproversFoldOnlyASCII: a list entry matches a verified address
// with ASCII case folded, never a Unicode fold of it.
func TestApproversFoldOnlyASCII(t *testing.T) {
	list := &policy.Approvers{Emails: []string{policy.EmailKey("kate@example.com")}, Domains: []string{policy.EmailKey("@Example.org")}}
	for _, tc := range []struct {
		email string
		ok    bool
	}{
		{"KATE@example.com", true},
		{"\u212aate@example.com", false},
		{"someone@EXAMPLE.org", true},
		{"someone@example.org\u212a", false},
		{"", false},
	} {
		if got := list.Allows(tc.email, nil); got != tc.ok {
			t.Errorf("Allows(%q) = %v, want %v", tc.email, got, tc.ok)
		}
	}
}
