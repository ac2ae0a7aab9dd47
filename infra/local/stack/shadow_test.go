package stack

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withCandidatePolicy restarts the harness's stack with a candidate
// policy: a copy of its configuration in <config>/candidate where crm's
// DELETE /contacts/{id} is never instead of confirm, named by
// settings.json candidate_config.
func (h *harness) withCandidatePolicy() {
	h.t.Helper()
	h.stop()
	cand := filepath.Join(h.configDir, "candidate")
	err := filepath.WalkDir(h.configDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.configDir, p)
		if d.IsDir() {
			if rel == "candidate" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(cand, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == filepath.Join("connections", "crm", "policy.json") {
			b = []byte(strings.Replace(string(b), `"path": "/contacts/{id}", "confirm": true`, `"path": "/contacts/{id}", "confirm": "never"`, 1))
		}
		return os.WriteFile(filepath.Join(cand, rel), b, 0o644)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	settings := filepath.Join(h.configDir, "settings.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		h.t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"public_url"`, `"candidate_config": "candidate",
  "public_url"`, 1))
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.start()
}

// TestCandidatePolicyIsTriedNotEnforced: with a candidate policy that turns
// crm's DELETE /contacts/{id} from confirm to never, the live decision is
// enforced (the call pauses), and the difference is recorded once
// (repeats within a minute are counted into a summary written at the
// window's end, here at shutdown) and summarised by GET
// /v1/operator/shadow; a call both policies decide alike records nothing.
func TestCandidatePolicyIsTriedNotEnforced(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.withCandidatePolicy()

	for _, id := range []string{"5", "6", "7"} {
		expect(t, h.call("cs_test_ask", deleteContact(id)), http.StatusAccepted, "")
	}
	expect(t, h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusOK, "")

	s := h.operatorJSON(http.MethodGet, "/v1/operator/shadow", "")
	expect(t, s, http.StatusOK, "")
	const endpoint = "DELETE /contacts/{id} on crm"
	if s.str("candidate") != "candidate" || s.get("differences") != 1.0 || s.get("by_endpoint."+endpoint) != 1.0 ||
		s.get("by_credential.chat-user") != 1.0 || s.str("examples.0.differs") != "live pause (confirm); candidate deny blocked (never)" {
		t.Fatalf("shadow summary: %s", s.body)
	}
	expect(t, h.do(http.MethodGet, "/v1/operator/shadow", "cs_test_ask", nil, nil), http.StatusForbidden, "forbidden")
	expect(t, h.operatorJSON(http.MethodPost, "/v1/operator/shadow", ""), http.StatusMethodNotAllowed, "method_not_allowed")

	// The page: a link to the policy trial, which shows the difference.
	b := newBrowser(t, h)
	page := b.login(b.get("/operator"), operatorKey)
	if !strings.Contains(string(page.body), `href="/operator/shadow"`) {
		t.Fatalf("the operator page has no link to the policy trial:\n%s", page.body)
	}
	trial := b.get("/operator/shadow")
	if trial.status != http.StatusOK || !strings.Contains(string(trial.body), "would have decided otherwise: 1.") ||
		!strings.Contains(string(trial.body), "live pause (confirm); candidate deny blocked (never)") {
		t.Fatalf("the policy trial page: %d\n%s", trial.status, trial.body)
	}

	// At shutdown the window's summary is written: all three counted.
	h.restart()
	s = h.operatorJSON(http.MethodGet, "/v1/operator/shadow", "")
	if s.get("differences") != 3.0 || s.get("by_endpoint."+endpoint) != 3.0 {
		t.Fatalf("shadow summary after the window's summary: %s", s.body)
	}
}

// TestShadowSummaryCountsTheCandidateInForce: after the candidate changes
// (the same candidate_config path, other content), the summary counts
// the new candidate's differences alone, even one identical to an older
// candidate's but for the candidate, and says how many it left out.
func TestShadowSummaryCountsTheCandidateInForce(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.withCandidatePolicy()
	for _, id := range []string{"5", "6", "7"} {
		expect(t, h.call("cs_test_ask", deleteContact(id)), http.StatusAccepted, "")
	}
	h.restart() // the window's summary is written: three differences
	first := h.operatorJSON(http.MethodGet, "/v1/operator/shadow", "")
	if first.get("differences") != 3.0 || first.str("candidate_digest") == "" {
		t.Fatalf("the first candidate's summary: %s", first.body)
	}

	// The candidate changes: GET /contacts/{id} is never too.
	h.stop()
	p := filepath.Join(h.configDir, "candidate", "connections", "crm", "policy.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), `{"method": "GET",    "path": "/contacts/{id}"}`, `{"method": "GET",    "path": "/contacts/{id}", "confirm": "never"}`, 1)
	if changed == string(b) {
		t.Fatal("the candidate's GET /contacts/{id} not found")
	}
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	s := h.operatorJSON(http.MethodGet, "/v1/operator/shadow", "")
	if s.get("differences") != 0.0 || s.get("older") != 3.0 || s.str("candidate_digest") == first.str("candidate_digest") {
		t.Fatalf("the changed candidate before any call: %s", s.body)
	}

	expect(t, h.call("cs_test_ask", deleteContact("8")), http.StatusAccepted, "")
	expect(t, h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusOK, "")
	s = h.operatorJSON(http.MethodGet, "/v1/operator/shadow", "")
	if s.get("differences") != 2.0 || s.get("older") != 3.0 || s.get("by_endpoint.DELETE /contacts/{id} on crm") != 1.0 ||
		s.get("by_endpoint.GET /contacts/{id} on crm") != 1.0 || s.get("by_credential.chat-user") != 2.0 {
		t.Fatalf("the changed candidate's summary: %s", s.body)
	}
	b2 := newBrowser(t, h)
	b2.login(b2.get("/operator"), operatorKey)
	trial := b2.get("/operator/shadow")
	if trial.status != http.StatusOK || !strings.Contains(string(trial.body), "would have decided otherwise: 2.") ||
		!strings.Contains(string(trial.body), "3 differences an earlier candidate made are left out") {
		t.Fatalf("the policy trial page: %d\n%s", trial.status, trial.body)
	}
}
