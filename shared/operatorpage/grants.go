package operatorpage

import (
	"strconv"
	"strings"
	"time"
)

// Grant is one remembered approval (approval.remember): what it allows,
// to whom, who gave it, and how it stands. Revoke it with the CLI or
// DELETE /v1/operator/grants/<id>.
type Grant struct {
	ID, Credential, What, GrantedBy, Status string
	CallsLeft, MaxCalls                     int
	ExpiresAt                               time.Time
}

// grants writes the grants table (after the credentials).
func (v *view) grants(b *strings.Builder) {
	w := b.WriteString
	w("\n<h2 id=\"grants\">Grants</h2>")
	if len(v.Grants) == 0 {
		w("\n<p class=\"empty\">No grants.</p>")
		return
	}
	w("\n<table><thead><tr><th>Id</th><th>Credential</th><th>Allows</th><th>Granted by</th><th>Status</th><th>Calls left</th><th>Expires</th></tr></thead><tbody>")
	for _, g := range v.Grants {
		w("\n<tr><td><code>")
		value(b, g.ID)
		w("</code></td><td>")
		value(b, g.Credential)
		w("</td><td><code>")
		value(b, g.What)
		w("</code></td><td>")
		value(b, g.GrantedBy)
		w("</td><td>")
		text(b, g.Status)
		w("</td><td>")
		w(strconv.Itoa(g.CallsLeft) + " of " + strconv.Itoa(g.MaxCalls))
		w("</td><td>")
		text(b, when(g.ExpiresAt))
		w("</td></tr>")
	}
	w("\n</tbody></table>")
}

// boundGrants clips the grants as bound does the other lists.
func boundGrants(gs []Grant) []Grant {
	if len(gs) > MaxRows {
		gs = gs[:MaxRows]
	}
	out := make([]Grant, len(gs))
	for i, g := range gs {
		g.ID, g.Credential, g.What, g.GrantedBy = clip(g.ID, maxField), clip(g.Credential, maxField), clip(g.What, 512), clip(g.GrantedBy, maxField)
		out[i] = g
	}
	return out
}
