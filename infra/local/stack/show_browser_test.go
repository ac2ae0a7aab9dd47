package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestShowInBrowser: a person opening the approval page of a paused
// DELETE /contacts/12 in Chromium reads what will happen in words, and
// the contact as it is now under Now, as drawn.
func TestShowInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	shots := artifacts(t)
	h := showHarness(t)
	_, link := h.pause("cs_test_ask", deleteShown12)

	ctx := startChrome(t, bin, shots).ctx
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var summary, heading, note, now string
	var shot []byte
	err := chromedp.Do(sctx, chromedp.Navigate(h.stack.URL+link), poll(`!!document.querySelector("h2.now")`),
		into(&summary, chromedp.Evaluate[string](`document.querySelector("p.summary").innerText`)),
		into(&heading, chromedp.Evaluate[string](`document.querySelector("h2.now").innerText`)),
		into(&note, chromedp.Evaluate[string](`document.querySelector("h2.now").nextElementSibling.innerText`)),
		into(&now, chromedp.Evaluate[string](visualLines+`("h2.now ~ pre")`)),
		into(&shot, chromedp.FullScreenshot(100)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shots, "approval-now.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if summary != "Delete contact 12, John McCarthy <john.mccarthy@example.com>" {
		t.Errorf("summary as read: %q", summary)
	}
	if heading != "Now" || !strings.Contains(note, "this will be gone") {
		t.Errorf("Now heading %q, note %q", heading, note)
	}
	for _, want := range []string{`"name": "John McCarthy"`, `"company": "Contoso"`, `"id": "inv_103"`, `"amount": 3600.00`} {
		if !strings.Contains(now, want) {
			t.Errorf("the Now section as drawn lacks %q:\n%s", want, now)
		}
	}
}
