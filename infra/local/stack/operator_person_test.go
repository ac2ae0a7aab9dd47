package stack

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// personCredentials are the harness's credentials with two people: alice,
// an operator, and bob, who is not.
var personCredentials = strings.Replace(testCredentials, `  {"id": "root",`, `  {"id": "alice", "user": "alice@example.com", "role": "operator"},
  {"id": "bob", "user": "bob@example.com"},
  {"id": "root",`, 1)

var operatorCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// operatorForm posts a form of the operator page as this browser.
func (b *approverBrowser) operatorForm(path string, page result, form url.Values) result {
	b.t.Helper()
	m := operatorCSRF.FindSubmatch(page.body)
	if m == nil {
		b.t.Fatalf("the page has no CSRF token:\n%s", page.body)
	}
	form.Set("csrf", string(m[1]))
	resp, err := b.client.PostForm(b.h.stack.URL+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body := make([]byte, 0)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	return result{status: resp.StatusCode, header: resp.Header, body: body}
}

// TestOperatorSignsInAsAPerson: a configured user with role operator signs
// in to /operator through the development sign-in (the approvers' sign-in)
// and sees the page; what they do is on the audit trail as person:<email>.
// A person who is no operator gets 403 and nothing of the page; revoking
// the operator's credential ends their session at the next request.
func TestOperatorSignsInAsAPerson(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"credentials.json": personCredentials}})
	login := h.do(http.MethodGet, "/operator", "", nil, nil)
	if !strings.Contains(string(login.body), `href="/operator/signin"`) {
		t.Fatalf("the sign-in page offers no person sign-in:\n%s", login.body)
	}

	// bob is a user but no operator: 403, nothing shown.
	bob := newApproverBrowser(h, "bob@example.com")
	r := bob.open("/operator/signin")
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "needs role operator") ||
		strings.Contains(string(r.body), "Review queue") || strings.Contains(string(r.body), "Credentials") {
		t.Fatalf("bob: %d\n%s", r.status, r.body)
	}
	// Someone who is no user at all: likewise.
	eve := newApproverBrowser(h, "eve@example.com")
	if r := eve.open("/operator/signin"); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Review queue") {
		t.Fatalf("eve: %d\n%s", r.status, r.body)
	}

	id := h.queueReview("/accounts/3/close", nil)
	alice := newApproverBrowser(h, "alice@example.com")
	page := alice.open("/operator/signin")
	if page.status != http.StatusOK || alice.signIns != 1 || !strings.Contains(string(page.body), "alice@example.com") ||
		!strings.Contains(string(page.body), "Review queue") || !strings.Contains(string(page.body), `href="/oauth/signout"`) {
		t.Fatalf("alice: %d sign-ins %d\n%s", page.status, alice.signIns, page.body)
	}
	// A form without the page's token does nothing.
	stale := alice.operatorForm("/operator/reviews/"+id, result{body: []byte(`name="csrf" value="forged"`)}, url.Values{"decision": {"dismiss"}})
	if stale.status != http.StatusForbidden || h.statusOf("cs_test_ask", id) != "pending" {
		t.Fatalf("a forged token: %d, item %s", stale.status, h.statusOf("cs_test_ask", id))
	}
	// With it, alice dismisses a review item: she is the actor.
	done := alice.operatorForm("/operator/reviews/"+id, page, url.Values{"decision": {"dismiss"}, "reason": {"duplicate"}})
	if done.status != http.StatusOK || h.statusOf("cs_test_ask", id) != "rejected" {
		t.Fatalf("dismiss: %d %s\n%s", done.status, h.statusOf("cs_test_ask", id), done.body)
	}

	// Revoked (by the root key, through the API), her session ends at once.
	expect(t, h.operatorJSON(http.MethodDelete, "/v1/operator/credentials/alice", ""), http.StatusOK, "")
	after := alice.open("/operator")
	if after.status == http.StatusOK && strings.Contains(string(after.body), "Review queue") {
		t.Fatalf("alice still sees the page after revocation:\n%s", after.body)
	}
	if strings.Contains(string(after.body), "Review queue") {
		t.Fatalf("alice's page after revocation shows the queue: %d", after.status)
	}
	h.stop()

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListAudit(context.Background(), storeQuery(audit.ChainOf("chat-user")))
	if err != nil {
		t.Fatal(err)
	}
	var actor string
	for _, rec := range recs {
		if rec.Subject == id && strings.Contains(rec.Action, "dismiss") || rec.Subject == id && strings.Contains(rec.Action, "rejected") {
			actor = rec.Actor
		}
	}
	if actor != "person:alice@example.com" {
		for _, rec := range recs {
			t.Logf("%s %s %s %s", rec.Action, rec.Subject, rec.Actor, rec.Outcome)
		}
		t.Fatalf("the dismissal's actor is %q, want person:alice@example.com", actor)
	}
}
