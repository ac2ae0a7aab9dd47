package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func emailEvent() Event {
	ev := requested()
	ev.Links = append(ev.Links, EventLink{Approver: "email", URL: "https://api.example/approve/cf_123?a=email&exp=1796040600&kid=k1&sig=EMAIL"})
	return ev
}

func TestEmailFor(t *testing.T) {
	m := EmailFor(emailEvent(), "email", "Acme", now)
	if want := "Approve DELETE /contacts/12 on crm? (Acme)"; m.Subject != want {
		t.Errorf("subject %q, want %q", m.Subject, want)
	}
	want := `Acme: an agent asks to run 1 operation that needs your approval.

  DELETE /contacts/12 on crm
    arguments: {"path":{"id":"12"},"query":{},"body":null}

Why: DELETE /contacts/{id} requires confirmation
Asked with the credential: chat-user

Review it, then approve or reject (opening the page changes nothing; only its buttons decide):
https://api.example/approve/cf_123?a=email&exp=1796040600&kid=k1&sig=EMAIL

The request expires at 2026-11-30 12:10:00 UTC (in 10 minutes); after that nothing can run.
Confirmation cf_123
`
	if m.Body != want {
		t.Errorf("body:\n%s\nwant:\n%s", m.Body, want)
	}
	for _, other := range []string{"sig=OPS", "sig=CONSOLE"} {
		if strings.Contains(m.Body, other) {
			t.Errorf("the mail carries another approver's link (%s)", other)
		}
	}
}

func TestEmailForBatchAndHostileValues(t *testing.T) {
	ev := emailEvent()
	op := ev.Confirmation.Operations[0]
	op.Path = "/contacts/12\r\nBcc: victim@example.com\x1b[31m"
	op.Args = json.RawMessage(`{"body": "` + strings.Repeat("x", 10000) + `"}`)
	ev.Confirmation.Operations = nil
	for range 14 {
		ev.Confirmation.Operations = append(ev.Confirmation.Operations, op)
	}
	ev.Confirmation.OmittedOperations = 2
	m := EmailFor(ev, "email", "Ünïcode Wörkspace "+strings.Repeat("w", 200), now.Add(9*time.Minute+40*time.Second))
	if !strings.HasPrefix(m.Subject, "Approve 16 operations? (?n?code W?rkspace ") || len(m.Subject) >= 100 {
		t.Errorf("subject %q (%d characters): want ASCII, under 100", m.Subject, len(m.Subject))
	}
	for _, r := range m.Subject {
		if r < 0x20 || r > 0x7e {
			t.Fatalf("subject %q holds %q", m.Subject, r)
		}
	}
	for _, want := range []string{"to run 16 operations that need your approval", "... and 6 more (listed on the approval page)", "(in 20 seconds)", "truncated"} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	if strings.Contains(m.Body, "\r") || strings.Contains(m.Body, "\x1b") || strings.Contains(m.Body, "\nBcc:") {
		t.Error("a control character from the agent reached the mail")
	}
	if len(m.Body) > 40<<10 {
		t.Errorf("body is %d bytes", len(m.Body))
	}
	if n := strings.Count(m.Body, "    arguments:"); n != 10 {
		t.Errorf("%d operations listed with arguments, want 10", n)
	}
}

func TestEmailWithoutItsLink(t *testing.T) {
	m := EmailFor(requested(), "email", "", now.Add(time.Hour))
	if !strings.Contains(m.Body, "No approval link was made for this address") || strings.Contains(m.Body, "(in ") {
		t.Errorf("body:\n%s", m.Body)
	}
	if !strings.HasSuffix(m.Subject, "(countersign)") {
		t.Errorf("subject %q, want the default workspace", m.Subject)
	}
}

// picky takes only requested events.
type picky struct{ fakeChannel }

func (p *picky) Wants(typ string) bool { return typ == TypeRequested }

func TestDispatcherHonoursFilter(t *testing.T) {
	p := &picky{fakeChannel: fakeChannel{name: "email"}}
	all := &fakeChannel{name: "ops"}
	d := NewDispatcher([]Channel{p, all}, nil)
	for _, typ := range []string{TypeRequested, TypeDecided, TypeExpired, TypeExecuted} {
		ev := requested()
		ev.Type = typ
		if err := d.NotifyWait(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(p.events()); got != 1 {
		t.Errorf("the filtering channel got %d events, want the request only", got)
	}
	if got := len(all.events()); got != 4 {
		t.Errorf("the other channel got %d events, want 4", got)
	}
}
