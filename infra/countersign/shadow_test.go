package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestShadowLocal: countersign shadow prints the policy trial's summary
// from the local store: three identical differences (one record and a
// summary of two repeats) and another credential's one, counted per
// endpoint and per credential; a denial is not a difference, and an
// earlier candidate's difference is left out (and counted as such).
func TestShadowLocal(t *testing.T) {
	dir := t.TempDir()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tr := &audit.Trail{Store: st, Now: func() time.Time { return now }}
	diff := func(cred string) countersign.AuditRecord {
		return countersign.AuditRecord{Chain: audit.ChainOf(cred), Actor: "system", Action: audit.ActionShadowDiffers, Subject: "sha256:new",
			Credential: cred, Connection: "crm", Method: "DELETE", Path: "/contacts/{id}", Tier: "confirm", Rule: "connections/crm/policy.json endpoints[4]",
			Outcome: "live pause (confirm); candidate deny blocked (never)", Reason: audit.ShadowReason("candidate/connections/crm/policy.json endpoints[4]")}
	}
	earlier := diff("runner") // an earlier candidate's: left out
	earlier.Subject = "sha256:old"
	tr.Record(ctx, earlier)
	now = now.Add(time.Second)
	for range 3 {
		tr.Record(ctx, diff("chat-user"))
	}
	tr.Record(ctx, diff("runner"))
	tr.Record(ctx, countersign.AuditRecord{Chain: audit.ChainOf("runner"), Actor: "runner", Action: audit.ActionDenied, Credential: "runner", Outcome: "blocked"})
	tr.Flush(ctx)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	r := runCmd(t, "shadow", "--data", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "4 calls the candidate policy would have decided otherwise") ||
		!strings.Contains(r.stdout, "DELETE /contacts/{id} on crm  4") || !strings.Contains(r.stdout, "chat-user   3") ||
		!strings.Contains(r.stdout, "live pause (confirm); candidate deny blocked (never)") ||
		!strings.Contains(r.stdout, "the newest candidate: sha256:new") || !strings.Contains(r.stdout, "(1 differences earlier candidates made are left out)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "shadow", "--data", dir, "--json")
	var sum audit.ShadowSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != exitOK {
		t.Fatalf("--json: exit %d %v\n%s", r.code, err, r.stdout)
	}
	if sum.Differences != 4 || sum.Older != 1 || sum.CandidateDigest != "sha256:new" || sum.ByCredential["chat-user"] != 3 || sum.ByCredential["runner"] != 1 || len(sum.Examples) != 3 ||
		sum.Examples[0].Candidate != "candidate/connections/crm/policy.json endpoints[4]" {
		t.Fatalf("--json: %+v", sum)
	}
	if r := runCmd(t, "shadow", "--data", dir, "extra"); r.code != exitUsage {
		t.Fatalf("an extra argument: exit %d", r.code)
	}
}
