package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestRecordsFromManyWritersAndTwoProcessesAreSealedOnce: two trails on one
// store (two processes of a deployment) record 50 records of one chain at
// once, 25 goroutines each. No writer waits on another to write its
// record; every record ends up sealed exactly once, numbered 1 to 50
// without a gap, nothing stays pending, and the chain verifies. Then
// deleting or editing a sealed record breaks verification.
func TestRecordsFromManyWritersAndTwoProcessesAreSealedOnce(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	chain := audit.ChainOf("busy")
	// Two processes cannot hold an embedded file at once: twoSteps hides
	// its one-transaction add, so the trails race as two processes do.
	trails := []*audit.Trail{{Store: twoSteps{st}}, {Store: twoSteps{st}}}
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Go(func() {
			trails[w%2].Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "busy", Action: "call.paused",
				Subject: fmt.Sprintf("cf_%02d", w), Credential: "busy"})
		})
	}
	wg.Wait()
	// A sealer that lost its last round to the other leaves records
	// pending for the next append; audit --verify seals them.
	if err := trails[0].Seal(ctx, chain); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	subjects := map[string]bool{}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if subjects[r.Subject] {
			t.Errorf("%s sealed twice", r.Subject)
		}
		subjects[r.Subject] = true
	}
	if len(recs) != 50 || len(subjects) != 50 {
		t.Fatalf("%d records sealed (%d subjects), want 50", len(recs), len(subjects))
	}
	if p, err := st.PendingAudit(ctx, chain, 1000); err != nil || len(p) != 0 {
		t.Fatalf("pending after the seal: %d, %v", len(p), err)
	}
	rep := verifyOK(t, st, time.Now())
	for _, c := range rep.Chains {
		if c.Chain == chain && (c.Records != 50 || c.Head.Seq != 50 || c.Pending != 0) {
			t.Errorf("chain report %+v, want 50 records, head 50, none pending", c)
		}
	}

	edited := *recs[9]
	edited.Outcome = "nothing happened"
	if err := rawPut(st, &edited); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(ctx, st); err != nil || rep.OK() {
		t.Fatalf("an edited sealed record verified: %v, %+v", err, rep)
	}
	if err := rawPut(st, recs[9]); err != nil {
		t.Fatal(err)
	}
	if err := rawDelete(st, chain, 20); err != nil {
		t.Fatal(err)
	}
	rep, err = audit.Verify(ctx, st)
	if err != nil || rep.OK() || rep.Breaks()[0].Seq != 20 {
		t.Fatalf("a deleted sealed record: %v, %+v; want a break at record 20", err, rep)
	}
}

// BenchmarkRecordOneChain records to one chain from 20 goroutines: the
// embedded store's one-transaction add (Record, chained), the sealed path
// of a shared store (Record: write on its own, sealed by one goroutine at a
// time) and the old conditional append (Append: every writer reads the end
// and races for the next slot) in the same run.
func BenchmarkRecordOneChain(b *testing.B) {
	for _, tc := range []struct {
		name   string
		record func(tr *audit.Trail, r countersign.AuditRecord)
	}{
		{"record-chained", func(tr *audit.Trail, r countersign.AuditRecord) { tr.Record(context.Background(), r) }},
		{"record-and-seal", func(tr *audit.Trail, r countersign.AuditRecord) { tr.Record(context.Background(), r) }},
		{"conditional-append", func(tr *audit.Trail, r countersign.AuditRecord) {
			if _, err := tr.Append(context.Background(), r); err != nil {
				b.Error(err)
			}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := embedded.Open(filepath.Join(b.TempDir(), "db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			tr := &audit.Trail{Store: st}
			if tc.name == "record-and-seal" {
				tr.Store = twoSteps{st}
			}
			b.SetParallelism(10)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tc.record(tr, countersign.AuditRecord{Chain: audit.ChainOf("busy"), Actor: "busy", Action: "call.paused"})
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// twoSteps is a store without the embedded store's one-transaction add
// (AddAuditChained): its records are added pending, then sealed, as on a
// store that several processes share.
type twoSteps struct{ audit.Store }

// TestOneDurableWritePerRecord: on the embedded store (one process holds
// the file) a record is numbered, hashed into its chain and written with
// the head in one commit, with nothing pending. 40 writers of one chain at
// once take no more commits than records and make one unbroken chain. A
// record left pending by a process that stopped before sealing it is
// sealed first, in time order, by the next record, which then goes
// through the two steps; the one after is one write again.
func TestOneDurableWritePerRecord(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	tr := &audit.Trail{Store: st}
	chain := audit.ChainOf("agent")
	before := st.Stats()
	for i := range 5 {
		tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "agent", Action: "call.paused", Subject: fmt.Sprintf("cf_%d", i)})
	}
	after := st.Stats()
	if w, c := after.Writes-before.Writes, after.Commits-before.Commits; w != 5 || c != 5 {
		t.Fatalf("5 records took %d writes in %d commits, want 5 in 5", w, c)
	}

	var wg sync.WaitGroup
	before = st.Stats()
	for w := range 40 {
		wg.Go(func() {
			tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "agent", Action: "call.paused", Subject: fmt.Sprintf("cf_w%d", w)})
		})
	}
	wg.Wait()
	after = st.Stats()
	if w, c := after.Writes-before.Writes, after.Commits-before.Commits; w != 40 || c > 40 {
		t.Fatalf("40 concurrent records took %d writes in %d commits, want 40 in at most 40", w, c)
	}

	// A record a stopped process added and never sealed.
	left := countersign.AuditRecord{Chain: chain, ID: "ar_left", Actor: "agent", Action: "call.paused", Subject: "cf_left", At: time.Now().Add(-time.Second).UTC()}
	if err := st.AddAudit(ctx, &left); err != nil {
		t.Fatal(err)
	}
	tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "agent", Action: "call.paused", Subject: "cf_after"})
	before = st.Stats()
	tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "agent", Action: "call.paused", Subject: "cf_last"})
	if w := st.Stats().Writes - before.Writes; w != 1 {
		t.Errorf("the record after the pending one was sealed took %d writes, want 1", w)
	}

	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 48 {
		t.Fatalf("%d records in the chain, want 48", len(recs))
	}
	subjects := map[string]bool{}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.ID == "" {
			t.Fatalf("record %d: seq %d, id %q", i, r.Seq, r.ID)
		}
		subjects[r.Subject] = true
	}
	if len(subjects) != 48 {
		t.Errorf("%d distinct records, want 48", len(subjects))
	}
	if got := []string{recs[45].Subject, recs[46].Subject, recs[47].Subject}; got[0] != "cf_left" || got[1] != "cf_after" || got[2] != "cf_last" {
		t.Errorf("the last three records are %v, want the one left pending first", got)
	}
	if p, err := st.PendingAudit(ctx, chain, 1000); err != nil || len(p) != 0 {
		t.Fatalf("pending: %d, %v", len(p), err)
	}
	verifyOK(t, st, time.Now())
}
