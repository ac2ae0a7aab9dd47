package embedded_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store"
)

// TestAuditAlongConfirmationWrites: an audit record carried by the context
// (audit.Trail.Along) is chained in the same transaction as the
// confirmation write it goes with, one commit for both, built from the
// record as stored. A write that fails writes neither and the Along is not
// done; nor is it when the builder declines, or when the chain has
// pending records (the caller then records on its own, after them). The
// chain verifies throughout.
func TestAuditAlongConfirmationWrites(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	ctx := context.Background()
	tr := &audit.Trail{Store: st}
	chain := audit.ChainOf("agent")
	build := func(action string) func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		return func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
			return countersign.AuditRecord{Chain: chain, Actor: "agent", Action: action, Subject: c.ID, Outcome: string(c.Status)}, true
		}
	}
	records := func() []*countersign.AuditRecord {
		t.Helper()
		rs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	now := time.Now()
	c := &countersign.Confirmation{ID: "cf_1", Kind: countersign.KindCall, Credential: "agent", Status: countersign.StatusPending,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/1"}}}

	before := st.Stats()
	actx, along := tr.Along(ctx, build("call.paused"))
	if err := st.CreateConfirmation(actx, c); err != nil {
		t.Fatal(err)
	}
	if d := st.Stats(); !along.Done() || d.Commits-before.Commits != 1 || d.Writes-before.Writes != 1 {
		t.Fatalf("create with its record: done %v, %d writes in %d commits; want done, 1 in 1", along.Done(), d.Writes-before.Writes, d.Commits-before.Commits)
	}
	if rs := records(); len(rs) != 1 || rs[0].Action != "call.paused" || rs[0].Subject != "cf_1" || rs[0].Seq != 1 || rs[0].ID == "" {
		t.Fatalf("records after the create: %+v", rs)
	}
	// The Along is spent: a second write with the same context writes no record.
	c.Status = countersign.StatusApproved
	if err := st.UpdateConfirmation(actx, c); err != nil {
		t.Fatal(err)
	}
	if n := len(records()); n != 1 {
		t.Fatalf("a spent Along wrote again: %d records", n)
	}

	// A write that loses its condition writes neither.
	stale := *c
	stale.Version--
	actx, along = tr.Along(ctx, build("confirmation.approved"))
	if err := st.UpdateConfirmation(actx, &stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale update: %v, want a conflict", err)
	}
	if along.Done() || len(records()) != 1 {
		t.Fatalf("a failed write: done %v, %d records; want neither", along.Done(), len(records()))
	}

	// The record is built from the confirmation as stored.
	c.Status = countersign.StatusExecuted
	actx, along = tr.Along(ctx, build("confirmation.redeemed"))
	if err := st.UpdateConfirmation(actx, c); err != nil {
		t.Fatal(err)
	}
	if rs := records(); !along.Done() || len(rs) != 2 || rs[1].Outcome != "executed" || rs[1].Prev != rs[0].Hash {
		t.Fatalf("records after the update: done %v, %+v", along.Done(), rs)
	}

	// A builder that declines: the write is made, no record.
	actx, along = tr.Along(ctx, func(*countersign.Confirmation) (countersign.AuditRecord, bool) {
		return countersign.AuditRecord{}, false
	})
	if err := st.UpdateConfirmation(actx, c); err != nil {
		t.Fatal(err)
	}
	if along.Done() || len(records()) != 2 {
		t.Fatalf("a declined record: done %v, %d records", along.Done(), len(records()))
	}

	// A pending record (a process stopped before sealing it): the write is
	// made, the record is left to the caller, which seals after it.
	left := countersign.AuditRecord{Chain: chain, ID: "ar_left", Actor: "agent", Action: "call.paused", Subject: "cf_0", At: now}
	if err := st.AddAudit(ctx, &left); err != nil {
		t.Fatal(err)
	}
	actx, along = tr.Along(ctx, build("confirmation.redeemed"))
	if err := st.UpdateConfirmation(actx, c); err != nil {
		t.Fatal(err)
	}
	if along.Done() {
		t.Fatal("a record went past a pending one")
	}
	tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "agent", Action: "confirmation.redeemed", Subject: "cf_1"})
	if rs := records(); len(rs) != 4 || rs[2].Subject != "cf_0" || rs[3].Subject != "cf_1" {
		t.Fatalf("records after the pending one was sealed: %+v", rs)
	}
	if rep, err := audit.Verify(ctx, st); err != nil || !rep.OK() {
		t.Fatalf("verify: %v, %+v", err, rep)
	}
}

// TestTakeQuotaAlong: a quota's use carried by the context is counted in
// the transaction that creates the confirmation it counts; when the quota
// is full that creation fails with the quota's refusal and writes nothing,
// neither the confirmation nor its audit record.
func TestTakeQuotaAlong(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	ctx := context.Background()
	tr := &audit.Trail{Store: st}
	now := time.Now()
	create := func(id string) error {
		qctx, _ := st.TakeQuotaAlong(ctx, "confirmations:agent", 1, now, now.Add(time.Hour))
		actx, _ := tr.Along(qctx, func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
			return countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent", Action: "call.paused", Subject: c.ID}, true
		})
		return st.CreateConfirmation(actx, &countersign.Confirmation{ID: id, Kind: countersign.KindCall, Credential: "agent",
			Status: countersign.StatusPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Operations: []countersign.Operation{{Method: "DELETE"}}})
	}
	before := st.Stats()
	if err := create("cf_1"); err != nil {
		t.Fatal(err)
	}
	if d := st.Stats(); d.Commits-before.Commits != 1 {
		t.Fatalf("the use, the confirmation and its record took %d commits, want 1", d.Commits-before.Commits)
	}
	var full *store.QuotaFullError
	if err := create("cf_2"); !errors.As(err, &full) {
		t.Fatalf("a creation over the quota: %v, want a QuotaFullError", err)
	}
	if _, err := st.GetConfirmation(ctx, "cf_2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused confirmation was stored: %v", err)
	}
	if rs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.ChainOf("agent")}); err != nil || len(rs) != 1 || rs[0].Subject != "cf_1" {
		t.Fatalf("records after the refusal: %+v, %v; want cf_1's alone", rs, err)
	}
	if err := st.TakeQuota(ctx, "confirmations:agent", 2, now, now.Add(time.Hour)); err != nil {
		t.Fatalf("the refused creation counted a use: %v", err)
	}
}
