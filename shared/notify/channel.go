package notify

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/shared/display"
)

// Channel delivers events to one approver.
type Channel interface {
	// Name is the approver name put in the channel's links (a=).
	Name() string
	// Send delivers ev, retrying as the channel sees fit, until it succeeds,
	// fails for good or ctx ends.
	Send(ctx context.Context, ev Event) error
}

// Filter is implemented by a channel that takes only some events (the
// e-mail approver takes only requests); the dispatcher sends it only those.
type Filter interface {
	Wants(eventType string) bool
}

// wants reports whether ch takes events of type typ.
func wants(ch Channel, typ string) bool {
	f, ok := ch.(Filter)
	return !ok || f.Wants(typ)
}

var (
	_ Channel = (*Console)(nil)
	_ Channel = (*Webhook)(nil)
)

// Console prints events for a person watching the local stack's output. A
// requested event gives a line with the id, the expiry and the operations,
// then the approval link alone on the next line, easy to copy; later events
// give one line. It is safe for concurrent use; use it through a pointer.
type Console struct {
	// W receives the output; nil means os.Stdout.
	W io.Writer

	mu sync.Mutex
}

// Name returns "console".
func (c *Console) Name() string { return "console" }

// maxConsoleOps is how many operations a requested line lists before "and N more".
const maxConsoleOps = 3

// Send prints ev. Values that came from agents are stripped of control
// characters, so they cannot move the cursor or forge lines.
func (c *Console) Send(ctx context.Context, ev Event) error {
	ev = ownLinks(ev, c.Name())
	conf := ev.Confirmation
	var b strings.Builder
	switch ev.Type {
	case TypeRequested:
		fmt.Fprintf(&b, "countersign: %s needs approval (%s), expires %s: %s\n",
			clean(clipJSON(conf.ID, maxFieldCost)), plural(len(conf.Operations), "operation"),
			conf.ExpiresAt.UTC().Format(time.RFC3339), opsSummary(conf.Operations, maxConsoleOps))
		if len(ev.Links) == 0 {
			b.WriteString("  (no approval link for the console)\n")
		}
		for _, l := range ev.Links {
			b.WriteString(clean(l.URL) + "\n")
		}
	case TypeApprovalCounted:
		fmt.Fprintf(&b, "countersign: %s: %s\n", clean(conf.ID), orDefault(progress(conf.Approvals, clean), "approval counted"))
	case TypeDecided:
		fmt.Fprintf(&b, "countersign: %s %s%s\n", clean(conf.ID), orDefault(clean(ev.Decision), "decided"), clean(byWhom(conf.DecidedBy)))
	case TypeExpired:
		fmt.Fprintf(&b, "countersign: %s expired\n", clean(conf.ID))
	case TypeExecuted:
		fmt.Fprintf(&b, "countersign: %s executed: %s\n", clean(conf.ID), orDefault(clean(ev.Status), "done"))
	default:
		fmt.Fprintf(&b, "countersign: %s: %s\n", clean(conf.ID), clean(ev.Type))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := c.W
	if w == nil {
		w = os.Stdout
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// opsSummary lists up to max operations as "DELETE /contacts/12 (crm)".
func opsSummary(ops []EventOperation, max int) string {
	if len(ops) == 0 {
		return "no operations"
	}
	parts := make([]string, 0, min(len(ops), max)+1)
	for i, op := range ops {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ops)-max))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", clean(clipJSON(op.Method, 64)), clean(clipJSON(op.Path, 512)), clean(clipJSON(op.Connection, 128))))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clean shows a value on one line as its bytes read: control characters
// (terminal escapes, newlines), bidi and other format characters become
// visible escapes (display.Text).
func clean(s string) string { return display.Text(s) }
