package stack

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/notify"
)

// countedEvents are the approval_counted events received for id.
func (r *receiver) countedEvents(id string) []notify.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []notify.Event
	for _, ev := range r.events {
		if ev.Type == notify.TypeApprovalCounted && ev.Confirmation.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// TestQuorumWebhookAnnouncesCounts: the first of two approvals is
// announced to the webhooks once, as confirmation.approval_counted saying
// 1 of 2 with the person who approved; the second is the decided event,
// which carries the full count and names the decider.
func TestQuorumWebhookAnnouncesCounts(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": quorumPolicy}})
	id, link := pauseQuorum(h, "12")
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")

	ev := h.webhook.waitEvent(t, notify.TypeApprovalCounted, id)
	a := ev.Confirmation.Approvals
	if a == nil || a.Required != 2 || a.Received != 1 || len(a.By) != 1 || a.By[0].Email != "ada@example.com" || a.By[0].Kind != "person" || a.By[0].Channel != "ops" {
		t.Fatalf("approval_counted approvals = %+v, want 1 of 2 by ada@example.com through ops", a)
	}
	if ev.Status != "pending" || ev.Confirmation.DecidedBy != nil || len(ev.Links) != 0 {
		t.Errorf("approval_counted event %+v: want pending, nobody decided yet, no links", ev)
	}
	// The same shape as GET /v1/confirmations/<id>.
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.get("approvals.received") != 1.0 || st.get("approvals.required") != 2.0 || st.str("approvals.by.0.email") != "ada@example.com" {
		t.Fatalf("GET after one approval: %s", st.body)
	}
	if n := h.webhook.count(notify.TypeDecided, id); n != 0 {
		t.Fatalf("%d decided events after one approval", n)
	}

	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	dec := decidedOnce(h, id)
	if dec.Decision != "approved" || dec.Confirmation.DecidedBy == nil || dec.Confirmation.DecidedBy.Email != "bob@example.com" {
		t.Errorf("decided event %+v, want approved by bob", dec)
	}
	if a := dec.Confirmation.Approvals; a == nil || a.Received != 2 || a.Required != 2 || len(a.By) != 2 || a.By[0].Email != "ada@example.com" || a.By[1].Email != "bob@example.com" {
		t.Errorf("decided approvals = %+v, want 2 of 2 by ada then bob", a)
	}
	if n := len(h.webhook.countedEvents(id)); n != 1 {
		t.Errorf("%d approval_counted events, want one (the second approval is the decision)", n)
	}
}

// TestQuorumConcurrentCountsAnnounceOnce: three approvers of a quorum of
// three at once: each count is announced once (1 of 3 and 2 of 3, by
// different people), and the decision once.
func TestQuorumConcurrentCountsAnnounceOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": strings.Replace(quorumPolicy, `"required": 2`, `"required": 3`, 1)}})
	id, link := pauseQuorum(h, "31")
	browsers := []*approverBrowser{newApproverBrowser(h, "ada@example.com"), newApproverBrowser(h, "bob@example.com"), newApproverBrowser(h, "cy@example.com")}
	pages := make([]result, len(browsers))
	for i, b := range browsers {
		pages[i] = b.open(link)
	}
	codes := parallel(len(browsers), func(i int) int { return browsers[i].press(pages[i], "approve").status })
	if codes[http.StatusOK] != 3 {
		t.Fatalf("answers %v, want all three counted", codes)
	}
	dec := decidedOnce(h, id)
	if a := dec.Confirmation.Approvals; a == nil || a.Received != 3 || a.Required != 3 {
		t.Fatalf("decided approvals %+v, want 3 of 3", a)
	}
	counted := h.webhook.countedEvents(id)
	if len(counted) != 2 {
		t.Fatalf("%d approval_counted events, want 2", len(counted))
	}
	var received []int
	who := map[string]bool{}
	for _, ev := range counted {
		a := ev.Confirmation.Approvals
		received = append(received, a.Received)
		who[a.By[a.Received-1].Email] = true
	}
	slices.Sort(received)
	if !slices.Equal(received, []int{1, 2}) || len(who) != 2 {
		t.Errorf("counts announced %v by %v, want 1 and 2 by two people", received, who)
	}
}

