package audit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// shardedStore is the embedded store declaring shards (audit.Sharded), as
// the DynamoDB store does.
type shardedStore struct {
	*embedded.Store
	shards int
}

func (s shardedStore) AuditShards() int { return s.shards }

func TestBaseOf(t *testing.T) {
	for _, tc := range []struct {
		shard, base string
		k           int
	}{
		{"cred:a", "cred:a", 0},
		{"cred:a#3", "cred:a", 3},
		{"calls:a.b@c#15", "calls:a.b@c", 15},
		{"cred:a#16", "cred:a#16", 0}, // beyond MaxShards: not a shard's name
		{"cred:a#0", "cred:a#0", 0},
		{"cred:a#03", "cred:a#03", 0},
		{"cred:a#x", "cred:a#x", 0},
		{"system", "system", 0},
	} {
		base, k := audit.BaseOf(tc.shard)
		if base != tc.base || k != tc.k {
			t.Errorf("BaseOf(%q) = %q, %d; want %q, %d", tc.shard, base, k, tc.base, tc.k)
		}
		if k != 0 && audit.ShardOf(base, k) != tc.shard {
			t.Errorf("ShardOf(%q, %d) = %q, want %q", base, k, audit.ShardOf(base, k), tc.shard)
		}
	}
}

// TestRecordsOfOneCredentialSpreadOverShards: 80 records of one credential
// from 20 goroutines on a store of 4 shards land in more than one shard,
// each shard a chain of its own that verifies; ListChain merges them back
// into one list (each record once, by time, shard, Seq). Editing,
// deleting or swapping records in a shard other than 0 breaks that shard.
func TestRecordsOfOneCredentialSpreadOverShards(t *testing.T) {
	ctx := context.Background()
	st := shardedStore{Store: open(t), shards: 4}
	tr := &audit.Trail{Store: st}
	chain := audit.ChainOf("busy")
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 4 {
				tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "busy", Action: "call.paused", Subject: fmt.Sprintf("cf_%02d_%d", g, i)})
			}
		})
	}
	wg.Wait()
	chains, err := audit.Chains(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chains {
		if err := tr.Seal(ctx, c); err != nil {
			t.Fatal(err)
		}
		if base, _ := audit.BaseOf(c); base != chain {
			t.Errorf("chain %q is not a shard of %q", c, chain)
		}
	}
	if len(chains) < 2 {
		t.Fatalf("80 records landed in %v: want more than one shard", chains)
	}
	rep := verifyOK(t, st, time.Now())
	total := 0
	for _, c := range rep.Chains {
		total += c.Records
	}
	if total != 80 {
		t.Fatalf("%d records sealed across %d shards, want 80", total, len(rep.Chains))
	}
	all, err := audit.ListChain(ctx, st, chain, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	subjects := map[string]bool{}
	for _, r := range all {
		subjects[r.Subject] = true
	}
	if len(all) != 80 || len(subjects) != 80 {
		t.Fatalf("ListChain: %d records, %d subjects; want 80 each once", len(all), len(subjects))
	}
	if !slices.IsSortedFunc(all, audit.CompareMerged) {
		t.Error("ListChain is not in merged order")
	}
	newest, err := audit.ListChain(ctx, st, chain, 5, true)
	if err != nil || len(newest) != 5 || newest[0].Subject != all[79].Subject {
		t.Fatalf("the newest 5: %d records, %v; want 5 starting with %s", len(newest), err, all[79].Subject)
	}

	// A shard other than 0 with at least three records.
	var shard string
	for _, c := range rep.Chains {
		if _, k := audit.BaseOf(c.Chain); k != 0 && c.Records >= 3 {
			shard = c.Chain
		}
	}
	if shard == "" {
		t.Fatalf("no shard but 0 holds three records: %+v", rep.Chains)
	}
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: shard})
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		t.Helper()
		for _, r := range recs[:3] {
			if err := rawPut(st.Store, r); err != nil {
				t.Fatal(err)
			}
		}
		verifyOK(t, st, time.Now())
	}
	broken := func(what string, seq int64) {
		t.Helper()
		rep, err := audit.Verify(ctx, st)
		if err != nil || rep.OK() || rep.Breaks()[0].Chain != shard || rep.Breaks()[0].Seq != seq {
			t.Fatalf("%s in %s: %v, breaks %v; want a break at record %d of that shard", what, shard, err, rep.Breaks(), seq)
		}
	}

	edited := *recs[1]
	edited.Outcome = "nothing happened"
	if err := rawPut(st.Store, &edited); err != nil {
		t.Fatal(err)
	}
	broken("an edited record", 2)
	restore()

	if err := rawDelete(st.Store, shard, 2); err != nil {
		t.Fatal(err)
	}
	broken("a deleted record", 2)
	restore()

	// Swapped: record 2's content in slot 3 and record 3's in slot 2.
	two, three := *recs[1], *recs[2]
	two.Seq, three.Seq = 3, 2
	if err := rawPut(st.Store, &two); err != nil {
		t.Fatal(err)
	}
	if err := rawPut(st.Store, &three); err != nil {
		t.Fatal(err)
	}
	broken("two records swapped", 2)
	restore()
}

// TestAChainWrittenBeforeShardingIsShardZero: a deployment's chain written
// with one shard goes on as shard 0 once the store has four: shard 0's
// next record follows the old last one, and everything verifies.
func TestAChainWrittenBeforeShardingIsShardZero(t *testing.T) {
	ctx := context.Background()
	plain := open(t)
	chain := audit.ChainOf("old")
	before := &audit.Trail{Store: plain}
	for i := range 5 {
		before.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "old", Action: "call.paused", Subject: fmt.Sprintf("before_%d", i)})
	}
	old, err := plain.LastAudit(ctx, chain)
	if err != nil || old.Seq != 5 {
		t.Fatalf("the old chain ends at %v, %v; want record 5", old, err)
	}
	st := shardedStore{Store: plain, shards: 4}
	after := &audit.Trail{Store: st}
	for i := range 40 {
		after.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "old", Action: "call.paused", Subject: fmt.Sprintf("after_%d", i)})
	}
	recs, err := plain.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 6 || recs[5].Prev != old.Hash {
		t.Fatalf("shard 0 holds %d records; want the old 5 and more, the 6th following the 5th", len(recs))
	}
	verifyOK(t, st, time.Now())
	all, err := audit.ListChain(ctx, st, chain, 0, false)
	if err != nil || len(all) != 45 {
		t.Fatalf("ListChain: %d records, %v; want 45", len(all), err)
	}
}
