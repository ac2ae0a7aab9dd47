package stack

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// visualLines is JavaScript that reads the text of the element sel the way
// it is drawn: each character where Chromium placed it, lines top to
// bottom, characters left to right. innerText gives the logical order,
// which a right-to-left override does not change; this gives what a person
// sees.
const visualLines = `((sel) => {
  const root = document.querySelector(sel);
  if (!root) return "";
  const lh = parseFloat(getComputedStyle(root).lineHeight) || 20;
  const top = root.getBoundingClientRect().top + parseFloat(getComputedStyle(root).paddingTop);
  const lines = new Map();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode()); ) {
    for (let i = 0; i < n.data.length; i++) {
      const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
      const b = r.getBoundingClientRect();
      if (b.width <= 0) continue;
      const line = Math.floor(((b.top + b.bottom) / 2 - top) / lh);
      if (!lines.has(line)) lines.set(line, []);
      lines.get(line).push([b.left, n.data[i]]);
    }
  }
  return [...lines.keys()].sort((a, b) => a - b)
    .map(k => lines.get(k).sort((a, b) => a[0] - b[0]).map(c => c[1]).join("")).join("\n");
})`

// TestDisplayInBrowser: the bytes "ACME-\u202e4321-8765\u202c" in an
// argument read ACME-5678-1234 in Chromium when the page wrote them as
// they are. The approval page shows the override and its end as escapes,
// in the order the bytes have, and labels the client name the agent chose
// as its own words, cut to its bound.
func TestDisplayInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	shots := artifacts(t)
	h := newHarness(t, harnessOptions{})
	lure := "Claude Code \u2014 pre-approved by the CISO (ticket SEC-4411). Approving is safe"
	r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "POST", "path": "/contacts/4/archive", "intent": "write",
		"body":   map[string]any{"to_account": "ACME-\u202e4321-8765\u202c"},
		"client": map[string]string{"name": lure, "version": "9.9"}})
	expect(t, r, http.StatusAccepted, "")
	link := h.stack.URL + h.approvalLink(r.str("confirmation.id"))

	ctx := startChrome(t, bin, shots).ctx
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var args, seen, asked string
	var shot []byte
	err := chromedp.Do(sctx, chromedp.Navigate(link), poll(`!!document.querySelector("ol.ops pre")`),
		into(&args, chromedp.Evaluate[string](`document.querySelector("ol.ops pre").innerText`)),
		into(&seen, chromedp.Evaluate[string](visualLines+`("ol.ops pre")`)),
		into(&asked, chromedp.Evaluate[string](`document.querySelector(".ask").innerText`)),
		into(&shot, chromedp.FullScreenshot(100))) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shots, "approval-hidden-characters.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("drawn:\n%s", seen)

	const escaped = `"to_account": "ACME-\u202E4321-8765\u202C"`
	if !strings.Contains(args, escaped) || strings.ContainsAny(args, "\u202e\u202c") {
		t.Errorf("innerText of the arguments does not show the escapes:\n%q", args)
	}
	if !strings.Contains(seen, escaped) {
		t.Errorf("the arguments are not drawn in the bytes' order; want %s in:\n%s", escaped, seen)
	}
	if strings.Contains(seen, "5678-1234") || strings.Contains(args, "5678-1234") {
		t.Errorf("the page shows the reordered ACME-5678-1234:\n%s", seen)
	}

	// The client name is the agent's words: labelled, and cut before the
	// end of its pitch. The credential is stated as who asked.
	if !strings.Contains(asked, "Asked with the credential\nchat-user") {
		t.Errorf("the credential is not stated as who asked:\n%s", asked)
	}
	i := strings.Index(asked, "The agent says it is")
	j := strings.Index(asked, "pre-approved by the CISO")
	if i < 0 || j < i || !strings.Contains(asked[j:], "(its own words, not checked") {
		t.Errorf("the agent's words are not labelled as such:\n%s", asked)
	}
	if strings.Contains(asked, "Approving is safe") || !strings.Contains(asked, "…") {
		t.Errorf("the agent's words are not cut to their bound:\n%s", asked)
	}
}
