package oauth

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidVerifierIsThePattern: validVerifier accepts exactly what
// RFC 7636's ^[A-Za-z0-9._~-]{43,128}$ matches, at the length bounds and
// with every class of byte in every position kind.
func TestValidVerifierIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)
	var vs []string
	for _, n := range []int{0, 1, 42, 43, 44, 127, 128, 129} {
		vs = append(vs, strings.Repeat("a", n))
	}
	for _, c := range []string{"a", "z", "A", "Z", "0", "9", ".", "_", "~", "-", "/", "+", "=", "`", "{", "[", "@", "é", "\n", " "} {
		vs = append(vs, c+strings.Repeat("a", 42), strings.Repeat("a", 42)+c, strings.Repeat("a", 64)+c+strings.Repeat("a", 63))
	}
	for _, v := range vs {
		if got, want := validVerifier(v), pattern.MatchString(v); got != want {
			t.Errorf("validVerifier(%q) = %v, the pattern says %v", v, got, want)
		}
	}
}
