package approvalpage

import (
	"strconv"
	"strings"

	"github.com/countersign/countersign/shared/display"
)

// The page is written by hand rather than with html/template: text/template
// finds methods by name through reflect, and a binary that links it keeps
// every exported method of every type it links, which made the approve
// function's bootstrap several megabytes larger. The output is byte for byte
// what testdata/page.tmpl gives under html/template (render_test.go checks
// the two against each other): every value is escaped for the context it
// lands in, as html/template would escape it.

// pageStyle is the page's one style block, after the custom properties.
const pageStyle = `*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; background: #f9fafb; color: #111827; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.bar { background: var(--accent); color: var(--on-accent); padding: .75rem 1rem; font-weight: 600; }
.bar p { max-width: 44rem; margin: 0 auto; overflow-wrap: anywhere; }
main { max-width: 44rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .5rem; }
.meta, .hint, .id { color: #4b5563; margin: 0 0 1rem; }
.id { font-size: .875rem; }
.message { background: #fff; border-left: 4px solid var(--accent); padding: .5rem .75rem; margin: 0 0 1rem; }
fieldset { border: 0; margin: 0; padding: 0; min-width: 0; }
legend { font-weight: 600; padding: 0; margin: 0 0 .5rem; }
.ops { list-style: none; margin: 0; padding: 0; }
.op { background: #fff; border: 1px solid #d1d5db; border-radius: .5rem; padding: .75rem 1rem; margin: 0 0 .75rem; }
.op-head { display: flex; gap: .75rem; align-items: flex-start; }
.op-head input { flex: none; width: 1.25rem; height: 1.25rem; margin: .15rem 0 0; accent-color: var(--accent); }
.op-head label { cursor: pointer; }
.method { font-weight: 700; }
.method, .path, .endpoint { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.conn, .endpoint, .caption { color: #4b5563; }
.caption { font-size: .875rem; margin: .5rem 0 0; }
.state { font-weight: 600; margin: .5rem 0 0; }
.ask { background: #fff; border: 1px solid #d1d5db; border-radius: .5rem; padding: .5rem 1rem; margin: 0 0 1rem; }
.ask dt { font-size: .875rem; color: #4b5563; margin: .25rem 0 0; }
.ask dd { margin: 0 0 .25rem; overflow-wrap: anywhere; }
.prompt { font-weight: 600; margin: .25rem 0; }
.said { color: #4b5563; font-size: .875rem; }
.agent bdi { font-style: italic; }
.reason label { display: block; font-size: .875rem; color: #374151; margin: .75rem 0 .25rem; }
.reason input { font: inherit; width: 100%; max-width: 30rem; padding: .45rem .6rem; border: 1px solid #9ca3af; border-radius: .375rem; }
pre { margin: .25rem 0 0; padding: .75rem; background: #f3f4f6; border-radius: .375rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; font: .875rem/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1.25rem; }
button { font: inherit; font-weight: 600; min-height: 2.75rem; padding: .5rem 1.25rem; border-radius: .5rem; cursor: pointer; }
.approve { background: var(--accent); color: var(--on-accent); border: 2px solid var(--accent); }
.reject { background: #fff; color: #111827; border: 2px solid #6b7280; }
button:hover { filter: brightness(0.95); }
button:focus-visible, input:focus-visible { outline: 3px solid #1d4ed8; outline-offset: 2px; }
@media (max-width: 30rem) { .actions button { flex: 1 1 100%; } h1 { font-size: 1.25rem; } }
`

// nowStyle styles what a page shows of the resources (Operation.Summary,
// Now, Changes), only on a page that shows some.
const nowStyle = `.summary { font-weight: 600; margin: .5rem 0 0; overflow-wrap: anywhere; }
.now { font-size: 1rem; margin: .75rem 0 0; }
.changes { border-collapse: collapse; width: 100%; margin: .25rem 0 0; font-size: .875rem; }
.changes th, .changes td { border: 1px solid #d1d5db; padding: .25rem .5rem; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
.changes td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
`

