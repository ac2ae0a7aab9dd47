package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/display"
	"github.com/countersign/countersign/shared/views"
)

// slackMessage is a Slack-compatible message (incoming webhooks and
// chat.postMessage): text is the notification fallback, blocks the layout.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type      string       `json:"type"`
	Text      *slackText   `json:"text,omitempty"`
	Accessory *slackButton `json:"accessory,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackButton struct {
	Type     string    `json:"type"`
	Text     slackText `json:"text"`
	URL      string    `json:"url"`
	ActionID string    `json:"action_id"`
	Style    string    `json:"style,omitempty"`
}

// Slack limits: a section's text is at most 3000 characters.
const (
	maxSlackOps     = 10
	maxSlackSection = 2900
)

// slackMessageFor renders ev. A requested event gets one section per link
// with a "Review and approve" button to it (a channel's event holds at most
// its own link); later events a one-line section. The link is only on the
// button (its url field takes it verbatim); the top-level text, the
// notification fallback, stays short. Text that came from agents
// is escaped, so it cannot add links or mentions.
func slackMessageFor(ev Event) slackMessage {
	conf := ev.Confirmation
	id := slackEscape(conf.ID)
	var text, summary string // text: the plain notification; summary: the section's mrkdwn
	switch ev.Type {
	case TypeRequested:
		title := "Approve this operation?"
		if n := len(conf.Operations) + conf.OmittedOperations; n != 1 {
			title = fmt.Sprintf("Approve %d operations?", n)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "*%s*\n", title)
		for i, op := range conf.Operations {
			if i == maxSlackOps {
				fmt.Fprintf(&b, "and %d more\n", len(conf.Operations)-maxSlackOps+conf.OmittedOperations)
				break
			}
			fmt.Fprintf(&b, "• `%s %s` on %s\n", slackCode(op.Method), slackCode(op.Path), slackEscape(op.Connection))
			if op.Summary != "" {
				fmt.Fprintf(&b, "   %s\n", slackEscape(op.Summary))
			}
		}
		if conf.Reason != "" {
			fmt.Fprintf(&b, "%s\n", slackEscape(conf.Reason))
		}
		fmt.Fprintf(&b, "%s, expires %s", id, conf.ExpiresAt.UTC().Format(time.RFC3339))
		text, summary = title+" "+id, b.String()
	case TypeApprovalCounted:
		progress := progress(conf.Approvals, slackEscape)
		text = fmt.Sprintf("%s: %s", id, orDefault(progress, "approval counted"))
		summary = fmt.Sprintf("Confirmation %s: %s. It waits for the other approvals.", id, orDefault(progress, "an approval was counted"))
	case TypeDecided:
		text = fmt.Sprintf("%s %s", id, slackEscape(orDefault(ev.Decision, "decided")))
		summary = fmt.Sprintf("Confirmation %s was %s%s", id, slackEscape(orDefault(ev.Decision, "decided")), slackEscape(byWhom(conf.DecidedBy)))
		if conf.Approvals != nil {
			summary += ": " + progress(conf.Approvals, slackEscape)
		}
		summary += "."
	case TypeExpired:
		text = id + " expired"
		summary = fmt.Sprintf("Confirmation %s expired before anyone decided.", id)
	case TypeExecuted:
		text = fmt.Sprintf("%s executed: %s", id, slackEscape(orDefault(ev.Status, "done")))
		summary = fmt.Sprintf("Confirmation %s ran: %s.", id, slackEscape(orDefault(ev.Status, "done")))
	default:
		text = id + ": " + slackEscape(ev.Type)
		summary = text
	}
	if len(summary) > maxSlackSection {
		summary = truncateUTF8(summary, maxSlackSection) + "…"
	}
	msg := slackMessage{Text: text}
	if ev.Type != TypeRequested || len(ev.Links) == 0 {
		msg.Blocks = []slackBlock{{Type: "section", Text: &slackText{Type: "mrkdwn", Text: summary}}}
		return msg
	}
	for _, l := range ev.Links {
		msg.Blocks = append(msg.Blocks, slackBlock{
			Type: "section",
			Text: &slackText{Type: "mrkdwn", Text: summary},
			Accessory: &slackButton{
				Type:     "button",
				Text:     slackText{Type: "plain_text", Text: "Review and approve"},
				URL:      l.URL,
				ActionID: "countersign_review",
				Style:    "primary",
			},
		})
	}
	return msg
}

// slackEscape escapes the three characters Slack's mrkdwn treats as markup
// (links, mentions) and shows hidden characters (controls, line breaks,
// bidi and other format characters) as escapes (display.Text), so a value
// reads as its bytes do and stays on its line.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(display.Text(s))
}

// slackCode escapes s for an inline code span: a backtick would close it.
func slackCode(s string) string {
	return strings.ReplaceAll(slackEscape(strings.ReplaceAll(s, "\n", " ")), "`", "'")
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// byWhom names who decided, for a follow-up: " by <person>" (their
// label: e-mail, else name, else subject at the issuer; " with a
// passkey" when they proved it with one) or " through the
// <channel> link"; empty when nobody is named. It is not escaped: the
// caller shows it the way its channel does.
func byWhom(d *views.Decider) string {
	switch {
	case d == nil:
		return ""
	case d.Kind == "person" && d.Method == countersign.MethodPasskey:
		return " by " + clipJSON(personLabel(*d), maxFieldCost) + " with a passkey"
	case d.Kind == "person":
		return " by " + clipJSON(personLabel(*d), maxFieldCost)
	case d.Channel != "":
		return " through the " + clipJSON(d.Channel, maxFieldCost) + " link"
	}
	return ""
}
