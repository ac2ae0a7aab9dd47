package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store/dynamostore"
)

// partitionMeter adds up the write units each partition key takes
// (ReturnConsumedCapacity: TOTAL), and counts the requests that failed.
type partitionMeter struct {
	mu       sync.Mutex
	units    map[string]float64
	writes   map[string]int
	failures []string
}

func (m *partitionMeter) meter(in any, call func() (any, error)) (any, error) {
	total := types.ReturnConsumedCapacityTotal
	var key map[string]types.AttributeValue
	switch p := in.(type) {
	case *dynamodb.PutItemInput:
		p.ReturnConsumedCapacity, key = total, p.Item
	case *dynamodb.UpdateItemInput:
		p.ReturnConsumedCapacity, key = total, p.Key
	case *dynamodb.DeleteItemInput:
		p.ReturnConsumedCapacity, key = total, p.Key
	}
	out, err := call()
	if key == nil {
		return out, err
	}
	pk := key["pk"].(*types.AttributeValueMemberS).Value
	var cc *types.ConsumedCapacity
	switch r := out.(type) {
	case *dynamodb.PutItemOutput:
		cc = r.ConsumedCapacity
	case *dynamodb.UpdateItemOutput:
		cc = r.ConsumedCapacity
	case *dynamodb.DeleteItemOutput:
		cc = r.ConsumedCapacity
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes[pk]++
	switch {
	case err != nil:
		// DynamoDB charges a failed conditional write one unit.
		m.units[pk]++
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			m.failures = append(m.failures, pk+": "+err.Error())
		}
	case cc == nil || cc.CapacityUnits == nil:
		m.failures = append(m.failures, pk+": no consumed capacity")
	default:
		m.units[pk] += *cc.CapacityUnits
	}
	return out, err
}

// oneShard is the DynamoDB store as it was before its chains were
// sharded: one partition per chain.
type oneShard struct{ *dynamostore.Store }

func (oneShard) AuditShards() int { return 1 }

// meteredStore opens a fresh table with a store whose writes m meters.
func meteredStore(tb testing.TB, m *partitionMeter) (*dynamostore.Store, dynamostore.Client) {
	tb.Helper()
	_, table := newTable(tb)
	client := meteredClient(m.meter)
	return dynamostore.New(client, table, nil), client
}

