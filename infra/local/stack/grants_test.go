package stack

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// rememberPolicy is a connection whose DELETE offers remember, whose
// reads have a rate rule, and whose POST offers no remember.
const rememberPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "approval": {"remember": {"max_minutes": 30, "max_calls": 3}}},
    {"method": "GET",    "path": "/contacts/{id}", "escalate": [{"rate": {"calls": 20, "per_seconds": 86400}, "escalate": "review"}]},
    {"method": "POST",   "path": "/contacts", "confirm": true}
  ]
}`

func newRememberHarness(t *testing.T) *harness {
	return newHarness(t, harnessOptions{files: map[string]string{"connections/remember/policy.json": rememberPolicy}})
}

func delRemember(id int) map[string]any {
	return map[string]any{"connection": "remember", "method": "DELETE", "path": fmt.Sprintf("/contacts/%d", id), "intent": "write"}
}

// postRemember posts the approval form of link with decision approve and
// remember (as the page's second form does), asking for JSON.
func (h *harness) postRemember(link, remember string) result {
	h.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		h.t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", "approve")
	form.Set("remember", remember)
	return h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
}

// grantFor pauses a DELETE of contact id for key and approves it with
// remember; it returns the grant's id.
func (h *harness) grantFor(key string, id int, minutes string) string {
	h.t.Helper()
	_, link := h.pause(key, delRemember(id))
	r := h.postRemember(link, minutes)
	expect(h.t, r, http.StatusOK, "")
	g := r.str("grant.id")
	if !strings.HasPrefix(g, "gr_") || r.str("status") != "approved" || r.str("grant.status") != "active" {
		h.t.Fatalf("approve with remember: %s", r.body)
	}
	return g
}

// TestApproveAndRememberEndToEnd is approve and remember through the real
// routes: the page offers it (up to max_minutes); remember past the
// maximum or on an endpoint without it is 400 and decides nothing;
// approved with remember 10, the next 3 matching calls run at once with
// the grant's id, the 4th pauses; another credential pauses; the caller
// lists its grants; an operator lists and revokes one, and the next call
// pauses.
func TestApproveAndRememberEndToEnd(t *testing.T) {
	h := newRememberHarness(t)
	id, link := h.pause("cs_test_ask", delRemember(1))
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	for _, want := range []string{"Approve and allow for", `<option value="5">`, `<option value="30">30 minutes</option>`, "up to 3 more calls"} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(string(page.body), `<option value="60">`) {
		t.Error("the page offers more than max_minutes")
	}
	for _, bad := range []string{"31", "0", "ten"} {
		expect(t, h.postRemember(link, bad), http.StatusBadRequest, "invalid_remember")
	}
	if st := h.statusOf("cs_test_ask", id); st != "pending" {
		t.Fatalf("after refused remembers: %s, want pending", st)
	}
	r := h.postRemember(link, "10")
	expect(t, r, http.StatusOK, "")
	grant := r.str("grant.id")
	if !strings.HasPrefix(grant, "gr_") || r.get("grant.calls_left") != float64(3) || r.str("grant.credential") != "chat-user" {
		t.Fatalf("approval with remember: %s", r.body)
	}
	// The approved call itself is redeemed as usual.
	expect(t, h.call("cs_test_ask", redeemOf(delRemember(1), id)), http.StatusOK, "")

	for i := range 3 {
		r := h.call("cs_test_ask", delRemember(10+i))
		expect(t, r, http.StatusOK, "")
		if r.str("status") != "executed" || r.str("grant") != grant {
			t.Fatalf("call %d under the grant: %s", i+1, r.body)
		}
	}
	expect(t, h.call("cs_test_ask", delRemember(13)), http.StatusAccepted, "")
	expect(t, h.call("cs_test_ask2", delRemember(14)), http.StatusAccepted, "")
	for i := range 5 {
		if n := h.upstream.Count("DELETE", fmt.Sprintf("/contacts/%d", 10+i)); n != map[bool]int{true: 1, false: 0}[i < 3] {
			t.Errorf("DELETE /contacts/%d reached the upstream %d times", 10+i, n)
		}
	}
	mine := h.do(http.MethodGet, "/v1/grants", "cs_test_ask", nil, nil)
	expect(t, mine, http.StatusOK, "")
	if mine.str("grants.0.id") != grant || mine.str("grants.0.status") != "spent" || mine.get("grants.0.calls_left") != float64(0) {
		t.Errorf("GET /v1/grants: %s", mine.body)
	}
	if other := h.do(http.MethodGet, "/v1/grants", "cs_test_ask2", nil, nil); !strings.Contains(string(other.body), `"grants":[]`) {
		t.Errorf("another credential's grants: %s", other.body)
	}

	// An endpoint without remember.
	_, link = h.pause("cs_test_ask", map[string]any{"connection": "remember", "method": "POST", "path": "/contacts", "intent": "write", "body": map[string]any{"name": "x"}})
	if page := h.do(http.MethodGet, link, "", nil, nil); strings.Contains(string(page.body), "Approve and allow") {
		t.Error("the page offers remember on an endpoint without it")
	}
	expect(t, h.postRemember(link, "5"), http.StatusBadRequest, "invalid_remember")

	// Revoked by an operator: the next call pauses.
	g2 := h.grantFor("cs_test_ask", 20, "5")
	expect(t, h.do(http.MethodGet, "/v1/operator/grants", "cs_test_ask", nil, nil), http.StatusForbidden, "forbidden")
	list := h.do(http.MethodGet, "/v1/operator/grants", "cs_test_op", nil, nil)
	expect(t, list, http.StatusOK, "")
	if !strings.Contains(string(list.body), g2) || !strings.Contains(string(list.body), grant) {
		t.Errorf("operator listing lacks the grants: %s", list.body)
	}
	expect(t, h.do(http.MethodDelete, "/v1/operator/grants/"+g2, "cs_test_op", nil, nil), http.StatusOK, "")
	expect(t, h.call("cs_test_ask", delRemember(21)), http.StatusAccepted, "")
	expect(t, h.do(http.MethodDelete, "/v1/operator/grants/"+g2, "cs_test_op", nil, nil), http.StatusNotFound, "not_found")

	// The operator page lists the grants that are left.
	b := newBrowser(t, h)
	if r := b.login(b.get("/operator"), "cs_test_op"); !b.hasSession() {
		t.Fatalf("operator login: %d %s", r.status, r.body)
	}
	page = b.get("/operator")
	body := string(page.body)
	start, end := strings.Index(body, `<h2 id="grants">Grants</h2>`), strings.Index(body, `<h2 id="audit">`)
	if start < 0 || end < start {
		t.Fatalf("the operator page has no grants section: %s", body)
	}
	if section := body[start:end]; !strings.Contains(section, grant) || !strings.Contains(section, "0 of 3") || strings.Contains(section, g2) {
		t.Errorf("the operator page's grants: %s", section)
	}
	if !strings.Contains(body, "grant.used") || !strings.Contains(body, "grant.revoked") {
		t.Error("the audit trail lacks the grant's uses or its revocation")
	}
}

// TestGrantRacingCalls: 20 concurrent calls against a grant of 3 run
// exactly 3 upstream writes; the rest pause.
func TestGrantRacingCalls(t *testing.T) {
	h := newRememberHarness(t)
	h.grantFor("cs_test_ask", 1, "10")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 20 {
		wg.Go(func() {
			r := h.call("cs_test_ask", delRemember(100+i))
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	writes := 0
	for i := range 20 {
		writes += h.upstream.Count("DELETE", fmt.Sprintf("/contacts/%d", 100+i))
	}
	if writes != 3 || codes[http.StatusOK] != 3 || codes[http.StatusAccepted] != 17 {
		t.Errorf("upstream writes %d, answers %v; want 3 writes, 3 executed and 17 paused", writes, codes)
	}
}

// TestVelocityEndToEnd: the 21st read of an endpoint with a rate rule by
// one credential within its window is escalated (403 review_required,
// escalated, the rule named) and does not reach the upstream; another
// credential is counted apart.
func TestVelocityEndToEnd(t *testing.T) {
	h := newRememberHarness(t)
	read := func(key string, id int) result {
		return h.call(key, map[string]any{"connection": "remember", "method": "GET", "path": fmt.Sprintf("/contacts/%d", id), "intent": "read"})
	}
	// The rule's window is a UTC day: a run that crosses midnight counts
	// again in the next window, so it is run once more there.
	for attempt := 0; ; attempt++ {
		day := time.Now().UTC().YearDay()
		key := []string{"cs_test_run", "cs_test_agent"}[attempt]
		for i := range 20 {
			expect(t, read(key, i+1), http.StatusOK, "")
		}
		r := read(key, 21)
		if time.Now().UTC().YearDay() != day && attempt == 0 {
			continue
		}
		expect(t, r, http.StatusForbidden, "review_required")
		if r.get("escalated") != true || !strings.Contains(r.str("rule"), "connections/remember/policy.json endpoints[1].escalate[0] rate 20 calls per 86400 s: review") {
			t.Fatalf("21st call: %s", r.body)
		}
		if n := h.upstream.Count("GET", "/contacts/21"); n != 0 {
			t.Errorf("the escalated read reached the upstream %d times", n)
		}
		break
	}
	expect(t, read("cs_test_ask", 1), http.StatusOK, "")
}

// TestGrantOverMCP: a tool call the grant covers runs at once, and the
// result tells the model it ran under the grant (text and structured
// content); once the grant is spent, the call pauses as ever.
func TestGrantOverMCP(t *testing.T) {
	h := newRememberHarness(t)
	grant := h.grantFor("cs_test_program", 1, "5")
	s := h.mcpSession("cs_test_program", clientKind{}, nil)
	for i := range 3 {
		r := callTool(t, s, "remember__delete_contacts_by_id", map[string]any{"id": fmt.Sprint(30 + i)}, nil)
		if st := structured(t, r); st["grant"] != grant || !strings.Contains(text(r), "under grant "+grant) {
			t.Fatalf("call %d: %s %v", i+1, text(r), st)
		}
	}
	r := callTool(t, s, "remember__delete_contacts_by_id", map[string]any{"id": "33"}, nil)
	if strings.Contains(text(r), "under grant") || h.upstream.Count("DELETE", "/contacts/33") != 0 {
		t.Fatalf("the 4th call ran: %s", text(r))
	}
}