// endpointRulesPolicy keeps a quorum of two on DELETE only; its GET and
// POST, also confirmed, need one approval.
const endpointRulesPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [
    {"method": "GET", "path": "/contacts/{id}", "confirm": true},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "approval": {"required": 2}},
    {"method": "POST", "path": "/payments", "confirm": true}
  ]
}`

// TestEndpointQuorum: an endpoint's approval.required applies to calls to
// it only: DELETE stays pending after one approval and is approved by a
// second person; GET and POST of the same connection are approved by one.
func TestEndpointQuorum(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": endpointRulesPolicy}})
	id, link := pauseQuorum(h, "41")
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "pending" || st.get("approvals.received") != 1.0 || st.get("approvals.required") != 2.0 {
		t.Fatalf("DELETE after one approval: %s", st.body)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	if s := h.statusOf("cs_test_program", id); s != "approved" {
		t.Fatalf("DELETE after two approvals: %s", s)
	}

	for _, c := range []map[string]any{
		{"connection": "team", "method": "GET", "path": "/contacts/41", "intent": "write"},
		{"connection": "team", "method": "POST", "path": "/payments", "body": map[string]any{"amount": 5}, "intent": "write"},
	} {
		r := h.call("cs_test_program", c)
		expect(t, r, http.StatusAccepted, "")
		id := r.str("confirmation.id")
		link := h.approvalLink(id)
		cy := newApproverBrowser(h, "cy@example.com")
		page := cy.open(link)
		if strings.Contains(visibleText(page.body), "of 2 approvals") {
			t.Errorf("%s %s asks for a quorum:\n%s", c["method"], c["path"], visibleText(page.body))
		}
		expect(t, cy.press(page, "approve"), http.StatusOK, "")
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
		if st.str("status") != "approved" || st.get("approvals") != nil {
			t.Errorf("%s %s after one approval: %s", c["method"], c["path"], st.body)
		}
		if n := len(h.webhook.countedEvents(id)); n != 0 {
			t.Errorf("%s %s: %d approval_counted events, want none", c["method"], c["path"], n)
		}
	}
}

// TestEndpointFourEyes: an endpoint's approval.separate_approver applies
// to calls to it only: ann's DELETE is not asked in her client and she
// cannot approve it on the page, bob can; her POST to the same connection
// is asked in her client and runs once she accepts.
func TestEndpointFourEyes(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "approval": {"separate_approver": true}},
    {"method": "POST", "path": "/payments", "confirm": true}
  ]
}`}})
	s, asked := h.askingPerson("ann@example.com", "Ann's client")
	res := callTool(t, s, "team__delete_contacts_by_id", map[string]any{"id": "77"}, nil)
	id, _ := structured(t, res)["confirmation_id"].(string)
	if *asked != 0 || id == "" || h.upstream.Count("DELETE", "/contacts/77") != 0 {
		t.Fatalf("DELETE: asked %d times, result %q; want paused for the approvers, nothing run", *asked, text(res))
	}
	link := h.approvalLink(id)
	ann := newApproverBrowser(h, "ann@example.com")
	if page := ann.open(link); strings.Contains(string(page.body), `name="decision"`) || !strings.Contains(visibleText(page.body), "You made this call") {
		t.Fatalf("ann's own page offers the decision or does not say why:\n%s", visibleText(page.body))
	}
	if got := ann.refusedPost(link, "approve"); got.status != http.StatusForbidden || h.upstream.Count("DELETE", "/contacts/77") != 0 {
		t.Fatalf("ann's own approval: %d, want 403 and nothing run", got.status)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	for deadline := time.Now().Add(10 * time.Second); h.upstream.Count("DELETE", "/contacts/77") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.upstream.Count("DELETE", "/contacts/77"); n != 1 {
		t.Fatalf("after bob approved, DELETE ran %d times, want once", n)
	}

	callTool(t, s, "team__post_payments", map[string]any{"body": map[string]any{"amount": 5}}, nil)
	if *asked != 1 || h.upstream.Count("POST", "/payments") != 1 {
		t.Errorf("POST: asked %d times, ran %d times; want asked in the client once and run once", *asked, h.upstream.Count("POST", "/payments"))
	}
}

