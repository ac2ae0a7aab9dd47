package approvalpage

import (
	"strconv"
	"strings"
)

// Remember offers, on a pending page, "Approve and allow for N minutes":
// the approval of this call also allows the same credential's later calls
// of the same endpoint for the minutes chosen, up to Calls calls
// (approval.remember). nil offers nothing (no remember rule, more than one
// operation, a quorum or four eyes).
type Remember struct {
	// MaxMinutes is the most the approver may choose.
	MaxMinutes int
	// Calls is how many later calls the grant allows.
	Calls int
	// What names the calls allowed, e.g. "DELETE /contacts/{id} on crm by agent-1".
	What string
}

// RememberField is the form field that carries the minutes chosen.
const RememberField = "remember"

// Choices are the minutes offered, up to the maximum (which is
// always offered).
func (r *Remember) Choices() []int {
	var out []int
	for _, m := range []int{5, 10, 15, 30, 60, 120, 240, 480, 720} {
		if m < r.MaxMinutes {
			out = append(out, m)
		}
	}
	return append(out, r.MaxMinutes)
}

// rememberForm writes the second form of a pending page: its own signed
// link fields, decision=approve, the CSRF token, and the minutes. It approves every
// operation (a page that offers it has one).
func (v *view) rememberForm(b *strings.Builder) {
	r := v.Remember
	if r == nil || r.MaxMinutes < 1 {
		return
	}
	b.WriteString("\n<form method=\"post\" class=\"remember\" action=\"")
	text(b, safeURL(v.Action))
	b.WriteString("\">")
	fields := [][2]string{{"a", v.Form.Approver}, {"exp", strconv.FormatInt(v.Form.Exp, 10)}, {"kid", v.Form.KID}, {"sig", v.Form.Sig}, {"decision", "approve"}}
	if v.Form.CSRF != "" {
		// The same token as the first form: a signed-in POST needs it.
		fields = append(fields, [2]string{CSRFField, v.Form.CSRF})
	}
	for _, f := range fields {
		b.WriteString("\n<input type=\"hidden\" name=\"")
		text(b, f[0])
		b.WriteString("\" value=\"")
		text(b, f[1])
		b.WriteString("\">")
	}
	b.WriteString("\n<div class=\"actions\">\n<button type=\"submit\" class=\"approve\" id=\"remember-approve\">Approve and allow for</button>\n<select name=\"" + RememberField + "\" id=\"" + RememberField + "\" aria-label=\"minutes\">")
	for _, m := range r.Choices() {
		s := strconv.Itoa(m)
		b.WriteString("\n<option value=\"" + s + "\">" + s + " minutes</option>")
	}
	b.WriteString("\n</select>\n</div>\n<p class=\"meta\">Allows up to " + strconv.Itoa(r.Calls) + " more calls of ")
	value(b, r.What)
	b.WriteString(" without asking, until the time runs out; an operator can revoke it.</p>\n</form>")
}
