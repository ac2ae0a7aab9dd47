package credential

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidIDIsThePattern: validID accepts exactly what the regexp it
// replaced matched, on every id of up to two bytes over an alphabet of
// every class (letters, digits, the four marks, neighbours of each range,
// a multi-byte letter, a newline) and at the length bounds.
func TestValidIDIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)
	alphabet := []string{"a", "z", "A", "Z", "0", "9", ".", "_", "@", "-", "/", ":", "`", "{", "[", "é", "\n", " ", "~"}
	ids := []string{"", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		"a" + strings.Repeat("-", 63), "a" + strings.Repeat("-", 64), "agent.1@corp-x_y", "-a", ".a", "a\n"}
	for _, a := range alphabet {
		ids = append(ids, a)
		for _, b := range alphabet {
			ids = append(ids, a+b, strings.Repeat("x", 62)+a+b)
		}
	}
	for _, id := range ids {
		if got, want := validID(id), pattern.MatchString(id); got != want {
			t.Errorf("validID(%q) = %v, the pattern says %v", id, got, want)
		}
	}
}
