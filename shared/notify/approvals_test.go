package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/views"
)

// bidiName is a person whose name, from the identity provider, holds a
// right-to-left override and a zero-width space: "Eve<RLO>nimda<PDF>"
// would read "Eve admin".
var bidiName = views.Decider{Kind: "person", Issuer: "https://idp.example.com", Subject: "eve", Name: "Eve\u202enimda\u202c\u200b<!here>", Channel: "ops"}

var ana = views.Decider{Kind: "person", Issuer: "https://idp.example.com", Subject: "ana", Email: "ana@example.com", Name: "Ana", Channel: "ops"}

// countedEvent is the first of two approvals, by bidiName.
func countedEvent() Event {
	ev := requested()
	ev.Type, ev.Links = TypeApprovalCounted, nil
	ev.Confirmation.Approvals = &views.Approvals{Required: 2, Received: 1, By: []views.Decider{bidiName}}
	return ev
}

// TestApprovalsOf: a record's quorum as events carry it, the shape GET
// /v1/confirmations/<id> shows; nil without a quorum.
func TestApprovalsOf(t *testing.T) {
	c := &countersign.Confirmation{ID: "cf_1"}
	if views.ApprovalsOf(c) != nil || ConfirmationOf(c).Approvals != nil {
		t.Errorf("a confirmation one approval decides has approvals %+v", views.ApprovalsOf(c))
	}
	c.Required = 2
	c.Approvals = []countersign.Approval{{Person: countersign.Person{Issuer: "https://idp.example.com", Subject: "ana", Email: "ana@example.com"}, Channel: "ops"}}
	b, _ := json.Marshal(ConfirmationOf(c).Approvals)
	if want := `{"required":2,"received":1,"by":[{"kind":"person","issuer":"https://idp.example.com","subject":"ana","email":"ana@example.com","channel":"ops"}]}`; string(b) != want {
		t.Errorf("approvals %s\nwant %s", b, want)
	}
	c.Approvals = nil
	if b, _ := json.Marshal(views.ApprovalsOf(c)); string(b) != `{"required":2,"received":0,"by":[]}` {
		t.Errorf("no approvals yet: %s", b)
	}
}

// TestSlackApprovalCounted: "1 of 2 approvals", naming who approved with
// their name escaped: the override and the zero-width space show as
// escapes, and the mention cannot ping.
func TestSlackApprovalCounted(t *testing.T) {
	msg := slackMessageFor(countedEvent())
	summary := msg.Blocks[0].Text.Text
	want := `Confirmation cf_123: 1 of 2 approvals (by Eve\u202Enimda\u202C\u200B&lt;!here&gt;). It waits for the other approvals.`
	if summary != want {
		t.Errorf("summary %q\nwant    %q", summary, want)
	}
	if !strings.HasPrefix(msg.Text, "cf_123: 1 of 2 approvals (by Eve\\u202E") || strings.Contains(msg.Text, "<!here>") {
		t.Errorf("fallback %q", msg.Text)
	}
	noHidden(t, "the Slack text", summary)
	noHidden(t, "the Slack fallback", msg.Text)
}

// TestSlackDecidedQuorum: the decision of a quorum names who decided and
// every approval counted.
func TestSlackDecidedQuorum(t *testing.T) {
	ev := countedEvent()
	ev.Type, ev.Decision = TypeDecided, "approved"
	ev.Confirmation.DecidedBy = &ana
	ev.Confirmation.Approvals = &views.Approvals{Required: 2, Received: 2, By: []views.Decider{bidiName, ana}}
	summary := slackMessageFor(ev).Blocks[0].Text.Text
	want := `Confirmation cf_123 was approved by ana@example.com: 2 of 2 approvals (by Eve\u202Enimda\u202C\u200B&lt;!here&gt;, ana@example.com).`
	if summary != want {
		t.Errorf("summary %q\nwant    %q", summary, want)
	}
}

