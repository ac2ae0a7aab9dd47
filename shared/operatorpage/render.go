package operatorpage

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/display"
)

// The page is written by hand rather than with html/template, as the
// approval page is (shared/approvalpage): text/template finds methods by
// name through reflect, and a binary that links it keeps every exported
// method of every type it links, which made the operator function's
// bootstrap 19 MB where the others weigh 10. The output is byte for byte
// what testdata/page.tmpl gives under html/template (page_test.go checks
// every page the tests render against it): every value is escaped for the
// context it lands in, as html/template would escape it.

// pageStyle is the page's style block between the accent and display.CSS.
const pageStyle = `*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; background: #f9fafb; color: #111827; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.bar { background: var(--accent); color: #fff; padding: .75rem 1rem; font-weight: 600; }
.bar p { max-width: 64rem; margin: 0 auto; display: flex; justify-content: space-between; gap: 1rem; overflow-wrap: anywhere; }
.bar a { color: #fff; }
.nav { background: #fff; border-bottom: 1px solid #e5e7eb; }
.nav ul { max-width: 64rem; margin: 0 auto; padding: .25rem 1rem; list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; }
.nav a { display: inline-block; padding: .4rem 0; color: #374151; text-decoration: none; font-weight: 600; border-bottom: 3px solid transparent; }
.nav a[aria-current] { color: #111827; border-bottom-color: var(--accent); }
.scroll { overflow-x: auto; max-width: 100%; }
main { max-width: 64rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .5rem; }
h2 { font-size: 1.125rem; margin: 1.75rem 0 .5rem; }
.meta, .hint { color: #4b5563; margin: 0 0 1rem; }
.message { background: #fff; border-left: 4px solid var(--accent); padding: .5rem .75rem; margin: 0 0 1rem; overflow-wrap: anywhere; }
.message.error { border-left-color: #b91c1c; }
.ops { list-style: none; margin: 0; padding: 0; }
.op { background: #fff; border: 1px solid #d1d5db; border-radius: .5rem; padding: .75rem 1rem; margin: 0 0 .75rem; }
.method { font-weight: 700; }
.method, .path, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.conn, .caption { color: #4b5563; }
.caption { font-size: .875rem; margin: .5rem 0 0; }
pre { margin: .25rem 0 0; padding: .75rem; background: #f3f4f6; border-radius: .375rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; font: .875rem/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: .75rem; align-items: flex-end; }
.actions form { display: flex; gap: .5rem; align-items: flex-end; flex-wrap: wrap; margin: 0; }
label { display: block; font-size: .875rem; color: #374151; }
input[type=text], input[type=password], select { font: inherit; padding: .45rem .6rem; border: 1px solid #9ca3af; border-radius: .375rem; max-width: 100%; }
input[type=text], input[type=password] { min-width: min(14rem, 100%); }
button { font: inherit; font-weight: 600; min-height: 2.5rem; padding: .4rem 1.1rem; border-radius: .5rem; cursor: pointer; }
.primary { background: var(--accent); color: #fff; border: 2px solid var(--accent); }
.secondary { background: #fff; color: #111827; border: 2px solid #6b7280; }
.bar button { min-height: 0; padding: .1rem .6rem; font-size: .875rem; }
button:focus-visible, input:focus-visible { outline: 3px solid #1d4ed8; outline-offset: 2px; }
table { width: 100%; border-collapse: collapse; background: #fff; font-size: .875rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid #e5e7eb; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f3f4f6; overflow-wrap: normal; }
.empty { color: #6b7280; }
.said { color: #4b5563; font-size: .8125rem; }
.rules { margin: 0; padding-left: 1.1rem; }
@media (max-width: 40rem) { main { padding: 1rem .75rem 2rem; } .bar p { flex-wrap: wrap; } table { font-size: .8125rem; } .scroll table:has(thead) { min-width: 40rem; } th, td { padding: .35rem .4rem; overflow-wrap: break-word; } }
`

