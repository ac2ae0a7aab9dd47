package operatorpage

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/display"
)

// The console's forms: create a key (shown once), and a credential's own
// page with its settings, the client last seen, its pending
// confirmations and grants, and the forms that change its choice, revoke
// it (a required confirmation box: the page has no script) and revoke a
// grant. Every form is a POST with the session's CSRF token.

// CredentialPage is one credential's page.
type CredentialPage struct {
	Credential
	Origin string
	// Person is the person a user credential names (their e-mail).
	Person  string
	Pending []Confirmation
	// PendingMore says more pending confirmations were not read.
	PendingMore bool
	Grants      []Grant
	// User marks a person's credential: its OAuth grants are shown (the
	// MCP clients the person authorized), OAuthGrantsMore when there are
	// more than were read.
	User            bool
	OAuthGrants     []OAuthGrant
	OAuthGrantsMore bool
}

// OAuthGrant is one of a user's OAuth grants: an MCP client the person
// authorized.
type OAuthGrant struct {
	ID, Client, Resource, Status string
	CreatedAt, ExpiresAt         time.Time
}

// Choices are the choice select's options, in the order of countersign.Choice.
var Choices = [...]string{"refuse", "ask_person", "ask_agent", "run_without_asking"}

// choiceOptions are the choice select's options with current selected (a
// credential's page starts from its choice, so pressing Change without
// choosing changes nothing).
func choiceOptions(current string) string {
	var b strings.Builder
	for _, c := range Choices {
		b.WriteString(`<option value="` + c + `"`)
		if c == current {
			b.WriteString(" selected")
		}
		b.WriteString(">" + c + "</option>")
	}
	return b.String()
}

// newKey writes the key just created, shown this once.
func (v *view) newKey(b *strings.Builder) {
	if v.NewKey == "" {
		return
	}
	w := b.WriteString
	w("\n<div class=\"message\" role=\"status\"><p>The key of <code>")
	value(b, v.NewKeyFor)
	w("</code>, shown this once (only its SHA-256 is kept): copy it now.</p>\n<pre id=\"new-key\">")
	value(b, v.NewKey)
	w("</pre></div>")
}

// createForm writes the form that creates a key (under the credentials).
func (v *view) createForm(b *strings.Builder) {
	w := b.WriteString
	w("\n<h3 id=\"create\">Create a key</h3>\n")
	postForm(b, "/operator/credentials", v.CSRF)
	w("<div class=\"actions\"><label>Id <input type=\"text\" name=\"id\" id=\"new-id\" required maxlength=\"64\"></label><label>Choice <select name=\"choice\" id=\"new-choice\">" + choiceOptions("refuse") +
		"</select></label><label>Connections <input type=\"text\" name=\"connections\" placeholder=\"all\"></label><label><input type=\"checkbox\" name=\"read_only\" value=\"true\"> Read-only</label><button type=\"submit\" class=\"primary\" id=\"create-key\">Create</button></div></form>")
}