// TestPersonLabel: a person is named by their e-mail, else their name,
// else their subject at the issuer.
func TestPersonLabel(t *testing.T) {
	for _, c := range []struct {
		d    views.Decider
		want string
	}{
		{ana, " by ana@example.com"},
		{views.Decider{Kind: "person", Issuer: "https://idp", Subject: "s1", Name: "Bo"}, " by Bo"},
		{views.Decider{Kind: "person", Issuer: "https://idp", Subject: "s1"}, " by s1 at https://idp"},
		{views.Decider{Kind: "channel", Channel: "ops"}, " through the ops link"},
		{views.Decider{Kind: "person", Issuer: "https://idp", Subject: "s1", Name: "Bo", Method: "passkey"}, " by Bo with a passkey"},
	} {
		if got := byWhom(&c.d); got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}

// TestEmailFollowUps: the e-mail follow-ups say the count and who
// approved, and who decided, with hidden characters shown as escapes; the
// subject names no person. Expiries and executions get none.
func TestEmailFollowUps(t *testing.T) {
	m, ok := FollowUpFor(countedEvent(), "Acme")
	if !ok || m.Subject != "1 of 2 approvals: DELETE /contacts/12 on crm (Acme)" {
		t.Errorf("counted: %v, subject %q", ok, m.Subject)
	}
	if want := `Acme: an approval of confirmation cf_123 was counted: 1 of 2 approvals (by Eve\u202Enimda\u202C\u200B<!here>).`; !strings.Contains(m.Body, want) {
		t.Errorf("counted body:\n%s\nwant it to hold %s", m.Body, want)
	}
	noHidden(t, "the follow-up", m.Body)

	ev := countedEvent()
	ev.Type, ev.Decision = TypeDecided, "approved"
	ev.Confirmation.DecidedBy = &bidiName
	ev.Confirmation.Approvals = &views.Approvals{Required: 2, Received: 2, By: []views.Decider{ana, bidiName}}
	m, ok = FollowUpFor(ev, "Acme")
	if !ok || m.Subject != "Approved: DELETE /contacts/12 on crm (Acme)" {
		t.Errorf("decided: %v, subject %q", ok, m.Subject)
	}
	if want := `confirmation cf_123 was approved by Eve\u202Enimda\u202C\u200B<!here>.` + "\n2 of 2 approvals (by ana@example.com, Eve"; !strings.Contains(m.Body, want) {
		t.Errorf("decided body:\n%s\nwant it to hold %s", m.Body, want)
	}
	noHidden(t, "the follow-up", m.Body)

	ev.Confirmation.Approvals, ev.Confirmation.DecidedBy = nil, &views.Decider{Kind: "channel", Channel: "email"}
	if m, _ = FollowUpFor(ev, "Acme"); !strings.Contains(m.Body, "was approved through the email link.") {
		t.Errorf("without sign-in:\n%s", m.Body)
	}
	for _, typ := range []string{TypeRequested, TypeExpired, TypeExecuted} {
		ev.Type = typ
		if _, ok := FollowUpFor(ev, "Acme"); ok {
			t.Errorf("a follow-up for %s", typ)
		}
	}
}

// TestConsoleApprovalCounted: the console line says the count, its name
// shown as escapes.
func TestConsoleApprovalCounted(t *testing.T) {
	var out bytes.Buffer
	if err := (&Console{W: &out}).Send(t.Context(), countedEvent()); err != nil {
		t.Fatal(err)
	}
	if want := "countersign: cf_123: 1 of 2 approvals (by Eve\\u202Enimda\\u202C\\u200B<!here>)\n"; out.String() != want {
		t.Errorf("console %q\nwant    %q", out.String(), want)
	}
}

// TestWebhookApprovalCounted: the JSON webhook carries the count with the
// people as the provider said them (data for a program), each field
// bounded.
func TestWebhookApprovalCounted(t *testing.T) {
	r := newReceiver(t, 204)
	ev := countedEvent()
	long := ana
	long.Name = strings.Repeat("n", 10000)
	ev.Confirmation.Approvals.By = append(ev.Confirmation.Approvals.By, long)
	if err := webhook(r.URL, FormatJSON).Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(r.requests()[0].body, &got); err != nil {
		t.Fatal(err)
	}
	a := got.Confirmation.Approvals
	if got.Type != TypeApprovalCounted || a == nil || a.Required != 2 || a.Received != 1 || len(a.By) != 2 ||
		a.By[0] != bidiName || len(a.By[1].Name) > maxFieldCost || !strings.HasSuffix(a.By[1].Name, truncatedMark) {
		t.Errorf("webhook event %+v", got)
	}
}
