package credential

import (
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

var keyFormat = regexp.MustCompile(`^cs_[a-z2-7]{40}$`)

func TestNewKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		k := NewKey()
		if !keyFormat.MatchString(k) {
			t.Fatalf("key %q: want cs_ and 40 lower-case base32 characters", k)
		}
		if seen[k] {
			t.Fatalf("key %q made twice", k)
		}
		seen[k] = true
	}
}

func TestCheckID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"ci-bot", true},
		{"a", true},
		{"ops.team_1@example", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"-lead", false},
		{"has space", false},
		{"slash/no", false},
		{"ümlaut", false},
	}
	for _, tt := range tests {
		if err := CheckID(tt.id); (err == nil) != tt.ok {
			t.Errorf("CheckID(%q) = %v, want ok %v", tt.id, err, tt.ok)
		}
	}
}

func TestDescribe(t *testing.T) {
	c := countersign.Credential{Choice: countersign.AskPerson, Origin: countersign.OriginChat, ReadOnly: true, Connections: []string{"a", "b"}}
	if got, want := Describe(c), "choice ask_person, origin chat, read-only, connections a,b"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