// html writes the page.
func (v *view) html() []byte {
	var b strings.Builder
	b.Grow(8 << 10)
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		"<meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"robots\" content=\"noindex, nofollow\">\n<title>")
	text(&b, display.Text(v.Heading))
	b.WriteString(" · ")
	text(&b, display.Text(v.Workspace))
	b.WriteString("</title>\n<style nonce=\"")
	text(&b, v.Nonce)
	// Accent and OnAccent are validated colours (render), written as they are.
	b.WriteString("\">\n:root { --accent: " + v.Accent + "; --on-accent: " + v.OnAccent + "; }\n")
	b.WriteString(pageStyle)
	if v.HasNow {
		b.WriteString(nowStyle)
	}
	b.WriteString(display.CSS)
	b.WriteString("</style>\n</head>\n<body>\n<header class=\"bar\"><p>")
	value(&b, v.Workspace)
	b.WriteString("</p></header>\n<main>\n<h1>")
	value(&b, v.Heading)
	b.WriteString("</h1>")
	if v.Lead != "" {
		b.WriteString("\n<p class=\"hint\">")
		text(&b, v.Lead)
		b.WriteString("</p>")
	}
	if v.Message != "" {
		b.WriteString("\n<p class=\"message\" role=\"status\">")
		value(&b, v.Message)
		b.WriteString("</p>")
	}
	if v.SignedIn != "" {
		b.WriteString("\n<p class=\"who\">Signed in as <strong>")
		value(&b, v.SignedIn)
		b.WriteString("</strong>")
		if v.SignOutURL != "" {
			b.WriteString(" <a id=\"signout\" href=\"")
			text(&b, safeURL(v.SignOutURL))
			b.WriteString("\">Sign out</a>")
		}
		b.WriteString("</p>")
	} else if v.SignInURL != "" && v.State == Pending {
		b.WriteString("\n<p class=\"who\">Not signed in: a decision here names only the link. <a id=\"signin\" href=\"")
		text(&b, safeURL(v.SignInURL))
		b.WriteString("\">Sign in</a> to be named as the approver.</p>")
	}
	if v.Progress != "" {
		b.WriteString("\n<p class=\"meta\" role=\"status\">")
		value(&b, v.Progress)
		b.WriteString("</p>")
	}
	if v.Refusal != "" && v.State == Pending {
		b.WriteString("\n<p class=\"message\" role=\"alert\">")
		value(&b, v.Refusal)
		b.WriteString("</p>")
	}
	v.ask(&b)
	switch {
	case v.ShowForm:
		v.form(&b)
	case len(v.Ops) > 0:
		b.WriteString("\n<ol class=\"ops\">")
		for i := range v.Ops {
			op := &v.Ops[i]
			b.WriteString("\n<li class=\"op\">\n<div>")
			op.head(&b)
			b.WriteString("</div>")
			if op.State != "" {
				b.WriteString("\n<p class=\"state\">")
				text(&b, op.State)
				b.WriteString("</p>")
			}
			if op.Outcome != "" {
				b.WriteString("\n<p class=\"caption\">Outcome</p>\n<pre>")
				display.WriteJSONHTML(&b, op.Outcome)
				b.WriteString("</pre>")
			}
			b.WriteString("\n</li>")
		}
		b.WriteString("\n</ol>")
		v.hidden(&b)
	}
	if v.ID != "" {
		b.WriteString("\n<p class=\"id\">Confirmation ")
		value(&b, v.ID)
		b.WriteString("</p>")
	}
	b.WriteString("\n</main>\n</body>\n</html>\n")
	return []byte(b.String())
}

// ask writes who is asking and why: the custom tool's prompt, the
// credential and its last client, the reason, and a rejection's reason.
func (v *view) ask(b *strings.Builder) {
	if v.Requester == "" && v.Reason == "" && v.Prompt == "" && v.DecisionReason == "" {
		return
	}
	b.WriteString("\n<div class=\"ask\">")
	if v.Prompt != "" {
		b.WriteString("\n<p class=\"prompt\">")
		value(b, v.Prompt)
		b.WriteString("</p>")
	}
	b.WriteString("\n<dl>")
	if v.Requester != "" {
		b.WriteString("\n<dt>Asked with the credential</dt>\n<dd><code>")
		value(b, v.Requester)
		b.WriteString("</code></dd>")
		if v.Client != "" {
			b.WriteString("\n<dt>The agent says it is</dt>\n<dd class=\"agent\">“")
			value(b, v.Client)
			b.WriteString("” <span class=\"said\">(its own words, not checked")
			if v.ClientAsks != "" {
				b.WriteString("; ")
				text(b, v.ClientAsks)
			}
			b.WriteString(")</span></dd>")
		}
	}
	if v.Reason != "" {
		b.WriteString("\n<dt>Why it needs you</dt>\n<dd>")
		value(b, v.Reason)
		b.WriteString("</dd>")
	}
	if v.DecisionReason != "" {
		b.WriteString("\n<dt>Reason given</dt>\n<dd>")
		value(b, v.DecisionReason)
		b.WriteString("</dd>")
	}
	b.WriteString("\n</dl>\n</div>")
}

