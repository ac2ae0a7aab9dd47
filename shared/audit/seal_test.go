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
	trails := []*audit.Trail{{Store: st}, {Store: st}}
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
// sealed path (Record: write on its own, sealed by one goroutine at a time)
// against the old conditional append (Append: every writer reads the end
// and races for the next slot) in the same run.
func BenchmarkRecordOneChain(b *testing.B) {
	for _, tc := range []struct {
		name   string
		record func(tr *audit.Trail, r countersign.AuditRecord)
	}{
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