// burst records n records of one credential's chain from c goroutines and
// seals whatever is left pending.
func burst(tb testing.TB, st audit.Store, n, c int) {
	tb.Helper()
	ctx := context.Background()
	tr := &audit.Trail{Store: st}
	chain := audit.ChainOf("busy")
	var wg sync.WaitGroup
	for g := range c {
		wg.Go(func() {
			for i := g; i < n; i += c {
				tr.Record(ctx, countersign.AuditRecord{Chain: chain, Actor: "busy", Credential: "busy", Action: "call.paused",
					Subject: fmt.Sprintf("cf_%06d", i), Connection: "crm", Method: "DELETE", Path: "/contacts/12", Tier: "confirm"})
			}
		})
	}
	wg.Wait()
	chains, err := audit.Chains(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	for _, ch := range chains {
		if err := tr.Seal(ctx, ch); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestOneCredentialsAuditBurstSpreadsOverPartitions: 400 records of one
// credential from 20 goroutines write to the 8 partitions of its chain's
// shards (AUDIT#cred:busy, AUDIT#cred:busy#1 … #7), none taking more than
// a quarter of the write units (an even spread gives each an eighth), at
// three write units a record (written pending, sealed, its pending copy
// deleted) and one per sealed batch; every record is sealed once and
// every shard verifies. DynamoDB takes 1,000 write units a second per
// partition (dynalite has no such limit, so the spread is what is tested):
// eight partitions at about three units a record take about 2,600 records
// a second of one credential (docs/dynamodb-costs.md).
func TestOneCredentialsAuditBurstSpreadsOverPartitions(t *testing.T) {
	const n, c = 400, 20
	m := &partitionMeter{units: map[string]float64{}, writes: map[string]int{}}
	st, _ := meteredStore(t, m)
	burst(t, st, n, c)

	ctx := context.Background()
	rep, err := audit.Verify(ctx, st)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v, %v", rep.Breaks(), err)
	}
	records := 0
	for _, cr := range rep.Chains {
		records += cr.Records
		if cr.Pending != 0 {
			t.Errorf("%s: %d records left pending", cr.Chain, cr.Pending)
		}
	}
	if records != n {
		t.Fatalf("%d records sealed, want %d", records, n)
	}
	all, err := audit.ListChain(ctx, st, audit.ChainOf("busy"), 0, false)
	if err != nil || len(all) != n {
		t.Fatalf("ListChain: %d records, %v; want %d", len(all), err, n)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.failures) > 0 {
		t.Errorf("writes that failed or were not metered: %q", m.failures)
	}
	var pks []string
	var total float64
	for pk, u := range m.units {
		pks = append(pks, pk)
		total += u
	}
	sort.Strings(pks)
	var b strings.Builder
	fmt.Fprintf(&b, "| partition key | write requests | write units | share |\n| --- | --- | --- | --- |\n")
	for _, pk := range pks {
		fmt.Fprintf(&b, "| %s | %d | %g | %.1f%% |\n", pk, m.writes[pk], m.units[pk], 100*m.units[pk]/total)
		if !strings.HasPrefix(pk, "AUDIT#cred:busy") {
			t.Errorf("a record of cred:busy wrote to %s", pk)
		}
		if m.units[pk] > total/4 {
			t.Errorf("%s took %g of %g write units: more than a quarter", pk, m.units[pk], total)
		}
	}
	t.Logf("%d records of one credential from %d goroutines, write units by partition key:\n%s| all | | %g | %.2f a record |", n, c, b.String(), total, total/n)
	if len(pks) != dynamostore.AuditShards {
		t.Errorf("the records wrote to %d partitions, want %d: %q", len(pks), dynamostore.AuditShards, pks)
	}
	// Three writes a record and one head update a batch: 4 when every
	// record is sealed alone, less the more records a batch holds.
	if perRecord := total / n; perRecord > 4 || perRecord < 3 {
		t.Errorf("%.2f write units a record, want 3 and a share of a head update", perRecord)
	}
}

// BenchmarkAuditOneCredential records to one credential's chain from 20
// goroutines on DynamoDB (dynalite): one shard (the store before sharding)
// against the store's AuditShards. records/s counts a record once it is
// sealed. dynalite has no partition limit and runs on one core: what this
// shows is how far the parallel sealing of the shards goes on this
// machine, not DynamoDB's ceiling (see the test above). Interleaved (go
// test -count runs a sub-benchmark's repeats back to back):
//
//	./scripts/test-with-dynalite.sh bash -c 'for i in 1 2 3; do for s in 1 8; do
//	  go test -run "^$" -bench "BenchmarkAuditOneCredential/shards-$s\$" -benchtime 600x ./shared/store/dynamostore/ | grep records/s; done; done'
func BenchmarkAuditOneCredential(b *testing.B) {
	for _, tc := range []struct {
		name  string
		store func(*dynamostore.Store) audit.Store
	}{
		{"shards-1", func(s *dynamostore.Store) audit.Store { return oneShard{s} }},
		{fmt.Sprintf("shards-%d", dynamostore.AuditShards), func(s *dynamostore.Store) audit.Store { return s }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := &partitionMeter{units: map[string]float64{}, writes: map[string]int{}}
			st, _ := meteredStore(b, m)
			b.ResetTimer()
			start := time.Now()
			burst(b, tc.store(st), b.N, 20)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(len(m.units)), "partitions")
			if load, err := os.ReadFile("/proc/loadavg"); err == nil {
				b.Logf("load average %s", strings.Fields(string(load))[0])
			}
		})
	}
}
