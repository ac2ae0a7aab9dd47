// Package display writes values for people to read: the approval page, the
// operator page, the MCP form and card, Slack text and e-mail all show
// agent-chosen strings through it, so what a person sees is what the bytes
// say.
//
// A string can look like another: a right-to-left override (U+202E) makes
// "ACME-\u202E4321-8765\u202C" read "ACME-5678-1234"; a zero-width space,
// a tag character or a soft hyphen is invisible; a no-break space looks
// like a space. Hidden reports every such rune: controls (Cc), format
// characters (Cf: bidi controls and marks, zero-width characters, U+FEFF,
// the soft hyphen, tag characters), line and paragraph separators, spaces
// other than U+0020, private-use characters, noncharacters, variation
// selectors and the blank letters (Hangul fillers, U+2800, ...).
//
// Text writes each hidden rune as a visible escape: \u202E for the basic
// plane, \U000E0041 above it, and \xFF for a byte that is not UTF-8.
// Everything else is left as it is. Block does the same but keeps line
// breaks and tabs, for multi-line text. HTML also escapes for HTML, marks
// each escape with <span class="esc"> (styled by CSS) and wraps the value
// in <bdi>, so even the right-to-left letters a value may rightly hold
// cannot reorder the text around it. JSONHTML does that for the pretty JSON
// of package jsonview: every string, key or value, is its own isolate, and
// the \u escapes that stand for hidden runes are marked.
//
// Agent bounds what an agent says about itself (its client name and
// version) before it is shown, always labelled as the agent's.
package display
