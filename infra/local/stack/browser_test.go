package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
)

// chromium finds Debian's chromium, installing it with apt-get when it is
// missing and this runs as root (as CI does).
func chromium(t *testing.T) string {
	t.Helper()
	return testenv.AptBinary(t, testenv.Chromium, "chromium", "chromium", "chromium-browser")
}

// artifacts is where the screenshots go: $COUNTERSIGN_ARTIFACTS, or a
// directory under the system's temporary directory that outlives the test.
func artifacts(t *testing.T) string {
	dir := os.Getenv("COUNTERSIGN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "countersign-browser-artifacts")
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one person's view in headless Chromium: a browser context of its
// own (its own cookies), driven over the DevTools protocol.
type tab struct {
	t     *testing.T
	ctx   context.Context
	shots string
	n     *int // screenshots taken, across a test's tabs
}

// startChrome starts headless Chromium (bin) for the test and returns its
// first tab; screenshots go to shots.
func startChrome(t *testing.T, bin, shots string) *tab {
	t.Helper()
	// A browser that fails to come up on a loaded machine (its DevTools
	// endpoint not announced in time) is started again, up to three times.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 1400),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(actx)
		// The first run starts the browser; it lives as long as ctx (no
		// timeout on it, as chromedp asks), and each step gets its own.
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(cancelAlloc)
			t.Cleanup(cancelCtx)
			return &tab{t: t, ctx: ctx, shots: shots, n: new(int)}
		}
		cancelCtx()
		cancelAlloc()
		t.Logf("start chromium (attempt %d of 3): %v", attempt, err)
	}
	t.Fatalf("start chromium: %v", err)
	return nil
}

// person opens a tab in a new browser context: another person, who shares
// no cookie with the others.
func (b *tab) person() *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a browser context: %v", err)
	}
	return &tab{t: b.t, ctx: ctx, shots: b.shots, n: b.n}
}

// shot saves a full-page screenshot named name.
func (b *tab) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(90)(ctx, tg)
		if err != nil {
			return err
		}
		*b.n++
		return os.WriteFile(filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", *b.n, name)), buf, 0o644)
	})
}

// run runs a step's actions in order; an action cut off by the page
// navigating (a form just submitted) is retried until the new page
// answers, for 15 s.
func (b *tab) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for _, a := range actions {
		deadline := time.Now().Add(15 * time.Second)
		for {
			sctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
			err := chromedp.Do(sctx, a)
			cancel()
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "navigated or closed") && !strings.Contains(err.Error(), "Cannot find context") || time.Now().After(deadline) {
				b.t.Fatalf("%s: %v\n%s", step, err, b.where())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// where says where the tab is and what it shows, for a failure's message.
func (b *tab) where() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	var at, shown string
	_ = chromedp.Do(ctx, into(&at, chromedp.Location()), into(&shown, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)))
	if len(shown) > 2000 {
		shown = shown[:2000] + "…"
	}
	return fmt.Sprintf("at %s, showing:\n%s", at, shown)
}

