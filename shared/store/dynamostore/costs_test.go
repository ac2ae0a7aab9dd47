package dynamostore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store/dynamostore"
)

// TestCostOfEachOperation runs each store operation once against DynamoDB
// (dynalite) with ReturnConsumedCapacity and prints, per operation, the
// requests it makes (round trips), the read and write units the table
// reports, and the failed conditional writes (DynamoDB charges each one
// write unit; dynalite reports none). docs/dynamodb-costs.md holds its
// output. Index writes (gsi1, gsi2) are not in dynalite's figures; the doc
// counts them. It fails if an operation makes no request at all (the meter
// is broken) or a listing page costs more than one Query plus one read per
// item.
func TestCostOfEachOperation(t *testing.T) {
	ctx := context.Background()
	_, table := newTable(t)
	m := newMeter()
	client := meteredClient(m.meter)
	st := dynamostore.New(client, table, nil)
	now := time.Now().UTC()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cred := countersign.Credential{ID: "chat-user", KeyHash: strings.Repeat("ab", 32), Choice: 1}
	conf := &countersign.Confirmation{ID: "cf_cost", Kind: countersign.KindCall, Credential: cred.ID, Status: countersign.StatusPending,
		CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), TTL: now.Add(48 * time.Hour).Unix(),
		Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Endpoint: "/contacts/{id}", Binding: strings.Repeat("b", 64)}}}
	steps := []struct {
		name string
		run  func()
	}{
		{"PutCredential", func() { must(st.PutCredential(ctx, cred)) }},
		{"CredentialByKeyHash (every call)", func() { _, err := st.CredentialByKeyHash(ctx, cred.KeyHash); must(err) }},
		{"TakeQuota, a free slot (every pause)", func() { must(st.TakeQuota(ctx, "confirmations:"+cred.ID, 20, now, now.Add(10*time.Minute))) }},
		{"CreateConfirmation (every pause)", func() { must(st.CreateConfirmation(ctx, conf)) }},
		{"GetConfirmation", func() { _, err := st.GetConfirmation(ctx, conf.ID); must(err) }},
		{"PutTaskToken (1 KB)", func() { must(st.PutTaskToken(ctx, conf.ID, strings.Repeat("t", 1024), conf.TTL)) }},
		{"UpdateConfirmation, first transition", func() {
			conf.Status = countersign.StatusApproved
			must(st.UpdateConfirmation(ctx, conf))
		}},
		{"UpdateConfirmation, later transition", func() {
			conf.Status = countersign.StatusRedeemed
			must(st.UpdateConfirmation(ctx, conf))
		}},
		{"AppendAudit (record and head)", func() {
			must(st.AppendAudit(ctx, &countersign.AuditRecord{Chain: "cred:chat-user", Seq: 1, At: now, Actor: cred.ID, Action: "call.paused",
				Subject: conf.ID, Hash: strings.Repeat("h", 64)}))
		}},
		{"AddAudit (every recorded event)", func() {
			must(st.AddAudit(ctx, &countersign.AuditRecord{Chain: "cred:chat-user", ID: "ar_cost", At: now, Actor: cred.ID, Action: "call.paused", Subject: conf.ID}))
		}},
		{"PendingAudit (a batch)", func() { _, err := st.PendingAudit(ctx, "cred:chat-user", 100); must(err) }},
		{"SealAudit, a batch of 1 (record, pending delete, head)", func() {
			p, err := st.PendingAudit(ctx, "cred:chat-user", 1)
			must(err)
			r := p[0].Record
			r.Seq, r.Hash = 2, strings.Repeat("s", 64)
			_, err = st.SealAudit(ctx, []*countersign.AuditRecord{&r}, []string{p[0].Key})
			must(err)
		}},
		{"LastAudit", func() { _, err := st.LastAudit(ctx, "cred:chat-user"); must(err) }},
		{"ListConfirmations, a page of 1", func() {
			_, err := st.ListConfirmations(ctx, countersign.ListQuery{Status: countersign.StatusRedeemed, Limit: 1})
			must(err)
		}},
		{"ListCredentials, a page of 1", func() { _, err := st.ListCredentials(ctx, countersign.ListQuery{Limit: 1}); must(err) }},
		{"AuditChains, a page of 1", func() { _, err := st.AuditChains(ctx, countersign.ListQuery{Limit: 1}); must(err) }},
		{"AddCount (each call of an endpoint with a rate rule)", func() {
			_, err := st.AddCount(ctx, "rate:cost", now.Add(10*time.Minute))
			must(err)
		}},
		{"CreateApprovalGrant (an approval with remember)", func() {
			must(st.CreateApprovalGrant(ctx, &countersign.ApprovalGrant{ID: "gr_cost", Credential: cred.ID, Connection: "crm", Method: "DELETE",
				Endpoint: "/contacts/{id}", Confirmation: conf.ID, GrantedBy: "ops", CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), MaxCalls: 3, CallsLeft: 3}))
		}},
		{"UseApprovalGrant (a paused call of a remember endpoint)", func() {
			_, err := st.UseApprovalGrant(ctx, cred.ID, "crm", "DELETE", "/contacts/{id}", now)
			must(err)
		}},
		{"ApprovalGrantsOf (GET /v1/grants)", func() { _, err := st.ApprovalGrantsOf(ctx, cred.ID); must(err) }},
		{"ListApprovalGrants, a page of 1", func() { _, err := st.ListApprovalGrants(ctx, countersign.ListQuery{Limit: 1}); must(err) }},
		{"DeleteApprovalGrant (revocation)", func() { _, err := st.DeleteApprovalGrant(ctx, "gr_cost"); must(err) }},
		{"TakeQuota, refused (limit 1 held)", func() {
			_ = st.TakeQuota(ctx, "full:"+cred.ID, 1, now, now.Add(time.Minute))
			m.begin("TakeQuota, refused (limit 1 held)")
			if err := st.TakeQuota(ctx, "full:"+cred.ID, 1, now, now.Add(time.Minute)); err == nil {
				t.Fatal("a full quota took another use")
			}
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| operation | requests | write units | read units |\n| --- | --- | --- | --- |\n")
	for _, s := range steps {
		m.begin(s.name)
		s.run()
		m.mu.Lock()
		ops := m.ops[s.name]
		fmt.Fprintf(&b, "| %s | %d: %s | %g | %g |\n", s.name, len(ops), strings.Join(ops, ", "), m.writes[s.name], m.reads[s.name])
		if len(ops) == 0 {
			t.Errorf("%s made no metered request", s.name)
		}
		m.mu.Unlock()
	}
	t.Logf("DynamoDB cost of each store operation (dynalite, ReturnConsumedCapacity TOTAL; index writes not included):\n%s\nfailed conditional writes (1 WRU each on DynamoDB): %q", b.String(), m.missed)
}
