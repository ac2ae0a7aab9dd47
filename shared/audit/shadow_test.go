package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
)

// TestShadowCountsTheCandidateInForce: differences name their candidate
// (Subject: its digest). Within one window, a second candidate's
// difference identical to the first's but for that is a record of its
// own, not a repeat; the summary counts the candidate asked for (or, with
// none, the newest difference's) and says how many others it left out.
func TestShadowCountsTheCandidateInForce(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tr := &audit.Trail{Store: st, Now: func() time.Time { return now }}
	const older, newer = "sha256:aaaa", "sha256:bbbb"
	diff := func(candidate, cred string) countersign.AuditRecord {
		return countersign.AuditRecord{Chain: audit.ChainOf(cred), Actor: "system", Action: audit.ActionShadowDiffers, Subject: candidate,
			Credential: cred, Connection: "crm", Method: "DELETE", Path: "/contacts/{id}", Tier: "confirm", Rule: "connections/crm/policy.json endpoints[4]",
			Outcome: "live pause (confirm); candidate deny blocked (never)", Reason: audit.ShadowReason("candidate/connections/crm/policy.json endpoints[4]")}
	}
	for range 3 {
		tr.Record(ctx, diff(older, "chat-user"))
	}
	now = now.Add(time.Second) // the same window
	tr.Record(ctx, diff(newer, "chat-user"))
	tr.Record(ctx, diff(newer, "runner"))
	tr.Flush(ctx)

	for _, tt := range []struct {
		name, digest, want  string
		differences, others int
		byCred              map[string]int
	}{
		{"the candidate in force", newer, newer, 2, 3, map[string]int{"chat-user": 1, "runner": 1}},
		{"an earlier candidate", older, older, 3, 2, map[string]int{"chat-user": 3}},
		{"none known: the newest", "", newer, 2, 3, map[string]int{"chat-user": 1, "runner": 1}},
		{"one that made none", "sha256:cccc", "sha256:cccc", 0, 5, map[string]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := audit.Shadow(ctx, st, "candidate", tt.digest)
			if err != nil {
				t.Fatal(err)
			}
			if sum.CandidateDigest != tt.want || sum.Differences != tt.differences || sum.Older != tt.others ||
				len(sum.ByCredential) != len(tt.byCred) || sum.ByEndpoint["DELETE /contacts/{id} on crm"] != tt.differences {
				t.Fatalf("summary %+v", sum)
			}
			n := 0
			for cred, c := range tt.byCred {
				if sum.ByCredential[cred] != c {
					t.Fatalf("%s: %d differences, want %d (%+v)", cred, sum.ByCredential[cred], c, sum)
				}
			}
			for _, e := range sum.Examples {
				n += e.Count
			}
			if n != tt.differences {
				t.Fatalf("examples count %d, want %d: %+v", n, tt.differences, sum.Examples)
			}
		})
	}
	if rep, err := audit.Verify(ctx, st); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
