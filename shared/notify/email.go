package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/jsonview"
	"github.com/countersign/countersign/shared/views"
)

// Limits of an e-mail approval request: SNS refuses a subject of 100
// characters or more, and a message over 256 KB; an inbox wants far less.
const (
	maxSubject    = 99
	maxEmailOps   = 10
	maxEmailArgs  = 2 << 10
	maxEmailBytes = 64 << 10
)

// Email is an approval request as an e-mail: a one-line subject and a
// plain-text body.
type Email struct {
	Subject string
	Body    string
}

// EmailFor renders a requested event for an e-mail approver: the subject
// names the operation (or how many) and the workspace; the body lists the
// operations with their arguments, the reason, the signed link and when
// it expires. Only ev's links addressed to approver are shown. now dates
// "in 10 minutes". Values that came from agents are clipped and show
// hidden characters (controls, line breaks, bidi and other format
// characters) as escapes (display.Text), so they read as their bytes do,
// cannot forge lines and cannot grow the mail.
func EmailFor(ev Event, approver, workspace string, now time.Time) Email {
	ev = ownLinks(ev, approver)
	conf := ev.Confirmation
	n := len(conf.Operations) + conf.OmittedOperations
	what := fmt.Sprintf("%d operations", n)
	if n == 1 && len(conf.Operations) == 1 {
		op := conf.Operations[0]
		what = fmt.Sprintf("%s %s on %s", op.Method, op.Path, op.Connection)
	}
	ws := orDefault(workspace, "countersign")
	subject := subjectText(fmt.Sprintf("Approve %s? (%s)", what, ws))

	verb := "need"
	if n == 1 {
		verb = "needs"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: an agent asks to run %s that %s your approval.\n\n", clean(clipJSON(ws, maxFieldCost)), plural(n, "operation"), verb)
	for i, op := range conf.Operations {
		if i == maxEmailOps {
			fmt.Fprintf(&b, "  ... and %d more (listed on the approval page)\n\n", n-maxEmailOps)
			break
		}
		fmt.Fprintf(&b, "  %s %s on %s\n", clean(clipJSON(op.Method, 64)), clean(clipJSON(op.Path, 512)), clean(clipJSON(op.Connection, 128)))
		if op.Summary != "" {
			fmt.Fprintf(&b, "    now: %s\n", clean(clipJSON(op.Summary, maxReasonCost)))
		}
		if op.Args != nil {
			args, _ := jsonview.Compact(op.Args, &jsonview.Limits{MaxBytes: maxEmailArgs, Visible: true})
			fmt.Fprintf(&b, "    arguments: %s\n", clean(string(args)))
		}
		b.WriteString("\n")
	}
	if conf.Reason != "" {
		fmt.Fprintf(&b, "Why: %s\n", clean(clipJSON(conf.Reason, maxReasonCost)))
	}
	if conf.Credential != "" {
		fmt.Fprintf(&b, "Asked with the credential: %s\n", clean(clipJSON(conf.Credential, maxFieldCost)))
	}
	b.WriteString("\n")
	if len(ev.Links) == 0 {
		b.WriteString("(No approval link was made for this address: ask the operator.)\n\n")
	}
	for _, l := range ev.Links {
		b.WriteString("Review it, then approve or reject (opening the page changes nothing; only its buttons decide):\n")
		b.WriteString(clean(l.URL) + "\n\n")
	}
	exp := conf.ExpiresAt.UTC()
	fmt.Fprintf(&b, "The request expires at %s", exp.Format("2006-01-02 15:04:05 UTC"))
	if left := exp.Sub(now); left > 0 {
		fmt.Fprintf(&b, " (in %s)", roughly(left))
	}
	fmt.Fprintf(&b, "; after that nothing can run.\nConfirmation %s\n", clean(clipJSON(conf.ID, maxFieldCost)))
	body := b.String()
	if len(body) > maxEmailBytes {
		body = truncateUTF8(body, maxEmailBytes) + "\n… (truncated)\n"
	}
	return Email{Subject: subject, Body: body}
}

// subjectText makes s an SNS subject: printable ASCII only (anything else
// becomes '?'), starting with a letter, digit or punctuation, under 100
// characters.
func subjectText(s string) string {
	b := []byte(strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s))
	if len(b) > maxSubject {
		b = append(b[:maxSubject-3], "..."...)
	}
	return strings.TrimLeft(string(b), " ")
}

// roughly says a duration the way a person reads it: "10 minutes",
// "45 seconds".
func roughly(d time.Duration) string {
	if d >= time.Minute {
		return plural(int(d.Round(time.Minute)/time.Minute), "minute")
	}
	return plural(int(d.Round(time.Second)/time.Second), "second")
}

// FollowUpFor renders what became of a request, for the e-mail approvers
// who were asked: a counted approval of a quorum ("1 of 2 approvals",
// naming who approved) or the decision, naming who decided: the person
// signed in (their e-mail, else name, else subject), else the channel
// whose link was used. ok is false for events that get no follow-up
// (requests have EmailFor; expiries and executions are on the webhooks
// and the status route). Values are clipped and show hidden characters
// as escapes (display.Text), as in EmailFor.
func FollowUpFor(ev Event, workspace string) (m Email, ok bool) {
	conf := ev.Confirmation
	ws := orDefault(workspace, "countersign")
	n := len(conf.Operations) + conf.OmittedOperations
	what := plural(n, "operation")
	if n == 1 && len(conf.Operations) == 1 {
		op := conf.Operations[0]
		what = fmt.Sprintf("%s %s on %s", op.Method, op.Path, op.Connection)
	}
	id := clean(clipJSON(conf.ID, maxFieldCost))
	progress := progress(conf.Approvals, clean)
	var b strings.Builder
	switch ev.Type {
	case TypeApprovalCounted:
		received, required := counted(conf.Approvals)
		m.Subject = subjectText(fmt.Sprintf("%d of %d approvals: %s (%s)", received, required, what, ws))
		fmt.Fprintf(&b, "%s: an approval of confirmation %s was counted: %s.\n", clean(clipJSON(ws, maxFieldCost)), id, orDefault(progress, "approval counted"))
		b.WriteString("It stays pending until the other approvals are in; nothing runs before.\n")
	case TypeDecided:
		decision := orDefault(clipJSON(ev.Decision, maxFieldCost), "decided")
		m.Subject = subjectText(fmt.Sprintf("%s: %s (%s)", upperFirst(decision), what, ws))
		fmt.Fprintf(&b, "%s: confirmation %s was %s%s.\n", clean(clipJSON(ws, maxFieldCost)), id, clean(decision), clean(byWhom(conf.DecidedBy)))
		if progress != "" {
			fmt.Fprintf(&b, "%s.\n", progress)
		}
	default:
		return Email{}, false
	}
	b.WriteString("\n")
	for i, op := range conf.Operations {
		if i == maxEmailOps {
			fmt.Fprintf(&b, "  ... and %d more\n", n-maxEmailOps)
			break
		}
		fmt.Fprintf(&b, "  %s %s on %s\n", clean(clipJSON(op.Method, 64)), clean(clipJSON(op.Path, 512)), clean(clipJSON(op.Connection, 128)))
	}
	m.Body = b.String()
	return m, true
}

// counted is a quorum's count and its required approvals, 0 and 0 for none.
func counted(a *views.Approvals) (received, required int) {
	if a == nil {
		return 0, 0
	}
	return a.Received, a.Required
}

// upperFirst capitalises an ASCII first letter: "approved" → "Approved".
func upperFirst(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