// credentialPage writes one credential's page.
func (v *view) credentialPage(b *strings.Builder) {
	d := v.Detail
	w := b.WriteString
	action := "/operator/credentials/" + display.NormalizeURL(d.ID)
	w("\n<h2 id=\"credential\">Credential <code>")
	value(b, d.ID)
	w("</code></h2>\n<div class=\"scroll\"><table><tbody>\n<tr><th>Choice</th><td id=\"choice\">")
	text(b, d.Choice)
	w("</td></tr>\n<tr><th>Read-only</th><td>")
	w(pick(d.ReadOnly, "yes", "no"))
	w("</td></tr>\n<tr><th>Role</th><td>")
	w(pick(d.Operator, "operator", "agent"))
	w("</td></tr>\n<tr><th>Origin</th><td>")
	text(b, d.Origin)
	w("</td></tr>")
	if d.Person != "" {
		w("\n<tr><th>Person</th><td>")
		value(b, d.Person)
		w("</td></tr>")
	}
	w("\n<tr><th>Connections</th><td>")
	value(b, d.Connections)
	w("</td></tr>\n<tr><th>Last client</th><td>")
	lastClient(b, d.Credential)
	w("</td></tr>")
	tableEnd(b)
	w("\n<h3>Change its choice</h3>\n")
	postForm(b, action, v.CSRF)
	w("<input type=\"hidden\" name=\"action\" value=\"change\"><div class=\"actions\"><label>Choice <select name=\"choice\" id=\"change-choice\">" + choiceOptions(d.Choice) +
		"</select></label><button type=\"submit\" class=\"primary\" id=\"change\">Change choice</button></div></form>\n<h3>Revoke it</h3>\n")
	postForm(b, action, v.CSRF)
	w("<input type=\"hidden\" name=\"action\" value=\"revoke\"><div class=\"actions\"><label><input type=\"checkbox\" name=\"confirm\" value=\"yes\" id=\"revoke-confirm\" required> Yes, revoke it: its key and tokens stop working at once</label><button type=\"submit\" class=\"secondary\" id=\"revoke\">Revoke</button></div></form>\n<h3 id=\"pending\">Pending confirmations</h3>")
	confirmationTable(b, d.Pending, false, "None pending.")
	if d.PendingMore {
		w("\n<p class=\"hint\">There are more pending confirmations than were read.</p>")
	}
	w("\n<h3 id=\"credential-grants\">Grants</h3>")
	grantTable(b, d.Grants, false, v.CSRF)
	if d.User {
		v.oauthGrants(b, d)
	}
}

// oauthGrants writes a user's OAuth grants, each active one with the form
// that revokes it behind a confirmation box.
func (v *view) oauthGrants(b *strings.Builder, d *CredentialPage) {
	w := b.WriteString
	w("\n<h3 id=\"oauth-grants\">OAuth grants</h3>\n<p class=\"hint\">The MCP clients this person authorized. Revoking one refuses its tokens from the next call; the person can authorize the client again.</p>")
	if len(d.OAuthGrants) == 0 {
		w("\n<p class=\"empty\">No OAuth grants.</p>")
		return
	}
	tableHead(b, "Id", "Client", "Resource", "Status", "Created", "Expires", "")
	for _, g := range d.OAuthGrants {
		w("\n<tr><td><code>")
		value(b, g.ID)
		w("</code></td><td>")
		value(b, g.Client)
		w("</td><td>")
		value(b, g.Resource)
		w("</td><td>")
		text(b, g.Status)
		w("</td><td>")
		text(b, when(g.CreatedAt))
		w("</td><td>")
		text(b, when(g.ExpiresAt))
		w("</td><td>")
		if g.Status == "active" {
			postForm(b, "/operator/oauth-grants/"+display.NormalizeURL(g.ID), v.CSRF)
			w("<input type=\"hidden\" name=\"credential\" value=\"")
			text(b, d.ID)
			w("\"><label><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> Yes, revoke it</label><button type=\"submit\" class=\"secondary\">Revoke</button></form>")
		}
		w("</td></tr>")
	}
	tableEnd(b)
	if d.OAuthGrantsMore {
		w("\n<p class=\"hint\">There are more OAuth grants than are shown: <code>GET /v1/operator/credentials/&lt;id&gt;/oauth-grants</code> lists them all.</p>")
	}
}

// lastClient writes the client last seen with a credential.
func lastClient(b *strings.Builder, c Credential) {
	w := b.WriteString
	if !c.HasClient {
		w("<span class=\"empty\">none seen</span>")
		return
	}
	w("<span class=\"said\">the agent says it is</span> “<i>")
	value(b, c.Client)
	w("</i>” <span class=\"said\">(its own words, not checked)</span> · ")
	w(pick(c.ClientCanAsk, "can ask", "cannot ask"))
	w(" · ")
	text(b, when(c.ClientSeen))
}