// TestBrowser drives the approval page and the operator page in headless
// Chromium over the DevTools protocol, as a person would: it reads what
// the pages show and presses their buttons, and screenshots each page.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	shots := artifacts(t)
	h := newHarness(t, harnessOptions{})

	br := startChrome(t, bin, shots)
	run, shot := br.run, br.shot
	heading := func(want string) chromedp.Action[chromedp.Void] {
		return poll(fmt.Sprintf(`(document.querySelector("h1")||{}).textContent === %q`, want))
	}

	// 1. A two-operation confirmation the gateway runs once approved (the
	// batch path; code mode, which makes such batches, is not merged yet,
	// so it is created through the pipeline's lifecycle directly).
	var ops []countersign.Operation
	for _, id := range []string{"7", "8"} {
		op, err := confirm.NewOperation("chat-user", "crm", "DELETE", "/contacts/"+id, "/contacts/{id}", countersign.Args{Path: map[string]string{"id": id}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	conf, err := h.stack.app.Confirm.Create(context.Background(), confirm.Request{Kind: countersign.KindCall, Credential: "chat-user",
		Reason: "DELETE /contacts/{id} requires confirmation", Operations: ops, GatewayRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	link := h.stack.URL + h.approvalLink(conf.ID)
	var title, opsText string
	run("open the approval link", chromedp.Navigate(link), heading("Approve 2 operations?"),
		into(&opsText, chromedp.Text(chromedp.CSS("ol.ops"))), into(&title, chromedp.Title()), shot("approval-two-operations"))
	if !strings.Contains(opsText, "/contacts/7") || !strings.Contains(opsText, "/contacts/8") || !strings.Contains(title, "Test Co") {
		t.Fatalf("the page shows %q (title %q)", opsText, title)
	}
	var outcome string
	run("clear the second operation and approve",
		chromedp.Click(chromedp.CSS("#op-1")), chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		heading("Approved"), into(&outcome, chromedp.Text(chromedp.CSS("main"))), shot("approved-one-of-two"))
	if !strings.Contains(outcome, "Left out, not run") {
		t.Fatalf("outcome page: %q", outcome)
	}
	waitFor(t, func() bool { return h.statusOf("cs_test_ask", conf.ID) == "executed" })
	if h.upstream.Count("DELETE", "/contacts/7") != 1 || h.upstream.Count("DELETE", "/contacts/8") != 0 {
		t.Fatalf("upstream: DELETE 7 ×%d, DELETE 8 ×%d; want 1 and 0", h.upstream.Count("DELETE", "/contacts/7"), h.upstream.Count("DELETE", "/contacts/8"))
	}
	run("reload: the outcome", chromedp.Navigate(link), heading("Approved"), into(&outcome, chromedp.Text(chromedp.CSS("main"))), shot("approved-outcome"))
	if !strings.Contains(outcome, "ran: upstream answered") {
		t.Fatalf("outcome after the run: %q", outcome)
	}

	// 2. Reject all with a reason; the agent reads it.
	r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/9", "intent": "write",
		"client": map[string]string{"name": "Claude Code", "version": "2.1"}})
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	var asked string
	run("open the second link", chromedp.Navigate(h.stack.URL+h.approvalLink(id)), heading("Approve this operation?"),
		into(&asked, chromedp.Text(chromedp.CSS(".ask"))), chromedp.SendKeys(chromedp.CSS("#reason"), "wrong contact"), shot("reject-with-reason"))
	if !strings.Contains(asked, "chat-user") || !strings.Contains(asked, "Claude Code 2.1") {
		t.Fatalf("who is asking: %q", asked)
	}
	run("reject all", chromedp.Click(chromedp.CSS(`button[value="reject"]`)), heading("Rejected"),
		into(&outcome, chromedp.Text(chromedp.CSS("main"))), shot("rejected"))
	if !strings.Contains(outcome, "wrong contact") {
		t.Fatalf("rejected page: %q", outcome)
	}
	if st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil); st.str("decision_reason") != "wrong contact" {
		t.Fatalf("agent's view %s", st.body)
	}

	// 3. An expired link.
	r = h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/10", "intent": "write"})
	id = r.str("confirmation.id")
	h.approvalLink(id)
	key, err := links.LoadOrCreateKey(filepath.Join(h.dataDir, "signing-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := links.NewSigner(key)
	expired := signer.Sign(id, "ops", time.Now().Add(-time.Minute)).URL(h.stack.URL)
	run("open an expired link", chromedp.Navigate(expired), heading("This confirmation expired"), shot("expired"))

	// 4. The operator page: sign in, run one review item, dismiss another.
	runID := h.queueReview("/accounts/4/close", map[string]any{"note": "asked by the customer"})
	dismissID := h.queueReview("/accounts/5/close", nil)
	run("open the operator page", chromedp.Navigate(h.stack.URL+"/operator"), heading("Operator sign-in"), shot("operator-sign-in"))
	run("sign in", chromedp.SendKeys(chromedp.CSS("#key"), operatorKey), chromedp.Submit(chromedp.CSS("#key")),
		heading("Operator"), chromedp.WaitVisible(chromedp.CSS("#review-"+runID)), shot("operator-dashboard"))
	var msg string
	run("run a review item", chromedp.Click(chromedp.CSS("#review-"+runID+" button.primary")),
		poll(fmt.Sprintf(`(document.querySelector(".message")||{textContent:""}).textContent.startsWith("Ran review item %s")`, runID)),
		into(&msg, chromedp.Text(chromedp.CSS(".message"))), shot("operator-ran"))
	if h.upstream.Count("POST", "/accounts/4/close") != 1 {
		t.Fatalf("upstream got the review item %d times (message %q)", h.upstream.Count("POST", "/accounts/4/close"), msg)
	}
	run("dismiss another", chromedp.SendKeys(chromedp.CSS("#review-"+dismissID+` input[name="reason"]`), "duplicate"),
		chromedp.Click(chromedp.CSS("#review-"+dismissID+" button.secondary")),
		poll(fmt.Sprintf(`(document.querySelector(".message")||{}).textContent === "Dismissed review item %s."`, dismissID)),
		shot("operator-dismissed"))
	if st := h.do(http.MethodGet, "/v1/confirmations/"+dismissID, "cs_test_ask", nil, nil); st.str("status") != "rejected" || st.str("decision_reason") != "duplicate" {
		t.Fatalf("dismissed item: %s", st.body)
	}
	t.Logf("screenshots in %s", shots)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 15s")
}

// into runs a and stores its value in dst.
func into[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v, err := a(ctx, tg)
		*dst = v
		return err
	})
}

// poll waits until a JavaScript predicate holds on the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second))
}
