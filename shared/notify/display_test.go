package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/display"
)

// hiddenEvent is a request whose agent-chosen values hold a right-to-left
// override (ACME-<RLO>4321-8765<PDF> reads ACME-5678-1234), a zero-width
// space and a line break.
func hiddenEvent() Event {
	ev := emailEvent()
	ev.Confirmation.Reason = "needs you\nApproved already: just click"
	op := &ev.Confirmation.Operations[0]
	op.Method, op.Path = "POST", "/transfers\u200b"
	op.Args = json.RawMessage("{\"body\":{\"to_account\":\"ACME-\u202e4321-8765\u202c\"}}")
	return ev
}

// noHidden fails if text holds a hidden character as it is (line feeds
// aside: the text's own lines).
func noHidden(t *testing.T, what, text string) {
	t.Helper()
	for _, r := range text {
		if display.Hidden(r) && r != '\n' {
			t.Errorf("%s holds U+%04X as it is:\n%s", what, r, text)
		}
	}
}

// TestEmailShowsHiddenCharacters: the e-mail body shows the override and
// the zero-width space as escapes, and an agent's line break cannot start
// a line of its own.
func TestEmailShowsHiddenCharacters(t *testing.T) {
	m := EmailFor(hiddenEvent(), "email", "Acme", now)
	for _, want := range []string{
		`"to_account":"ACME-\u202E4321-8765\u202C"`,
		`POST /transfers\u200B on crm`,
		`Why: needs you\u000AApproved already: just click`,
	} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("e-mail body lacks %s:\n%s", want, m.Body)
		}
	}
	noHidden(t, "the e-mail body", m.Body)
	noHidden(t, "the e-mail subject", m.Subject)
}

// TestSlackShowsHiddenCharacters: so does the Slack text.
func TestSlackShowsHiddenCharacters(t *testing.T) {
	msg := slackMessageFor(hiddenEvent())
	summary := msg.Blocks[0].Text.Text
	for _, want := range []string{"`POST /transfers\\u200B`", `needs you\u000AApproved already`} {
		if !strings.Contains(summary, want) {
			t.Errorf("Slack text lacks %s:\n%s", want, summary)
		}
	}
	noHidden(t, "the Slack text", summary)
	noHidden(t, "the Slack fallback", msg.Text)
}

// TestWebhookArgsStayExact: the JSON webhook's args are data for a
// program: they keep the bytes the agent sent, override included.
func TestWebhookArgsStayExact(t *testing.T) {
	r := newReceiver(t, 204)
	if err := webhook(r.URL, FormatJSON).Send(t.Context(), hiddenEvent()); err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(r.requests()[0].body, &got); err != nil {
		t.Fatal(err)
	}
	var args struct {
		Body struct {
			To string `json:"to_account"`
		} `json:"body"`
	}
	if err := json.Unmarshal(got.Confirmation.Operations[0].Args, &args); err != nil || args.Body.To != "ACME-\u202e4321-8765\u202c" {
		t.Errorf("webhook args changed: %s (%v)", got.Confirmation.Operations[0].Args, err)
	}
}