// TestScriptBatchTakesStrictestRules: a script batch holding a DELETE
// under a quorum of two and a POST needing one is decided as its
// strictest operation asks: pending after one approval, approved after a
// second person's; the count is announced to the webhooks.
func TestScriptBatchTakesStrictestRules(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": endpointRulesPolicy}})
	r := h.script("cs_test_ask", `const d = call('team', 'DELETE', '/contacts/51');
const p = call('team', 'POST', '/payments', {body: {amount: 5}});
({d, p})`, "")
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	if r.str("confirmation.kind") != "script" || len(r.get("confirmation.operations").([]any)) != 2 {
		t.Fatalf("answer %s, want one batch of both calls", r.body)
	}
	link := h.approvalLink(id)
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
	ev := h.webhook.waitEvent(t, notify.TypeApprovalCounted, id)
	if a := ev.Confirmation.Approvals; a == nil || a.Required != 2 || a.Received != 1 {
		t.Fatalf("batch count %+v, want 1 of 2", a)
	}
	if s := h.statusOf("cs_test_ask", id); s != "pending" {
		t.Fatalf("batch after one approval: %s", s)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	h.webhook.waitEvent(t, notify.TypeExecuted, id)
	if h.upstream.Count("DELETE", "/contacts/51") != 1 || h.upstream.Count("POST", "/payments") != 1 {
		t.Errorf("after two approvals: DELETE ran %d, POST %d; want each once", h.upstream.Count("DELETE", "/contacts/51"), h.upstream.Count("POST", "/payments"))
	}
}

// reconfigureLive is reconfigure keeping the approver webhooks and the
// links' base, as a deployment re-reading its configuration does.
func (h *harness) reconfigureLive(files map[string]string) {
	h.t.Helper()
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(h.configDir, rel), []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	cfg, err := config.Load(h.configDir, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	var channels []notify.Channel
	for _, w := range cfg.Settings.Approvers.Webhooks {
		channels = append(channels, &notify.Webhook{Approver: w.Name, URL: w.URL, Format: w.Format, Secret: w.Secret,
			Backoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}})
	}
	h.stack.app.Apply(app.Live{Config: cfg, Channels: channels, PublicURL: h.stack.PublicURL})
}

// TestRulesKeptFromThePause: a confirmation keeps the quorum in force
// when its call paused. One paused under a quorum of two still needs two
// after the configuration drops it; one paused without a quorum is
// decided by one approval after the configuration adds it; calls made
// after the change follow the new configuration.
func TestRulesKeptFromThePause(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": quorumPolicy}})
	upstreamURL := h.stack.Config.Connections["crm"].BaseURL
	setTeam := func(policy string) {
		h.reconfigureLive(map[string]string{"connections/team/policy.json": strings.ReplaceAll(policy, "%UPSTREAM%", upstreamURL)})
	}
	noQuorum := strings.Replace(quorumPolicy, `"required": 2`, `"out_of_band_only": false`, 1)

	before, link := pauseQuorum(h, "61")
	setTeam(noQuorum)
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
	st := h.do(http.MethodGet, "/v1/confirmations/"+before, "cs_test_program", nil, nil)
	if st.str("status") != "pending" || st.get("approvals.required") != 2.0 || st.get("approvals.received") != 1.0 {
		t.Fatalf("paused under a quorum of 2, approved once after the quorum was dropped: %s", st.body)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	if s := h.statusOf("cs_test_program", before); s != "approved" {
		t.Fatalf("after the second approval: %s", s)
	}

	after, link := pauseQuorum(h, "62")
	setTeam(quorumPolicy)
	cy := newApproverBrowser(h, "cy@example.com")
	expect(t, cy.press(cy.open(link), "approve"), http.StatusOK, "")
	if s := h.statusOf("cs_test_program", after); s != "approved" {
		t.Fatalf("paused without a quorum, approved once after one was added: %s", s)
	}

	// A call made now follows the quorum in force.
	now, link := pauseQuorum(h, "63")
	expect(t, cy.press(cy.open(link), "approve"), http.StatusOK, "")
	if st := h.do(http.MethodGet, "/v1/confirmations/"+now, "cs_test_program", nil, nil); st.str("status") != "pending" || st.get("approvals.required") != 2.0 {
		t.Fatalf("a call paused under the new quorum, approved once: %s", st.body)
	}
}

// TestPeopleRulesOverrideTheChoice: a key whose choice runs confirm-tier
// calls without asking (run_without_asking, ask_agent) still pauses where
// the endpoint asks for people: its DELETE under a quorum waits for two
// approvals and nothing reaches the upstream before; its POST, with no such
// rule, runs at once as the choice says.
func TestPeopleRulesOverrideTheChoice(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": endpointRulesPolicy}})
	for _, key := range []string{"cs_test_run", "cs_test_agent"} {
		r := h.call(key, map[string]any{"connection": "team", "method": "DELETE", "path": "/contacts/43", "intent": "write"})
		expect(t, r, http.StatusAccepted, "")
		if !strings.Contains(r.str("reason"), "requires the approval of 2 people") {
			t.Errorf("%s: reason %q, want the quorum named", key, r.str("reason"))
		}
		if n := h.upstream.Count("DELETE", "/contacts/43"); n != 0 {
			t.Fatalf("%s: DELETE ran %d times with nobody asked", key, n)
		}
	}
	expect(t, h.call("cs_test_run", map[string]any{"connection": "team", "method": "POST", "path": "/payments",
		"body": map[string]any{"amount": 5}, "intent": "write"}), http.StatusOK, "")
}
