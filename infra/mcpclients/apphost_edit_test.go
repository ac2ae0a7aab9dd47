package mcpclients

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/shared/mcpapi"
)

// editableDemoConfig is the demo configuration (../config) with the
// payments endpoint's amount and recipient editable by the approver.
func editableDemoConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("../config", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../config", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "connections", "crm", "policy.json")
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	const escalate = `"escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}]}`
	if !strings.Contains(string(b), escalate) {
		t.Fatalf("the demo's POST /payments is not as this test expects:\n%s", b)
	}
	b = []byte(strings.Replace(string(b), escalate,
		`"escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}], "approval": {"editable": ["body.amount", "body.to"]}}`, 1))
	if err := os.WriteFile(policy, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cardEditInAppBridge: a person edits the payment's amount in the card, in
// the official host. The card offers the amount as a number input holding
// the agent's 900; typed 20000 (over the review threshold), Approve is
// refused with edit_escalated, said on the card, and nothing runs; the
// card keeps its token and, typed 500, Approve runs the payment once with
// 500; the card and the model's message say it was edited and what ran.
func cardEditInAppBridge(t *testing.T, ctx context.Context, bundle []byte, cardURL string) {
	e := startStack(t, func(o *stack.Options) { o.ConfigDir = editableDemoConfig(t) })
	s := appsSession(t, e)
	paused, err := forward(s, &mcp.CallToolParams{Name: "post_payments",
		Arguments: map[string]any{"body": map[string]any{"amount": 900, "currency": "EUR", "to": "acct_7"}}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := paused.StructuredContent.(map[string]any)
	id, _ := sc["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("post_payments did not pause: %+v", paused)
	}
	host, calls := newAppHost(t, s, bundle, id)

	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var frames []*chromedp.Node
	in := func(expr string) chromedp.Action[string] {
		return func(ctx context.Context, tg *chromedp.Target) (string, error) {
			return chromedp.Poll[string](expr, chromedp.WithPollingInFrame(frames[0]), chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
		}
	}
	inFrame := func(a func(...chromedp.QueryOption) chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			return a(chromedp.FromNode(frames[0]))(ctx, tg)
		}
	}
	const amount = `input.edit-input[type=number]`
	clearAmount := inFrame(func(o ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
		return chromedp.SetValue(chromedp.CSS(amount), "", o...)
	})
	typeAmount := func(v string) chromedp.Action[chromedp.Void] {
		return inFrame(func(o ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
			return chromedp.SendKeys(chromedp.CSS(amount), v, o...)
		})
	}
	approve := inFrame(func(o ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
		return chromedp.Click(chromedp.CSS("#approve"), o...)
	})
	var offered, label, refused, outcome, logged string
	steps := []struct {
		what string
		a    chromedp.Action[chromedp.Void]
	}{
		{"open the host", chromedp.Navigate(host.URL + "/?card=" + url.QueryEscape(cardURL+"/card"))},
		{"the bridge is initialized", chromedp.Poll[chromedp.Void](`window.hostLog && (window.hostLog.initialized || window.hostLog.errors.length > 0)`)},
		{"the card's iframe", into(&frames, chromedp.Nodes("iframe#card"))},
		{"the card offers the amount", into(&offered, in(`!document.getElementById("actions").hidden && document.querySelector("`+amount+`") && document.querySelector("`+amount+`").value`))},
		{"its label", into(&label, in(`document.querySelector(".edit label").innerText`))},
		{"clear the amount", clearAmount},
		{"type 20000", typeAmount("20000")},
		{"approve over the threshold", approve},
		{"the card says it was refused", into(&refused, in(`document.getElementById("message").innerText.includes("edit_escalated") && !document.getElementById("approve").disabled && document.getElementById("message").innerText`))},
		{"clear the amount again", clearAmount},
		{"type 500", typeAmount("500")},
		{"approve with 500", approve},
		{"the bridge answered the message", chromedp.Poll[chromedp.Void](`window.hostLog.answered.length > 0`)},
		{"the card says what ran", into(&outcome, in(`document.getElementById("actions").hidden && Array.from(document.querySelectorAll("p.state")).map(function (p) { return p.innerText; }).join("|")`))},
		{"the host's log", into(&logged, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`))},
	}
	for _, st := range steps {
		if err := chromedp.Do(sctx, st.a); err != nil {
			var l string
			_ = chromedp.Do(ctx, into(&l, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`)))
			t.Fatalf("%s: %v\nhost log: %s", st.what, err, l)
		}
		if st.what == "the card's iframe" && len(frames) != 1 {
			t.Fatalf("%d card iframes", len(frames))
		}
	}
	t.Logf("offered %q (%s); refused: %q; outcome: %q", offered, label, refused, outcome)
	if offered != "900" || label != "body.amount" {
		t.Errorf("the card offers %q labelled %q, want 900 labelled body.amount", offered, label)
	}
	if !strings.Contains(outcome, "Edited before approving: body.amount 900 → 500") || !strings.Contains(outcome, "ran: the upstream answered 201") {
		t.Errorf("the card says %q", outcome)
	}
	var log hostLog
	if err := json.Unmarshal([]byte(logged), &log); err != nil {
		t.Fatal(err)
	}
	// One message to the model: the refused attempt decided nothing and
	// told the model nothing; the approval tells it what ran.
	if len(log.Messages) != 1 || len(log.Messages[0].Content) != 1 ||
		!strings.Contains(string(log.Messages[0].Content[0]), "a person edited it before approving: body.amount 900 → 500") {
		t.Errorf("ui/message: %s", logged)
	}
	if calls := calls(); len(calls) != 2 || calls[0] != mcpapi.ToolCardDecide || calls[1] != mcpapi.ToolCardDecide {
		t.Errorf("the card called %v, want card_decide twice (refused, then approved)", calls)
	}
	pays := e.stack.Demo.Payments()
	if len(pays) != 1 || pays[0].Amount.String() != "500" || pays[0].To != "acct_7" {
		t.Errorf("the upstream's payments: %+v, want one of 500", pays)
	}
	if n := e.upstreamCount("POST", "/payments"); n != 1 {
		t.Errorf("POST /payments ran %d times, want once", n)
	}
}