// boundDetail clips a credential's page as bound does the lists.
func boundDetail(d *CredentialPage) *CredentialPage {
	if d == nil {
		return nil
	}
	c := *d
	c.ID, c.Connections, c.Person = clip(c.ID, maxField), clip(c.Connections, maxText), clip(c.Person, maxField)
	c.Client = display.Clip(c.Client, display.AgentLimit)
	if len(c.Pending) > MaxRows {
		c.Pending = c.Pending[:MaxRows]
	}
	c.Grants = boundGrants(c.Grants)
	if len(c.OAuthGrants) > MaxRows {
		c.OAuthGrants = c.OAuthGrants[:MaxRows]
	}
	og := make([]OAuthGrant, len(c.OAuthGrants))
	for i, g := range c.OAuthGrants {
		g.ID, g.Client, g.Resource = clip(g.ID, maxField), display.Clip(g.Client, display.AgentLimit), clip(g.Resource, maxField)
		og[i] = g
	}
	c.OAuthGrants = og
	return &c
}

// ShadowPage is the policy trial's page: what the candidate policy
// (settings.json candidate_config) would have decided otherwise.
type ShadowPage struct {
	Candidate string
	// Digest names the candidate whose differences are counted; Older
	// counts those of earlier candidates, left out.
	Digest      string
	Differences int
	Older       int
	Truncated   bool
	Examples    []ShadowExample
}

// ShadowExample is one recorded difference.
type ShadowExample struct {
	At                                  time.Time
	Credential, Endpoint, Differs, Rule string
	Count                               int
}

// trialLink writes the dashboard's link to the policy trial.
func (v *view) trialLink(b *strings.Builder) {
	if v.Trial {
		b.WriteString("\n<p><a href=\"/operator/shadow\" id=\"trial\">Policy trial</a>: a candidate policy is decided beside the live one, never enforced.</p>")
	}
}

// shadowPage writes the policy trial's page.
func (v *view) shadowPage(b *strings.Builder) {
	d := v.Shadow
	w := b.WriteString
	w("\n<h2 id=\"shadow\">Policy trial</h2>\n<p class=\"hint\">Calls the candidate <code>")
	value(b, d.Candidate)
	w("</code>")
	if d.Digest != "" {
		w(" (<code>")
		value(b, d.Digest)
		w("</code>)")
	}
	w(" would have decided otherwise: ")
	w(strconv.Itoa(d.Differences))
	w(". The live policy decided them.</p>")
	if d.Older > 0 {
		w("\n<p class=\"hint\" id=\"older\">")
		w(strconv.Itoa(d.Older))
		w(" differences an earlier candidate made are left out.</p>")
	}
	if d.Truncated {
		w("\n<p class=\"hint\">More chains hold records than were read.</p>")
	}
	if len(d.Examples) == 0 {
		w("\n<p class=\"empty\">No differences recorded.</p>")
		return
	}
	tableHead(b, "When", "Credential", "Endpoint", "Live and candidate", "Candidate rule", "Calls")
	for _, e := range d.Examples {
		w("\n<tr><td>")
		text(b, when(e.At))
		w("</td><td>")
		value(b, e.Credential)
		w("</td><td><code>")
		value(b, e.Endpoint)
		w("</code></td><td>")
		value(b, e.Differs)
		w("</td><td>")
		value(b, e.Rule)
		w("</td><td>")
		w(strconv.Itoa(e.Count))
		w("</td></tr>")
	}
	tableEnd(b)
}

// boundShadow clips the trial's page as bound does the lists.
func boundShadow(d *ShadowPage) *ShadowPage {
	if d == nil {
		return nil
	}
	c := *d
	c.Candidate, c.Digest = clip(c.Candidate, maxField), clip(c.Digest, maxField)
	if len(c.Examples) > MaxRows {
		c.Examples = c.Examples[:MaxRows]
	}
	ex := make([]ShadowExample, len(c.Examples))
	for i, e := range c.Examples {
		e.Credential, e.Endpoint, e.Differs, e.Rule = clip(e.Credential, maxField), clip(e.Endpoint, 512), clip(e.Differs, 512), clip(e.Rule, 512)
		ex[i] = e
	}
	c.Examples = ex
	return &c
}
