package stack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEditInBrowser: in Chromium, the approval page shows the editable
// amount as a number input holding the agent's 900 and the recipient as
// a text input; the approver types 500 and presses Approve; the decided
// page shows the edited arguments, the agent's redemption with its 900
// says edited, and the upstream receives 500, once.
func TestEditInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/pay/policy.json": editPolicy}})
	id, link := h.pause("cs_test_ask", payEdit(900))
	b := startChrome(t, bin, artifacts(t))
	var kind, amount, to, shown string
	b.run("open the link and edit the amount", chromedp.Navigate(h.stack.URL+link),
		chromedp.WaitVisible(chromedp.CSS(`input[name="edit.0.body.amount"]`)),
		into(&kind, chromedp.JavascriptAttribute[string](chromedp.CSS(`input[name="edit.0.body.amount"]`), "type")),
		into(&amount, chromedp.Value(chromedp.CSS(`input[name="edit.0.body.amount"]`))),
		into(&to, chromedp.Value(chromedp.CSS(`input[name="edit.0.body.to"]`))), b.shot("edit-offered"),
		chromedp.SetValue(chromedp.CSS(`input[name="edit.0.body.amount"]`), ""),
		chromedp.SendKeys(chromedp.CSS(`input[name="edit.0.body.amount"]`), "500"),
		chromedp.Click(chromedp.CSS(`button[name="decision"][value="approve"]`)),
		poll(`document.body.innerText.includes("Approved")`), b.shot("edit-approved"),
		into(&shown, chromedp.Text(chromedp.CSS("main"))))
	if kind != "number" || amount != "900" || to != "acct_7" {
		t.Fatalf("the inputs: type %q, amount %q, to %q", kind, amount, to)
	}
	if !strings.Contains(shown, "You edited body.amount 900 → 500; the edited call is what runs.") {
		t.Errorf("the page after approving does not show what will run:\n%s", shown)
	}
	if st := h.statusOf("cs_test_ask", id); st != "approved" {
		t.Fatalf("status after approving: %s", st)
	}
	red := h.call("cs_test_ask", redeemOf(payEdit(900), id))
	expect(t, red, http.StatusOK, "")
	if red.get("edited") != true || red.get("arguments.body.amount") != float64(500) {
		t.Fatalf("the redemption: %s", red.body)
	}
	if pays := h.upstream.Payments(); len(pays) != 1 || pays[0].Amount.String() != "500" {
		t.Fatalf("the upstream's payments: %+v", pays)
	}
}