// form writes the pending page's form.
func (v *view) form(b *strings.Builder) {
	b.WriteString("\n<p class=\"meta\"><strong>")
	text(b, v.TimeText)
	b.WriteString("</strong>")
	if v.ExpiresISO != "" {
		b.WriteString(" · expires <time datetime=\"")
		text(b, v.ExpiresISO)
		b.WriteString("\">")
		text(b, v.ExpiresTxt)
		b.WriteString("</time>")
	}
	b.WriteString("</p>\n<form method=\"post\" action=\"")
	text(b, safeURL(v.Action))
	b.WriteString("\">")
	hidden := func(name, value string) {
		b.WriteString("\n<input type=\"hidden\" name=\"")
		text(b, name)
		b.WriteString("\" value=\"")
		text(b, value)
		b.WriteString("\">")
	}
	hidden("a", v.Form.Approver)
	hidden("exp", strconv.FormatInt(v.Form.Exp, 10))
	hidden("kid", v.Form.KID)
	hidden("sig", v.Form.Sig)
	hidden(v.Selection[0], v.Selection[1])
	if v.Form.CSRF != "" {
		hidden(CSRFField, v.Form.CSRF)
	}
	if v.Editing {
		hidden(EditFormField, EditFormPage)
	}
	b.WriteString("\n<fieldset>\n<legend>Clear an operation to leave it out</legend>\n<ol class=\"ops\">")
	for i := range v.Ops {
		op := &v.Ops[i]
		index := strconv.Itoa(op.Index)
		b.WriteString("\n<li class=\"op\">\n<div class=\"op-head\">\n<input type=\"checkbox\" name=\"op\" value=\"" + index +
			"\" id=\"op-" + index + "\" checked>\n<label for=\"op-" + index + "\">")
		op.head(b)
		b.WriteString("</label>\n</div>")
		op.now(b)
		b.WriteString("\n<p class=\"caption\">Arguments</p>\n<pre>")
		if op.Args != "" {
			display.WriteJSONHTML(b, op.Args)
		} else {
			b.WriteString("(none)")
		}
		b.WriteString("</pre>")
		op.edits(b)
		b.WriteString("\n</li>")
	}
	b.WriteString("\n</ol>")
	v.hidden(b)
	b.WriteString("\n</fieldset>\n<p class=\"reason\"><label for=\"" + ReasonField + "\">Reason (optional; the agent sees it if you reject)</label>" +
		"<input type=\"text\" name=\"" + ReasonField + "\" id=\"" + ReasonField + "\" maxlength=\"500\" autocomplete=\"off\"></p>")
	disabled := ""
	switch {
	case v.Passkey && v.PasskeyAt != "":
		b.WriteString("\n<p class=\"message\" role=\"alert\" id=\"passkey-elsewhere\">Approving this call needs your passkey, which works at this page's other address. <a href=\"")
		text(b, safeURL(v.PasskeyAt))
		b.WriteString("\">Open it there</a>. You can reject it here.</p>")
		disabled = " disabled"
	case v.Passkey && v.PasskeysURL != "":
		b.WriteString("\n<p class=\"message\" role=\"alert\" id=\"passkey-needed\">Approving this call needs a passkey, and you have none. <a href=\"")
		text(b, safeURL(v.PasskeysURL))
		b.WriteString("\">Register a passkey</a>, then open this link again. You can reject it without one.</p>")
		disabled = " disabled"
	case v.Passkey:
		b.WriteString("\n<p class=\"meta\" id=\"passkey-status\" role=\"status\">Approve asks your passkey to sign exactly what you approve.</p>")
	}
	b.WriteString("\n<div class=\"actions\">\n" +
		"<button type=\"submit\" name=\"decision\" value=\"approve\" class=\"approve\"" + disabled + ">Approve</button>\n" +
		"<button type=\"submit\" name=\"decision\" value=\"reject\" class=\"reject\">Reject all</button>\n</div>\n</form>")
	v.rememberForm(b)
	if v.signs() {
		b.WriteString("\n<script nonce=\"")
		text(b, v.Nonce)
		b.WriteString("\">" + PasskeyScript + "</script>")
	}
}

// signs reports whether the page carries the passkey script: a pending
// form whose Approve signs, for a person who has a passkey.
func (v *view) signs() bool {
	return v.ShowForm && v.Passkey && v.PasskeysURL == "" && v.PasskeyAt == ""
}

