package stack

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRememberInBrowser: in Chromium, the approver chooses 15 minutes and
// presses "Approve and allow for"; the page says what it allowed (the
// grant), and the agent's next call of the endpoint runs at once under it.
func TestRememberInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	h := newRememberHarness(t)
	id, link := h.pause("cs_test_ask", delRemember(1))
	b := startChrome(t, bin, artifacts(t))
	var shown string
	b.run("open the link and approve for 15 minutes", chromedp.Navigate(h.stack.URL+link),
		chromedp.WaitVisible(chromedp.CSS("#remember-approve")), b.shot("remember-offered"),
		chromedp.SetValue(chromedp.CSS("select#remember"), "15"),
		chromedp.Click(chromedp.CSS("#remember-approve")),
		poll(`document.body.innerText.includes("(grant gr_")`), b.shot("remember-granted"),
		into(&shown, chromedp.Text(chromedp.CSS("main"))))
	m := regexp.MustCompile(`grant (gr_[a-z0-9]+)`).FindStringSubmatch(shown)
	if m == nil || !strings.Contains(shown, "Up to 3 more calls") {
		t.Fatalf("the page after approving:\n%s", shown)
	}
	if st := h.statusOf("cs_test_ask", id); st != "approved" {
		t.Fatalf("status after approving: %s", st)
	}
	r := h.call("cs_test_ask", delRemember(2))
	expect(t, r, http.StatusOK, "")
	if r.str("grant") != m[1] {
		t.Fatalf("the next call: %s, want it run under %s", r.body, m[1])
	}
	mine := h.do(http.MethodGet, "/v1/grants", "cs_test_ask", nil, nil)
	created, err1 := time.Parse(time.RFC3339Nano, mine.str("grants.0.created_at"))
	expires, err2 := time.Parse(time.RFC3339Nano, mine.str("grants.0.expires_at"))
	if err1 != nil || err2 != nil || expires.Sub(created) != 15*time.Minute {
		t.Fatalf("the grant is not for the 15 minutes chosen: %s", mine.body)
	}
}