// html writes the page.
func (v *view) html() []byte {
	var b strings.Builder
	b.Grow(16 << 10)
	w := b.WriteString
	w("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	w("<meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"robots\" content=\"noindex, nofollow\">\n<title>")
	text(&b, v.Title)
	w(" · ")
	text(&b, display.Text(v.Workspace))
	w("</title>\n<style nonce=\"")
	text(&b, v.Nonce)
	w("\">\n:root { --accent: ")
	w(v.Accent) // validated: #rgb or #rrggbb
	w("; }\n")
	w(pageStyle)
	w(display.CSS)
	w("</style>\n</head>\n<body>\n<header class=\"bar\"><p><span>")
	value(&b, v.Workspace)
	w(" · operator</span>")
	if v.Operator != "" {
		w("<span>")
		value(&b, v.Operator)
		if v.Person {
			w(" <a href=\"/oauth/signout\" id=\"signout\">Sign out</a></span>")
		} else {
			w(" ")
			postForm(&b, "/operator/logout", v.CSRF)
			w("<button type=\"submit\" class=\"secondary\">Sign out</button></form></span>")
		}
	}
	w("</p></header>")
	if v.Operator != "" {
		v.nav(&b)
	}
	w("\n<main>")
	if v.Operator == "" {
		w("\n<h1>Operator sign-in</h1>\n<p class=\"hint\">Enter an operator key. It is checked once and never kept in the page or its address; the session lasts a few hours.</p>")
		if v.PersonSignIn {
			w("\n<p><a href=\"/operator/signin\" id=\"person-signin\">Sign in with your account</a> if you are a person with role operator; or enter a key.</p>")
		}
		v.message(&b)
		w("\n<form method=\"post\" action=\"/operator/login\">\n<input type=\"hidden\" name=\"csrf\" value=\"")
		text(&b, v.CSRF)
		w("\">\n<label for=\"key\">Operator key</label>\n<div class=\"actions\"><input type=\"password\" name=\"key\" id=\"key\" autocomplete=\"off\" required><button type=\"submit\" class=\"primary\">Sign in</button></div>\n</form>")
	} else {
		w("\n<h1>Operator</h1>")
		v.message(&b)
		v.newKey(&b)
		switch {
		case v.Shadow != nil:
			v.shadowPage(&b)
		case v.Operations != nil:
			v.operationsPage(&b)
		case v.Detail != nil:
			v.credentialPage(&b)
		default:
			v.trialLink(&b)
			v.reviews(&b)
			more(&b, v.NextReviews, "More review items")
			v.confirmations(&b)
			more(&b, v.NextConfirmations, "Older confirmations")
			v.credentials(&b)
			more(&b, v.NextCredentials, "More credentials")
			v.createForm(&b)
			v.grants(&b)
			more(&b, v.NextGrants, "More grants")
			v.audit(&b)
			more(&b, v.NextAudit, "Records of more chains")
		}
	}
	w("\n</main>\n</body>\n</html>\n")
	return []byte(b.String())
}

// NavItem is one link of the navigation every signed-in page starts with.
type NavItem struct {
	Label, Href string
	// Page is the page it marks as the one shown (view.current).
	Page string
}

// Nav is the navigation, in its order.
var Nav = [...]NavItem{
	{"Queue", "/operator#reviews", "dashboard"},
	{"Confirmations", "/operator#confirmations", ""},
	{"Credentials", "/operator#credentials", "credential"},
	{"Operations", "/operator/operations", "operations"},
	{"Policy trial", "/operator/shadow", "trial"},
	{"Audit", "/operator#audit", ""},
}

// current names the page shown, as NavItem.Page does.
func (v *view) current() string {
	switch {
	case v.Shadow != nil:
		return "trial"
	case v.Operations != nil:
		return "operations"
	case v.Detail != nil:
		return "credential"
	}
	return "dashboard"
}

// nav writes the navigation.
func (v *view) nav(b *strings.Builder) {
	w := b.WriteString
	cur := v.current()
	w("\n<nav class=\"nav\" aria-label=\"Operator pages\"><ul>")
	for _, n := range Nav {
		w("<li><a href=\"")
		w(n.Href)
		w("\"")
		if n.Page == cur {
			w(" aria-current=\"page\"")
		}
		w(">")
		w(n.Label)
		w("</a></li>")
	}
	w("</ul></nav>")
}

