package operatorpage

import "strings"

// OperationsPage is the operations page (GET /operator/operations): each
// connection's endpoints with their tier and every rule that can change
// it, and, for a chosen credential, the outcome of a plain call to each
// (what countersign explain says). It only reads the configuration: the
// page says how to change it.
type OperationsPage struct {
	// Credential is the credential the outcomes are for ("": none chosen).
	Credential string
	// Credentials are the ids offered to choose from.
	Credentials []string
	Connections []OperationsConnection
}

// OperationsConnection is one connection: the rules it sets for all its
// endpoints, and its endpoints.
type OperationsConnection struct {
	Name       string
	Rules      []string
	Operations []Operation
}

// Operation is one endpoint.
type Operation struct {
	Method, Path, Tier string
	// Rules are the rules that can change its tier or how its calls are
	// approved, each a sentence.
	Rules []string
	// Outcome and Rule are what the chosen credential's call gets and the
	// rule that decided it (empty with no credential chosen).
	Outcome, Rule string
}

// operationsPage writes the operations page.
func (v *view) operationsPage(b *strings.Builder) {
	d := v.Operations
	w := b.WriteString
	w("\n<h2 id=\"operations\">Operations</h2>\n<p class=\"hint\">The configuration is code: this page only reads it. To change a tier or a rule, edit the configuration directory and push it (<code>make config-push</code>); every instance decides with it from its next call.</p>")
	w("\n<form method=\"get\" action=\"/operator/operations\"><div class=\"actions\"><label>Outcome for the credential <select name=\"credential\" id=\"ops-credential\"><option value=\"\">none</option>")
	for _, id := range d.Credentials {
		w("<option value=\"")
		text(b, id)
		w("\"")
		if id == d.Credential {
			w(" selected")
		}
		w(">")
		text(b, id)
		w("</option>")
	}
	w("</select></label><button type=\"submit\" class=\"secondary\" id=\"ops-show\">Show</button></div></form>")
	if d.Credential != "" {
		w("\n<p class=\"hint\">Outcomes for <code>")
		value(b, d.Credential)
		w("</code>: a call with no body and no query, as <code>countersign explain</code> decides it (no hook is asked; a threshold on a value the call sends, a rate or a hook can still change it).</p>")
	}
	if len(d.Connections) == 0 {
		w("\n<p class=\"empty\">No connections are configured.</p>")
		return
	}
	for _, c := range d.Connections {
		w("\n<h3 id=\"connection-")
		text(b, c.Name)
		w("\">")
		value(b, c.Name)
		w("</h3>")
		rules(b, c.Rules)
		if d.Credential != "" {
			tableHead(b, "Endpoint", "Tier", "Rules that can change it", "Outcome")
		} else {
			tableHead(b, "Endpoint", "Tier", "Rules that can change it")
		}
		for _, op := range c.Operations {
			w("\n<tr><td><code>")
			value(b, op.Method+" "+op.Path)
			w("</code></td><td>")
			text(b, op.Tier)
			w("</td><td>")
			rules(b, op.Rules)
			w("</td>")
			if d.Credential != "" {
				w("<td>")
				value(b, op.Outcome)
				w("<div class=\"said\">")
				value(b, op.Rule)
				w("</div></td>")
			}
			w("</tr>")
		}
		tableEnd(b)
	}
}

// rules writes a list of rules (nothing for none).
func rules(b *strings.Builder, rs []string) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("<ul class=\"rules\">")
	for _, r := range rs {
		b.WriteString("<li>")
		value(b, r)
		b.WriteString("</li>")
	}
	b.WriteString("</ul>")
}

// boundOperations clips the operations page as bound does the lists.
func boundOperations(d *OperationsPage) *OperationsPage {
	if d == nil {
		return nil
	}
	c := *d
	c.Credential = clip(c.Credential, maxField)
	if len(c.Credentials) > MaxRows {
		c.Credentials = c.Credentials[:MaxRows]
	}
	return &c
}
