package mcpapi

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign"
)

// TestOutcomeTextCutsAtCharacter: the card shows at most 2000 bytes of an
// upstream's body and never splits a character to get there.
func TestOutcomeTextCutsAtCharacter(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want string // the body as the card shows it
	}{
		{"short", `"ok"`, `"ok"`},
		{"exactly 2000 bytes", strings.Repeat("a", 2000), strings.Repeat("a", 2000)},
		{"ASCII past the limit", strings.Repeat("a", 2001), strings.Repeat("a", 2000) + "..."},
		{"two-byte character across the limit", strings.Repeat("a", 1999) + "é" + "b", strings.Repeat("a", 1999) + "..."},
		{"four-byte character across the limit", strings.Repeat("a", 1998) + "😀" + "b", strings.Repeat("a", 1998) + "..."},
		{"character ending at the limit", strings.Repeat("a", 1998) + "é" + "b", strings.Repeat("a", 1998) + "é..."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeText(&countersign.Outcome{Status: 200, Body: []byte(tt.body)})
			want := "ran: the upstream answered 200 OK: " + tt.want
			if got != want {
				t.Errorf("outcomeText: got %d bytes ending %q, want %d bytes ending %q", len(got), tail(got), len(want), tail(want))
			}
			if !utf8.ValidString(got) {
				t.Errorf("outcomeText is not valid UTF-8: ends %q", tail(got))
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-8):] }
