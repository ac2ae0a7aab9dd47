package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestShadowCandidateDir: countersign shadow --config LIVE DIR decides
// every endpoint of either configuration for every live credential with
// both and prints each call the candidate decides otherwise: an endpoint
// turned from confirm to never, for the credentials that would have paused
// (and, at another tier, for one refused either way), and an endpoint only
// the candidate has. A broken candidate is reported by file and field, as
// validate reports it; the flags that do not go together are usage errors.
func TestShadowCandidateDir(t *testing.T) {
	cand := copyDir(t, tierTableDir)
	edit(t, cand, "connections/crm/policy.json", `{"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "operation_id": "deleteContact"}`,
		`{"method": "DELETE", "path": "/contacts/{id}", "confirm": "never", "operation_id": "deleteContact"}`)
	last := `{"method": "DELETE", "path": "/accounts/{id}", "confirm": "never", "escalate": [{"field": "body.amount", "above": 1, "escalate": "review"}]}`
	edit(t, cand, "connections/crm/policy.json", last, last+`,
    {"method": "GET",    "path": "/audit-log"}`)

	r := runCmd(t, "shadow", "--config", tierTableDir, "--credential", "chat-user", cand)
	if r.code != exitOK || !strings.Contains(r.stdout, "2 of 20 calls") ||
		!strings.Contains(r.stdout, "chat-user   DELETE /contacts/{id} on crm  pause (confirm)") ||
		!strings.Contains(r.stdout, "deny blocked (never)") || !strings.Contains(r.stdout, "GET /audit-log on crm") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = runCmd(t, "shadow", "--config", tierTableDir, "--json", cand)
	var rep shadowReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitOK {
		t.Fatalf("--json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	deleted := map[string]shadowDiff{}
	for _, d := range rep.Differences {
		if d.Endpoint == "/contacts/{id}" {
			deleted[d.Credential] = d
		}
	}
	if d := deleted["chat-user"]; d.Live != "pause (confirm)" || d.Candidate != "deny blocked (never)" ||
		!strings.HasPrefix(d.CandidateRule, "connections/crm/policy.json endpoints[5] DELETE /contacts/{id} confirm") {
		t.Errorf("chat-user's DELETE: %+v", d)
	}
	if d, ok := deleted["automation"]; !ok || d.Live != "execute (confirm)" {
		t.Errorf("automation's DELETE: %+v", d)
	}
	// Refused either way, but at another tier: a difference, as the
	// gateway records it.
	if d := deleted["reader-run"]; d.Live != "deny read_only (confirm)" || d.Candidate != "deny read_only (never)" {
		t.Errorf("reader-run's DELETE: %+v", d)
	}
	if rep.Calls != 20*11 {
		t.Errorf("%d calls decided, want 20 endpoints × 11 credentials", rep.Calls)
	}

	// No difference: the live configuration against itself.
	if r := runCmd(t, "shadow", "--config", tierTableDir, tierTableDir); r.code != exitOK || !strings.HasPrefix(r.stdout, "0 of ") {
		t.Errorf("itself: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	broken := copyDir(t, tierTableDir)
	edit(t, broken, "connections/crm/policy.json", `"confirm": "review"`, `"confirm": "sometimes"`)
	r = runCmd(t, "shadow", "--config", tierTableDir, broken)
	if r.code != exitFail || !strings.Contains(r.stderr, "connections/crm/policy.json") || !strings.Contains(r.stderr, "confirm") || r.stdout != "" {
		t.Errorf("a broken candidate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"shadow", cand},
		{"shadow", "--config", tierTableDir, "--data", t.TempDir(), cand},
		{"shadow", "--config", tierTableDir, cand, "extra"},
		{"shadow", "--config", tierTableDir},
	} {
		if r := runCmd(t, args...); r.code != exitUsage {
			t.Errorf("%q: exit %d, want usage\n%s", args, r.code, r.stderr)
		}
	}
	if r := runCmd(t, "shadow", "--config", tierTableDir, "--credential", "nobody", cand); r.code != exitFail || !strings.Contains(r.stderr, `no credential "nobody"`) {
		t.Errorf("an unknown credential: exit %d\n%s", r.code, r.stderr)
	}
}