// tableHead opens a table, in a box that scrolls on its own on a narrow
// screen (the page never does), with its column heads.
func tableHead(b *strings.Builder, cols ...string) {
	b.WriteString("\n<div class=\"scroll\"><table><thead><tr>")
	for _, c := range cols {
		b.WriteString("<th>")
		b.WriteString(c)
		b.WriteString("</th>")
	}
	b.WriteString("</tr></thead><tbody>")
}

// tableEnd closes what tableHead opened.
func tableEnd(b *strings.Builder) { b.WriteString("\n</tbody></table></div>") }

// postForm opens a POST form to action (an address the page made safe)
// with the session's CSRF token.
func postForm(b *strings.Builder, action, csrf string) {
	b.WriteString("<form method=\"post\" action=\"")
	text(b, action)
	b.WriteString("\"><input type=\"hidden\" name=\"csrf\" value=\"")
	text(b, csrf)
	b.WriteString("\">")
}

func (v *view) message(b *strings.Builder) {
	if v.Message == "" {
		return
	}
	b.WriteString("\n<p class=\"message")
	if v.Error {
		b.WriteString(" error")
	}
	b.WriteString("\" role=\"status\">")
	value(b, v.Message)
	b.WriteString("</p>")
}

func (v *view) reviews(b *strings.Builder) {
	w := b.WriteString
	w("\n<h2 id=\"reviews\">Review queue</h2>")
	if len(v.Reviews) == 0 {
		w("\n<p class=\"empty\">No review items.</p>")
		return
	}
	w("\n<ol class=\"ops\">")
	for _, r := range v.Reviews {
		w("\n<li class=\"op\" id=\"review-")
		text(b, r.ID)
		w("\">\n<div><span class=\"method\">")
		value(b, r.Method)
		w("</span> <span class=\"path\">")
		value(b, r.Path)
		w("</span> <span class=\"conn\">on ")
		value(b, r.Connection)
		w("</span></div>\n<p class=\"caption\">Asked with the credential <code>")
		value(b, r.Credential)
		w("</code> · ")
		text(b, when(r.CreatedAt))
		w(" · ")
		text(b, r.Status)
		if r.Pending {
			w(" until ")
			text(b, when(r.ExpiresAt))
		}
		w("</p>\n<p class=\"caption\">Why it needs review</p>\n<pre>")
		w(display.BlockHTML(r.Reason))
		w("</pre>")
		if r.Args != "" {
			w("\n<p class=\"caption\">Arguments</p>\n<pre>")
			display.WriteJSONHTML(b, r.Args)
			w("</pre>")
		}
		if r.Pending {
			action := "/operator/reviews/" + display.NormalizeURL(r.ID)
			w("\n<div class=\"actions\">\n")
			postForm(b, action, v.CSRF)
			w("<input type=\"hidden\" name=\"decision\" value=\"run\"><button type=\"submit\" class=\"primary\">Run</button></form>\n")
			postForm(b, action, v.CSRF)
			w("<input type=\"hidden\" name=\"decision\" value=\"dismiss\"><label>Reason <input type=\"text\" name=\"reason\" maxlength=\"500\"></label><button type=\"submit\" class=\"secondary\">Dismiss</button></form>\n</div>")
		} else {
			w("\n<p class=\"caption\">")
			if r.DecidedBy != "" {
				w("By ")
				value(b, r.DecidedBy)
			}
			if r.Note != "" {
				w(": ")
				value(b, r.Note)
			}
			w("</p>")
			if r.Outcome != "" {
				w("\n<pre>")
				display.WriteJSONHTML(b, r.Outcome)
				w("</pre>")
			}
		}
		w("\n<p class=\"caption\">Review ")
		value(b, r.ID)
		w("</p>\n</li>")
	}
	w("\n</ol>")
}

func (v *view) confirmations(b *strings.Builder) {
	b.WriteString("\n<h2 id=\"confirmations\">Confirmations</h2>")
	confirmationTable(b, v.Confirmations, true, "No confirmations kept.")
}

