package approvalpage

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/jsonview"
)

// MaxPageBytes bounds every page Render and RenderError return, whatever
// the operations hold: an agent controls their arguments, so no call may
// make a page (or the time to render it) grow with its size.
const MaxPageBytes = 256 << 10

// MaxOperationsShown is how many operations a page lists. A pending page
// has checkboxes only for those, so the operations beyond it are never
// approved from the page (it posts selection=explicit); the page says so.
const MaxOperationsShown = 50

// argsLimits bound what PrettyJSON renders; Render then fits each
// operation's share of the page.
var argsLimits = jsonview.Limits{MaxBytes: 64 << 10, MaxDepth: 16, MaxItems: 200, MaxString: 4 << 10}

// How the page's room is shared: pageReserve covers the template, the
// per-operation markup and the page's own fields; the rest is split evenly
// between the operations shown.
const (
	pageReserve    = 64 << 10
	maxFieldCost   = 256  // workspace, id, form fields, connection, method
	maxTitleCost   = 512  // heading, action
	maxMessageCost = 2048 // message
)

// truncatedMark ends text that clip shortened.
const truncatedMark = "\n… (truncated to fit the page)"

// escapedCost bounds what s takes in a page (package display writes it):
// the characters HTML escapes take up to five bytes (&#34; &#39; &amp;
// &lt; &gt;), a quote up to eleven (it opens or closes a JSON string's
// isolate), a backslash up to 26 more than itself (a \u escape of a
// hidden rune is marked), and a hidden rune or a byte that is not UTF-8 up
// to 40 (its marked escape: <span class="esc">\uDB40\uDC41</span>).
func escapedCost(r rune, size int) int {
	switch {
	case r == '"':
		return 11
	case r == '\\':
		return 27
	case r == '\'' || r == '+' || r == '&' || r == '<' || r == '>':
		return 5
	case r == utf8.RuneError && size <= 1, display.Hidden(r) && r != '\n' && r != '\t':
		return 40
	}
	return utf8.RuneLen(r)
}

// clip shortens s so that, escaped, it takes at most budget bytes,
// truncatedMark included. It reads at most budget characters of s, so its
// work does not grow with s.
func clip(s string, budget int) string {
	room := budget - len(truncatedMark)
	cost, cut := 0, -1 // cut: where s ends when shortened
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		cost += escapedCost(r, size)
		if cost > room && cut < 0 {
			cut = i
		}
		if cost > budget {
			return strings.ToValidUTF8(s[:cut], "\uFFFD") + truncatedMark
		}
		i += size
	}
	return s
}

// clipOps returns the operations to show, each clipped to its share of the
// page, and how many were left out.
func clipOps(ops []Operation) (shown []Operation, hidden int) {
	if len(ops) > MaxOperationsShown {
		ops, hidden = ops[:MaxOperationsShown], len(ops)-MaxOperationsShown
	}
	perOp := (MaxPageBytes - pageReserve) / max(len(ops), 1)
	shown = make([]Operation, len(ops))
	for i, op := range ops {
		op.Connection = clip(op.Connection, maxFieldCost)
		op.Method = clip(op.Method, maxFieldCost/4)
		// The path appears once, the endpoint once: 1/8 each; the
		// arguments 1/2 and the outcome 1/4.
		op.Path = clip(op.Path, perOp/8)
		op.Endpoint = clip(op.Endpoint, perOp/8)
		if op.Now == "" && len(op.Changes) == 0 {
			op.Args = clip(op.Args, perOp/2)
			op.Outcome = clip(op.Outcome, perOp/4)
		} else {
			// With the resource shown: the arguments 1/4, the outcome
			// 1/8, the resource 1/4 and its changes 1/8.
			op.Args = clip(op.Args, perOp/4)
			op.Outcome = clip(op.Outcome, perOp/8)
			op.Now = clip(op.Now, perOp/4)
			op.Changes = clipChanges(op.Changes, perOp/8)
		}
		op.Summary = clip(op.Summary, maxMessageCost/4)
		op.NowNote = clip(op.NowNote, maxMessageCost/4)
		shown[i] = op
	}
	return shown, hidden
}

// hiddenText says what became of the operations not shown.
func hiddenText(n int, pending bool) string {
	s := strconv.Itoa(n) + " more operations are not shown"
	if n == 1 {
		s = "1 more operation is not shown"
	}
	if pending {
		return s + "; approving from this page leaves them out."
	}
	return s + "."
}

// maxChangesShown is how many rows the before and after table has.
const maxChangesShown = 50

// clipChanges keeps at most maxChangesShown rows, each value clipped to
// its share of budget.
func clipChanges(cs []Change, budget int) []Change {
	if len(cs) > maxChangesShown {
		cs = cs[:maxChangesShown]
	}
	share := budget / max(3*len(cs), 1)
	out := make([]Change, len(cs))
	for i, c := range cs {
		out[i] = Change{Field: clip(c.Field, share), From: clip(c.From, share), To: clip(c.To, share)}
	}
	return out
}
