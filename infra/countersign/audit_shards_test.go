package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/store/dynamostore"
)

// TestAuditChainReadsEveryShardDynamoDB: 40 records of one credential on
// DynamoDB land in several shards of its chain; `audit --chain cred:agent`
// prints all 40, oldest first, and `audit --verify` checks each shard, so
// deleting a record of a shard other than 0 is reported in that shard.
func TestAuditChainReadsEveryShardDynamoDB(t *testing.T) {
	endpoint := os.Getenv("COUNTERSIGN_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		testenv.Missing(t, testenv.Dynalite, "COUNTERSIGN_TEST_DYNAMODB_ENDPOINT is not set; run: ./scripts/test-with-dynalite.sh go test ./infra/countersign")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "countersign-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "countersign-test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	ctx := context.Background()
	client := dynamodb.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("countersign-test", "countersign-test", ""),
	}, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	table := fmt.Sprintf("countersign-audit-shards-%d", time.Now().UnixNano())
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	st := dynamostore.New(client, table, nil)
	tr := &audit.Trail{Store: st}
	for i := range 40 {
		tr.Record(ctx, countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent", Action: "call.paused", Subject: fmt.Sprintf("cf_%02d", i)})
	}
	flags := []string{"--table", table, "--region", "us-east-1", "--endpoint", endpoint}

	r := runCmd(t, append([]string{"audit", "--chain", audit.ChainOf("agent"), "--json"}, flags...)...)
	if r.code != exitOK {
		t.Fatalf("audit --chain: exit %d\n%s", r.code, r.stderr)
	}
	var recs []countersign.AuditRecord
	shards := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var rec countersign.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit --json: %v\n%s", err, sc.Text())
		}
		recs = append(recs, rec)
		shards[rec.Chain]++
	}
	if len(recs) != 40 || len(shards) < 2 {
		t.Fatalf("audit --chain printed %d records from shards %v; want 40 from several", len(recs), shards)
	}
	for i := 1; i < len(recs); i++ {
		if audit.CompareMerged(&recs[i-1], &recs[i]) > 0 {
			t.Fatalf("records %d and %d out of the merged order: %s#%d, %s#%d", i-1, i, recs[i-1].Chain, recs[i-1].Seq, recs[i].Chain, recs[i].Seq)
		}
	}

	r = runCmd(t, append([]string{"audit", "--verify"}, flags...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("ok: %d chains, 40 records", len(shards))) {
		t.Fatalf("verify: exit %d, want ok over %d chains\n%s%s", r.code, len(shards), r.stdout, r.stderr)
	}
	var shard string
	for c, n := range shards {
		if _, k := audit.BaseOf(c); k != 0 && n >= 2 {
			shard = c
		}
	}
	if shard == "" {
		t.Fatalf("no shard but 0 holds two records: %v", shards)
	}
	dynamoTamperer{client, table}.remove(t, shard, 1)
	r = runCmd(t, append([]string{"audit", "--verify"}, flags...)...)
	if want := "BROKEN chain " + shard + " record 1: missing"; r.code != exitFail || !strings.Contains(r.stdout, want) {
		t.Fatalf("verify after deleting record 1 of %s: exit %d, want 1 and %q\n%s%s", shard, r.code, want, r.stdout, r.stderr)
	}
}
