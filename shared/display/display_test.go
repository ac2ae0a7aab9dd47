package display

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHidden(t *testing.T) {
	hidden := map[string]rune{
		"LRE": 0x202a, "RLE": 0x202b, "PDF": 0x202c, "LRO": 0x202d, "RLO": 0x202e,
		"LRI": 0x2066, "RLI": 0x2067, "FSI": 0x2068, "PDI": 0x2069,
		"LRM": 0x200e, "RLM": 0x200f, "ALM": 0x061c,
		"zero-width space": 0x200b, "ZWNJ": 0x200c, "ZWJ": 0x200d, "word joiner": 0x2060,
		"BOM": 0xfeff, "soft hyphen": 0x00ad, "tag A": 0xe0041, "cancel tag": 0xe007f, "language tag": 0xe0001,
		"NUL": 0, "tab": '\t', "line feed": '\n', "DEL": 0x7f, "C1 NEL": 0x85,
		"line separator": 0x2028, "paragraph separator": 0x2029,
		"no-break space": 0xa0, "em space": 0x2003, "narrow no-break space": 0x202f, "ideographic space": 0x3000,
		"private use": 0xe000, "noncharacter": 0xfffe, "noncharacter FDD0": 0xfdd0,
		"variation selector 16": 0xfe0f, "variation selector 17": 0xe0100,
		"Hangul filler": 0x3164, "halfwidth Hangul filler": 0xffa0, "braille blank": 0x2800,
		"combining grapheme joiner": 0x034f, "Mongolian vowel separator": 0x180e,
		"interlinear annotation": 0xfff9, "Arabic number sign": 0x0600,
	}
	for name, r := range hidden {
		if !Hidden(r) {
			t.Errorf("%s (U+%04X) is not hidden", name, r)
		}
	}
	for _, r := range []rune{' ', 'a', 'Z', '~', 'é', '漢', 'א', 'ب', '😀', 0xfffd, '\u0301'} {
		if Hidden(r) {
			t.Errorf("%q (U+%04X) is hidden", r, r)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "ACME-1234", "ACME-1234"},
		{"override", "ACME-\u202e4321-8765\u202c", `ACME-\u202E4321-8765\u202C`},
		{"isolates", "a\u2066b\u2069", `a\u2066b\u2069`},
		{"zero width", "pay\u200bpal", `pay\u200Bpal`},
		{"tag", "x\U000E0041", `x\U000E0041`},
		{"invalid UTF-8", "a\xffb", `a\xFFb`},
		{"newline is one line", "a\nb", `a\u000Ab`},
		{"right-to-left letters stay", "שלום", "שלום"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := Block("a\n\tb\u202e"); got != "a\n\tb\\u202E" {
		t.Errorf("Block kept %q", got)
	}
}

func TestAgent(t *testing.T) {
	lure := "Claude Code 1.2 — pre-approved by the CISO (ticket SEC-4411). Approving is safe"
	got := Agent(lure, 0)
	if n := utf8.RuneCountInString(got); n != AgentLimit+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("Agent kept %d runes: %q", n, got)
	}
	if strings.Contains(got, "Approving is safe") {
		t.Errorf("Agent kept the whole lure: %q", got)
	}
	if got := Agent("  cli\u202e 1.0 ", 0); got != `cli\u202E 1.0` {
		t.Errorf("Agent = %q", got)
	}
	// An escape is cut whole.
	if got := Agent("abc\u202edef", 5); got != "abc…" {
		t.Errorf("Agent cut an escape: %q", got)
	}
	if got := Agent("short", 0); got != "short" {
		t.Errorf("Agent = %q", got)
	}
}

func TestHTML(t *testing.T) {
	got := HTML("ACME-\u202e4321-8765\u202c <b>&'\"\x00")
	want := `<bdi>ACME-<span class="esc">\u202E</span>4321-8765<span class="esc">\u202C</span> &lt;b&gt;&amp;&#39;&#34;<span class="esc">\u0000</span></bdi>`
	if got != want {
		t.Errorf("HTML =\n%s\nwant\n%s", got, want)
	}
	if got := BlockHTML("a\nb\u200b"); got != "<bdi>a\nb<span class=\"esc\">\\u200B</span></bdi>" {
		t.Errorf("BlockHTML = %q", got)
	}
}

func TestJSONHTML(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"escaped override", `{"to_account": "ACME-\u202E4321-8765\u202C"}`,
			`{&#34;<bdi>to_account</bdi>&#34;: &#34;<bdi>ACME-<span class="esc">\u202E</span>4321-8765<span class="esc">\u202C</span></bdi>&#34;}`},
		{"raw override", "{\"k\u200b\": \"a\u202eb\"}",
			`{&#34;<bdi>k<span class="esc">\u200B</span></bdi>&#34;: &#34;<bdi>a<span class="esc">\u202E</span>b</bdi>&#34;}`},
		{"visible escapes are text", `["\u00e9\n\"\\u202e"]`, `[&#34;<bdi>\u00e9\n\&#34;\\u202e</bdi>&#34;]`},
		{"tag pair", `"\uDB40\uDC41"`, `&#34;<bdi><span class="esc">\uDB40\uDC41</span></bdi>&#34;`},
		{"raw tag", "\"\U000E0041\"", `&#34;<bdi><span class="esc">\uDB40\uDC41</span></bdi>&#34;`},
		{"lone surrogate", `"\ud800x"`, `&#34;<bdi><span class="esc">\ud800</span>x</bdi>&#34;`},
		{"indentation kept", "{\n  \"a\": 1\n}", "{\n  &#34;<bdi>a</bdi>&#34;: 1\n}"},
		{"text left open", "say \"hi\u202e\nthere", "say &#34;<bdi>hi<span class=\"esc\">\\u202E</span></bdi>\nthere"},
		{"hidden outside strings", "a\u202eb \xff", `a<span class="esc">\u202E</span>b <span class="esc">\xFF</span>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JSONHTML(tc.in); got != tc.want {
				t.Errorf("JSONHTML(%q) =\n%s\nwant\n%s", tc.in, got, tc.want)
			}
		})
	}
}

var markup = regexp.MustCompile(`</?bdi>|<span class="esc">|</span>`)

// checkHTML fails unless out is valid UTF-8 holding no hidden rune (line
// feeds and tabs aside) and no markup but display's own.
func checkHTML(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q: output is not UTF-8: %q", in, out)
	}
	for _, r := range out {
		if Hidden(r) && r != '\n' && r != '\t' {
			t.Fatalf("%q: output holds U+%04X: %q", in, r, out)
		}
	}
	if rest := markup.ReplaceAllString(out, ""); strings.ContainsAny(rest, "<>\"'") {
		t.Fatalf("%q: output holds markup of its own: %q", in, out)
	}
	if strings.Count(out, "<bdi>") != strings.Count(out, "</bdi>") {
		t.Fatalf("%q: isolates not closed: %q", in, out)
	}
}

// FuzzDisplay: whatever the input, every writer's output is valid UTF-8
// with no hidden rune left (the block writers keep line feeds and tabs),
// the HTML writers add no markup but theirs and close every isolate, and
// Agent stays within its bound.
func FuzzDisplay(f *testing.F) {
	for _, s := range []string{"", "ACME-\u202e4321-8765\u202c", `{"a": "\u202E\uDB40\uDC41\ud800"}`, "\xff\x00<>&\"'", "\"open \\", "שלום 12 34", "x\U000E0041\u200d",
		"Claude\u202e edoC\u200b", "https://\u0430pple.com/cb"} { // the attack pass's client name and look-alike host
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, limit uint8) {
		for _, out := range []string{Text(s), Agent(s, int(limit))} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: not UTF-8: %q", s, out)
			}
			for _, r := range out {
				if Hidden(r) {
					t.Fatalf("%q: U+%04X left in %q", s, r, out)
				}
			}
		}
		if n, max := utf8.RuneCountInString(Agent(s, int(limit))), int(limit); max > 0 && n > max+1 || max == 0 && n > AgentLimit+1 {
			t.Fatalf("Agent(%q, %d) has %d runes", s, limit, n)
		}
		checkHTML(t, s, HTML(s))
		checkHTML(t, s, BlockHTML(s))
		checkHTML(t, s, JSONHTML(s))
	})
}