// edits writes an operation's edit inputs (approval.editable): each of
// its field's type, holding the agent's value; a checkbox follows a hidden
// "false", so that clearing it posts false.
func (op *opView) edits(b *strings.Builder) {
	if len(op.EditInputs) == 0 {
		return
	}
	b.WriteString("\n<div class=\"edits\">\n<p class=\"caption\">Change before approving</p>")
	for _, e := range op.EditInputs {
		b.WriteString("\n<p class=\"edit\"><label for=\"")
		text(b, e.ID)
		b.WriteString("\">")
		value(b, e.Field)
		b.WriteString("</label> ")
		if e.Input() == "checkbox" {
			b.WriteString("<input type=\"hidden\" name=\"")
			text(b, e.Name)
			b.WriteString("\" value=\"false\"><input type=\"checkbox\" name=\"")
			text(b, e.Name)
			b.WriteString("\" id=\"")
			text(b, e.ID)
			b.WriteString("\" value=\"true\"")
			if e.Checked {
				b.WriteString(" checked")
			}
			b.WriteString("></p>")
			continue
		}
		b.WriteString("<input type=\"" + e.Input() + "\" name=\"")
		text(b, e.Name)
		b.WriteString("\" id=\"")
		text(b, e.ID)
		b.WriteString("\"")
		if e.Input() == "number" {
			b.WriteString(" step=\"any\"")
		}
		b.WriteString(" value=\"")
		text(b, e.Value)
		b.WriteString("\" autocomplete=\"off\"></p>")
	}
	b.WriteString("\n</div>")
}

// head writes an operation's method, path, connection and endpoint.
func (op *opView) head(b *strings.Builder) {
	b.WriteString("<span class=\"method\">")
	value(b, op.Method)
	b.WriteString("</span> <span class=\"path\">")
	value(b, op.Path)
	b.WriteString("</span> <span class=\"conn\">on ")
	value(b, op.Connection)
	b.WriteString("</span>")
	if op.Shown {
		b.WriteString(" <span class=\"endpoint\">(")
		value(b, op.Endpoint)
		b.WriteString(")</span>")
	}
}

// now writes what the operation will do in words, the before and after
// of what it changes, and the resource as it is now.
func (op *opView) now(b *strings.Builder) {
	if op.Summary != "" {
		b.WriteString("\n<p class=\"summary\">")
		value(b, op.Summary)
		b.WriteString("</p>")
	}
	if len(op.Changes) > 0 {
		b.WriteString("\n<table class=\"changes\">\n<caption class=\"caption\">What changes</caption>\n<thead><tr><th>Field</th><th>Now</th><th>After</th></tr></thead>\n<tbody>")
		for _, c := range op.Changes {
			b.WriteString("\n<tr><td>")
			value(b, c.Field)
			b.WriteString("</td><td>")
			if c.From != "" {
				display.WriteJSONHTML(b, c.From)
			} else {
				b.WriteString("(absent)")
			}
			b.WriteString("</td><td>")
			if c.To != "" {
				display.WriteJSONHTML(b, c.To)
			} else {
				b.WriteString("(removed)")
			}
			b.WriteString("</td></tr>")
		}
		b.WriteString("\n</tbody>\n</table>")
	}
	if op.Now != "" || op.NowNote != "" {
		b.WriteString("\n<h2 class=\"now\">Now</h2>")
		if op.NowNote != "" {
			b.WriteString("\n<p class=\"caption\">")
			value(b, op.NowNote)
			b.WriteString("</p>")
		}
		if op.Now != "" {
			b.WriteString("\n<pre>")
			display.WriteJSONHTML(b, op.Now)
			b.WriteString("</pre>")
		}
	}
}

// hidden writes the line about the operations not shown, if any.
func (v *view) hidden(b *strings.Builder) {
	if v.Hidden != "" {
		b.WriteString("\n<p class=\"message\">")
		text(b, v.Hidden)
		b.WriteString("</p>")
	}
}

// value writes a value a person reads: escaped for HTML, hidden characters
// shown as marked escapes, in an isolate of its own (display.WriteHTML).
func value(b *strings.Builder, s string) { display.WriteHTML(b, s) }

// text writes s escaped for HTML text and quoted attribute values
// (display.WriteAttr).
func text(b *strings.Builder, s string) { display.WriteAttr(b, s) }

// safeURL is a value for a URL attribute, as html/template makes it
// (display.SafeURL).
func safeURL(s string) string { return display.SafeURL(s) }
