package script

import (
	"testing"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// rootOrder is goja's localeCompare as published: the root collation of
// golang.org/x/text/collate over the decomposed strings.
func rootOrder(a, b string) int {
	return collate.New(language.Und).CompareString(norm.NFD.String(a), norm.NFD.String(b))
}

// TestLocaleCompare: compareStrings agrees with the root collation (goja's
// localeCompare as published) on every pair of the strings scripts sort in
// practice: names and words with case and accents, digits, punctuation and
// white space, other alphabets; the pairs where it does not are listed.
func TestLocaleCompare(t *testing.T) {
	words := []string{
		"", "a", "A", "b", "B", "z", "Z", "ab", "aB", "Ab", "AB", "abc", "abd", "a b", "a-b", "a_b", "a.b", "ab1",
		"resume", "résumé", "Résumé", "RESUME", "resumé", "rèsume", "cote", "côte", "coté", "côté",
		"Müller", "Mueller", "muller", "Muller", "Zoë", "zoe", "Ångström", "angstrom", "Øre", "ore", "Ösel", "osel",
		"naïve", "naive", "façade", "facade", "Ärger", "arger", "élan", "elan", "Éclair", "eclair",
		"0", "1", "2", "9", "10", "100", "1a", "a1", "a2", "a10", "v1.2.3", "v1.10.0",
		" ", "  a", "-", "_", ".", ",", "!", "?", "(a)", "[a]", "/", "@", "#", "$", "%", "&", "*", "+",
		"alice@example.com", "bob@example.com", "Alice Smith", "alice smith", "alice-smith", "alice_smith",
		"crm", "CRM", "crm.contacts", "crm_contacts", "github", "GitHub", "get_issue", "getIssue", "list-repos",
		"ß", "ss", "Straße", "strasse", "æ", "ae", "œuvre", "oeuvre",
		"α", "Α", "β", "ω", "а", "А", "я", "Я", "日本", "中文", "한국", "שלום", "مرحبا",
		"e\u0301", "\u00e9", "E\u0301", "\u00c9",
	}
	// Known differences from the root order (compareStrings, root).
	known := map[[2]string]bool{}
	var diffs int
	for _, a := range words {
		for _, b := range words {
			got, want := compareStrings(a, b), rootOrder(a, b)
			if got != -compareStrings(b, a) {
				t.Errorf("compare(%q, %q) = %d but compare(%q, %q) = %d: not antisymmetric", a, b, got, b, a, compareStrings(b, a))
			}
			if got != want && !known[[2]string{a, b}] {
				diffs++
				if diffs <= 80 {
					t.Errorf("compare(%q, %q) = %d, the root collation says %d", a, b, got, want)
				}
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d pairs differ", diffs)
	}
}

// TestLocaleCompareKnownDifferences shows where compareStrings and the
// root collation part, beside cases where they agree although the
// compareStrings has no table for them: a letter without a decomposition
// and outside letterFolds sorts by its code point, after z.
func TestLocaleCompareKnownDifferences(t *testing.T) {
	tests := []struct {
		a, b       string
		ours, root int
	}{
		{"þ", "z", 1, 1},
		{"€", "$", 1, 1},
		{"1", "€", 1, 1},
		{"ı", "j", 1, -1}, // dotless i: after z here, beside i in the root order
		{"ŋ", "o", 1, -1}, // eng: likewise, beside n
		{"😀", "a", -1, -1},
		{"ά", "α", 1, 1},
		{"Ω", "ω", 1, 1},
	}
	for _, tt := range tests {
		if got, root := compareStrings(tt.a, tt.b), rootOrder(tt.a, tt.b); got != tt.ours || root != tt.root {
			t.Errorf("compare(%q, %q) = %d (root %d), want %d (root %d)", tt.a, tt.b, got, root, tt.ours, tt.root)
		}
	}
}
