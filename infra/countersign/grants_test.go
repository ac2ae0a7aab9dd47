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

// TestGrantsListAndRevoke: grants list shows every grant (or one
// credential's) with how it stands; grants revoke deletes one, records it
// on the credential's trail, and a second revoke says there is none.
func TestGrantsListAndRevoke(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	createKey(t, "--id", "ops", "--data", dir)
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, g := range []*countersign.ApprovalGrant{
		{ID: "gr_a", Credential: "agent-1", Connection: "crm", Method: "DELETE", Endpoint: "/contacts/{id}", Confirmation: "cf_1",
			GrantedByPerson: &countersign.Person{Issuer: "i", Subject: "s", Email: "ada@example.com"}, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), MaxCalls: 3, CallsLeft: 2},
		{ID: "gr_b", Credential: "agent-2", Connection: "crm", Method: "DELETE", Endpoint: "/contacts/{id}", Confirmation: "cf_2",
			GrantedBy: "ops", CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), MaxCalls: 3, CallsLeft: 0},
	} {
		if err := st.CreateApprovalGrant(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	r := runCmd(t, "grants", "list", "--data", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "gr_a") || !strings.Contains(r.stdout, "2 of 3") || !strings.Contains(r.stdout, "ada@example.com") ||
		!strings.Contains(r.stdout, "spent") {
		t.Fatalf("grants list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "grants", "list", "--id", "agent-2", "--json", "--data", dir)
	var listed []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || listed[0]["id"] != "gr_b" || listed[0]["status"] != "spent" {
		t.Fatalf("grants list --id agent-2 --json: %v\n%s", err, r.stdout)
	}
	if r := runCmd(t, "grants", "revoke", "--data", dir); r.code != exitUsage {
		t.Errorf("revoke without --grant: exit %d", r.code)
	}
	if r := runCmd(t, "grants", "revoke", "--grant", "gr_a", "--data", dir); r.code != exitOK || !strings.Contains(r.stdout, "revoked gr_a") {
		t.Fatalf("revoke: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCmd(t, "grants", "revoke", "--grant", "gr_a", "--data", dir); r.code == exitOK || !strings.Contains(r.stderr, "no grant gr_a") {
		t.Errorf("revoke again: exit %d %s", r.code, r.stderr)
	}
	st, err = embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if gs, err := st.ApprovalGrantsOf(context.Background(), "agent-1"); err != nil || len(gs) != 0 {
		t.Errorf("agent-1's grants after revoke: %v, %v", gs, err)
	}
	recs, err := st.ListAudit(context.Background(), countersign.AuditQuery{Chain: audit.ChainOf("agent-1")})
	if err != nil || len(recs) != 1 || recs[0].Action != "grant.revoked" || recs[0].Subject != "gr_a" || recs[0].Actor != "cli" {
		t.Errorf("audit of the revocation: %+v, %v", recs, err)
	}
}
