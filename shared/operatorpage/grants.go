package operatorpage

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/display"
)

// Grant is one remembered approval (approval.remember): what it allows,
// to whom, who gave it, and how it stands. Revoke it on the page, with the CLI or
// DELETE /v1/operator/grants/<id>.
type Grant struct {
	ID, Credential, What, GrantedBy, Status string
	CallsLeft, MaxCalls                     int
	ExpiresAt                               time.Time
}

// grants writes the grants table (after the credentials).
func (v *view) grants(b *strings.Builder) {
	b.WriteString("\n<h2 id=\"grants\">Grants</h2>")
	grantTable(b, v.Grants, true, v.CSRF)
}

// grantTable writes grants, each with the form that revokes it; with
// withCredential, the credential each allows too (the dashboard's list; a
// credential's page lists its own without).
func grantTable(b *strings.Builder, gs []Grant, withCredential bool, csrf string) {
	w := b.WriteString
	if len(gs) == 0 {
		w("\n<p class=\"empty\">No grants.</p>")
		return
	}
	if withCredential {
		tableHead(b, "Id", "Credential", "Allows", "Granted by", "Status", "Calls left", "Expires", "")
	} else {
		tableHead(b, "Id", "Allows", "Granted by", "Status", "Calls left", "Expires", "")
	}
	for _, g := range gs {
		w("\n<tr><td><code>")
		value(b, g.ID)
		w("</code></td><td>")
		if withCredential {
			value(b, g.Credential)
			w("</td><td>")
		}
		w("<code>")
		value(b, g.What)
		w("</code></td><td>")
		value(b, g.GrantedBy)
		w("</td><td>")
		text(b, g.Status)
		w("</td><td>")
		w(strconv.Itoa(g.CallsLeft) + " of " + strconv.Itoa(g.MaxCalls))
		w("</td><td>")
		text(b, when(g.ExpiresAt))
		w("</td><td>")
		postForm(b, "/operator/grants/"+display.NormalizeURL(g.ID), csrf)
		w("<button type=\"submit\" class=\"secondary\">Revoke</button></form></td></tr>")
	}
	tableEnd(b)
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