// confirmationTable writes confirmations: with all, their credential and
// status too (the dashboard's list; a credential's page lists its pending
// ones without).
func confirmationTable(b *strings.Builder, cs []Confirmation, all bool, none string) {
	w := b.WriteString
	if len(cs) == 0 {
		w("\n<p class=\"empty\">")
		w(none)
		w("</p>")
		return
	}
	if all {
		tableHead(b, "Id", "Credential", "Status", "Operations", "Expires")
	} else {
		tableHead(b, "Id", "Operations", "Expires")
	}
	for _, c := range cs {
		w("\n<tr><td><code>")
		value(b, c.ID)
		w("</code></td><td>")
		if all {
			value(b, c.Credential)
			w("</td><td>")
			text(b, c.Status)
			w("</td><td>")
		}
		for _, op := range c.Operations {
			w("<div><code>")
			value(b, op)
			w("</code></div>")
		}
		w("</td><td>")
		text(b, when(c.ExpiresAt))
		w("</td></tr>")
	}
	tableEnd(b)
}

func (v *view) credentials(b *strings.Builder) {
	w := b.WriteString
	w("\n<h2 id=\"credentials\">Credentials</h2>")
	tableHead(b, "Id", "Choice", "Read-only", "Role", "Connections", "Last client")
	for _, c := range v.Credentials {
		w("\n<tr><td><a href=\"")
		text(b, "/operator/credentials/"+display.NormalizeURL(c.ID))
		w("\"><code>")
		value(b, c.ID)
		w("</code></a></td><td>")
		text(b, c.Choice)
		w("</td><td>")
		w(pick(c.ReadOnly, "yes", "no"))
		w("</td><td>")
		w(pick(c.Operator, "operator", "agent"))
		if c.Person != "" {
			w("<div class=\"said\">person ")
			value(b, c.Person)
			w("</div>")
		}
		w("</td><td>")
		value(b, c.Connections)
		w("</td><td>")
		lastClient(b, c)
		w("</td></tr>")
	}
	tableEnd(b)
}

func (v *view) audit(b *strings.Builder) {
	w := b.WriteString
	w("\n<h2 id=\"audit\">Recent audit records</h2>")
	if len(v.Audit) == 0 {
		w("\n<p class=\"empty\">No audit records.</p>")
		return
	}
	tableHead(b, "When", "Chain", "Who", "What", "Outcome", "Reason")
	for _, a := range v.Audit {
		w("\n<tr><td><time datetime=\"")
		text(b, a.At.UTC().Format(time.RFC3339))
		w("\">")
		text(b, when(a.At))
		w("</time></td><td>")
		value(b, a.Chain)
		w(" #")
		w(strconv.FormatInt(a.Seq, 10))
		w("</td><td>")
		value(b, a.Actor)
		w("</td><td>")
		value(b, a.Action)
		if a.Subject != "" {
			w(" <code>")
			value(b, a.Subject)
			w("</code>")
		}
		if a.What != "" {
			w("<div><code>")
			value(b, a.What)
			w("</code></div>")
		}
		w("</td><td>")
		value(b, a.Outcome)
		w("</td><td>")
		value(b, a.Reason)
		w("</td></tr>")
	}
	tableEnd(b)
}

// more links to a list's next page when it has one. The address is the
// page's own (/operator?...): normalized and escaped as html/template does
// for an href.
func more(b *strings.Builder, next, label string) {
	if next == "" {
		return
	}
	b.WriteString("\n<p><a href=\"")
	text(b, display.SafeURL(next))
	b.WriteString("\">")
	b.WriteString(label)
	b.WriteString("</a></p>")
}

// when is a time as the page shows it.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2 Jan 15:04:05 UTC")
}

func pick(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// value writes a value a person reads: escaped for HTML, hidden characters
// shown as marked escapes, in an isolate of its own (display.WriteHTML).
func value(b *strings.Builder, s string) { display.WriteHTML(b, s) }

// text writes s escaped for HTML text and quoted attribute values
// (display.WriteAttr).
func text(b *strings.Builder, s string) { display.WriteAttr(b, s) }
