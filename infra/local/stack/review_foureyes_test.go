package stack

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
)

// fourEyesReview is a connection under four eyes whose DELETE is at the
// review tier.
const fourEyesReview = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": "review"}],
  "approval": {"separate_approver": true}
}`

// TestOperatorCannotRunOwnFourEyesReview: under four eyes the review tier
// holds too. alice, a person with role operator, makes a call through her
// client that is queued for review; signed in to /operator she cannot run
// it (403, nothing sent), nor can the root key run a call it made itself;
// another operator (the root key) runs alice's, once.
func TestOperatorCannotRunOwnFourEyesReview(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{
		"credentials.json":             personCredentials,
		"connections/team/policy.json": fourEyesReview,
	}})
	s, _ := h.askingPerson("alice@example.com", "Alice's client")
	res := callTool(t, s, "team__delete_contacts_by_id", map[string]any{"id": "77"}, nil)
	id, _ := structured(t, res)["review_id"].(string)
	if !strings.HasPrefix(id, "rv_") {
		t.Fatalf("alice's call: %s, want queued for review", text(res))
	}
	reviewStatus := func(id string) string {
		t.Helper()
		r := h.operatorJSON(http.MethodGet, "/v1/operator/reviews/"+id, "")
		expect(t, r, http.StatusOK, "")
		return r.str("status")
	}

	alice := newApproverBrowser(h, "alice@example.com")
	page := alice.open("/operator/signin")
	if page.status != http.StatusOK || !strings.Contains(string(page.body), id) {
		t.Fatalf("alice's operator page: %d\n%s", page.status, page.body)
	}
	r := alice.operatorForm("/operator/reviews/"+id, page, url.Values{"decision": {"run"}})
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "four eyes") {
		t.Errorf("alice runs her own review item: %d\n%s", r.status, visibleText(r.body))
	}
	if st := reviewStatus(id); st != "pending" || h.upstream.Count("DELETE", "/contacts/77") != 0 {
		t.Fatalf("after alice's own run: %s, %d upstream calls; want pending, none", st, h.upstream.Count("DELETE", "/contacts/77"))
	}

	// The root key's own call, run by the root key through the JSON route.
	own := h.call(operatorKey, map[string]any{"connection": "team", "method": "DELETE", "path": "/contacts/78", "intent": "write"})
	expect(t, own, http.StatusForbidden, "review_required")
	ownID := own.str("review.id")
	expect(t, h.operatorJSON(http.MethodPost, "/v1/operator/reviews/"+ownID, `{"decision": "run"}`), http.StatusForbidden, "forbidden")
	if st := reviewStatus(ownID); st != "pending" || h.upstream.Count("DELETE", "/contacts/78") != 0 {
		t.Fatalf("after the root key's own run: %s; want pending, nothing sent", st)
	}

	// Another operator runs alice's call, once.
	expect(t, h.operatorJSON(http.MethodPost, "/v1/operator/reviews/"+id, `{"decision": "run"}`), http.StatusOK, "")
	if n := h.upstream.Count("DELETE", "/contacts/77"); n != 1 {
		t.Fatalf("the root key's run sent DELETE /contacts/77 %d times, want once", n)
	}
}

// TestOperatorReviewFormRefusesRepeatedFields: the review queue's form,
// like every console form, refuses a field given twice (400, nothing
// done): decision=dismiss&decision=run used to dismiss (the first
// counted), and decision=run with two reasons ran.
func TestOperatorReviewFormRefusesRepeatedFields(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.queueReview("/accounts/4/close", nil)
	b := newBrowser(t, h)
	page := b.login(b.get("/operator"), operatorKey)
	expect(t, page, http.StatusOK, "")
	csrf := csrfOf(t, page)
	for _, form := range []url.Values{
		{"csrf": {csrf}, "decision": {"dismiss", "run"}},
		{"csrf": {csrf}, "decision": {"run", "run"}},
		{"csrf": {csrf}, "decision": {"run"}, "reason": {"a", "b"}},
		{"csrf": {csrf, csrf}, "decision": {"run"}},
	} {
		r := b.post("/operator/reviews/"+id, form)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "more than once") {
			t.Errorf("%v: %d, want 400\n%s", form, r.status, visibleText(r.body))
		}
		if st := h.statusOf("cs_test_ask", id); st != "pending" || h.upstream.Count("POST", "/accounts/4/close") != 0 {
			t.Fatalf("%v: the item is %s, want pending with nothing sent", form, st)
		}
	}
	if r := b.post("/operator/reviews/"+id, url.Values{"csrf": {csrf}, "decision": {"run"}}); r.status != http.StatusOK ||
		h.upstream.Count("POST", "/accounts/4/close") != 1 {
		t.Fatalf("a plain run: %d, %d upstream calls\n%s", r.status, h.upstream.Count("POST", "/accounts/4/close"), visibleText(r.body))
	}
}

// TestFourEyesReviewQueuedBefore: a review item stored without the
// four-eyes flag (queued before review items recorded it, or before the
// connection turned it on) is held by the policy in force: the key that
// made the call cannot run it.
func TestFourEyesReviewQueuedBefore(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{
		"credentials.json":             personCredentials,
		"connections/team/policy.json": fourEyesReview,
	}})
	op, err := confirm.NewOperation("root", "team", "DELETE", "/contacts/79", "/contacts/{id}", countersign.Args{Path: map[string]string{"id": "79"}})
	if err != nil {
		t.Fatal(err)
	}
	old, err := h.stack.app.Confirm.CreateReview(context.Background(), confirm.ReviewRequest{Credential: "root", Reason: "review", Operation: op, Retention: time.Hour})
	if err != nil || old.SeparateApprover {
		t.Fatalf("review item %+v, %v", old, err)
	}
	expect(t, h.operatorJSON(http.MethodPost, "/v1/operator/reviews/"+old.ID, `{"decision": "run"}`), http.StatusForbidden, "forbidden")
	if n := h.upstream.Count("DELETE", "/contacts/79"); n != 0 {
		t.Fatalf("the caller ran its own item queued without the flag: %d upstream calls", n)
	}
}
