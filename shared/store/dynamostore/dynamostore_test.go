package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/store/storetest"
)

// The adapter serves each consumer's own small interface.
var (
	_ confirm.Store = (*dynamostore.Store)(nil)
	_ calls.Store   = (*dynamostore.Store)(nil)
	_ app.Store     = (*dynamostore.Store)(nil)
)

// endpointEnv names the DynamoDB-compatible server the tests run against.
const endpointEnv = "COUNTERSIGN_TEST_DYNAMODB_ENDPOINT"

const startCommand = "(cd infra/dynalite && npm ci && npm start -- --port 4567) & " +
	endpointEnv + "=http://127.0.0.1:4567 go test -race ./shared/store/dynamostore"

func TestContract(t *testing.T) {
	client, table := newTable(t)
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	st := dynamostore.New(client, table, &dynamostore.Options{Now: clock.Now})
	storetest.Run(t, func(*testing.T) store.Store { return st }, &storetest.Options{Now: clock.Now, Advance: clock.Advance})
}

func TestContractRealClock(t *testing.T) {
	client, table := newTable(t)
	storetest.Run(t, func(*testing.T) store.Store { return dynamostore.New(client, table, nil) }, nil)
}

func TestItemAttributes(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	st := dynamostore.New(client, table, nil)
	now := time.Date(2026, 5, 1, 12, 0, 0, 500, time.UTC)

	conf := &countersign.Confirmation{ID: "c1", Status: countersign.StatusPending, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), TTL: now.Add(48 * time.Hour).Unix()}
	idem := &countersign.Idempotency{Credential: "cred", Key: "k", CreatedAt: now, ExpiresAt: time.Now().Add(time.Hour)}
	review := &countersign.Confirmation{ID: "r1", Kind: countersign.KindReview, Status: countersign.StatusPending, CreatedAt: now, TTL: now.Add(72 * time.Hour).Unix()}
	run := &countersign.ScriptRun{ID: "c1", Status: countersign.ScriptPending, CreatedAt: now, TTL: now.Add(48 * time.Hour).Unix()}
	call := &countersign.ScriptCall{RunID: "c1", Index: 7, State: countersign.ScriptCallPending, TTL: run.TTL}
	part := &countersign.ScriptPart{RunID: "c1", Key: "call/00000007/0000", Data: []byte{0, 0xff}, TTL: run.TTL}
	denial := &countersign.AuditRecord{Chain: "calls:agent", Seq: 1, At: now, Actor: "agent", Action: "call.denied", Hash: "h1", TTL: now.Add(90 * 24 * time.Hour).Unix()}
	kept := &countersign.AuditRecord{Chain: "cred:agent", Seq: 1, At: now, Actor: "agent", Action: "call.paused", Hash: "h2"}
	for _, err := range []error{
		st.AppendAudit(ctx, denial),
		st.AppendAudit(ctx, kept),
		st.CreateConfirmation(ctx, conf),
		st.UpdateConfirmation(ctx, conf),
		st.CreateIdempotency(ctx, idem),
		st.CreateConfirmation(ctx, review),
		st.CreateScriptRun(ctx, run),
		st.PutScriptCall(ctx, call),
		st.PutScriptCall(ctx, call),
		st.PutScriptPart(ctx, part),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name   string
		pk, sk string
		want   map[string]string // attribute → number value
	}{
		{"confirmation as created", "CONF#c1", "CONF", map[string]string{"version": "1", "nops": "0", "ttl": strconv.FormatInt(conf.TTL, 10)}},
		{"confirmation state", "CONF#c1", "STATE", map[string]string{"version": "2", "nops": "0", "ttl": strconv.FormatInt(conf.TTL, 10),
			"created": strconv.FormatInt(now.UnixNano(), 10)}},
		{"idempotency", "IDEM#cred", "KEY#k", map[string]string{
			"version":    "1",
			"expires_at": strconv.FormatInt(idem.ExpiresAt.UnixNano(), 10),
			"ttl":        strconv.FormatInt(idem.ExpiresAt.Unix()+1, 10), // rounded up
		}},
		{"review", "CONF#r1", "CONF", map[string]string{"ttl": strconv.FormatInt(review.TTL, 10)}},
		{"script run", "SCRIPT#c1", "RUN", map[string]string{"version": "1", "ttl": strconv.FormatInt(run.TTL, 10)}},
		{"script call", "SCRIPT#c1", "CALL#00000007", map[string]string{"version": "2", "ttl": strconv.FormatInt(run.TTL, 10)}},
		// A denial expires with the table's TTL; its chain's head does not
		// (it keeps the record's TTL as expires, not ttl).
		{"expiring audit record", "AUDIT#calls:agent", "00000000000000000001", map[string]string{"ttl": strconv.FormatInt(denial.TTL, 10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := rawItem(t, client, table, tc.pk, tc.sk)
			for name, want := range tc.want {
				got, ok := item[name].(*types.AttributeValueMemberN)
				if !ok || got.Value != want {
					t.Errorf("attribute %s = %#v, want number %s", name, item[name], want)
				}
			}
			if _, ok := item["data"].(*types.AttributeValueMemberS); !ok {
				t.Errorf("attribute data = %#v, want a JSON string", item["data"])
			}
		})
	}
	t.Run("audit heads and kept records have no ttl", func(t *testing.T) {
		for _, key := range [][2]string{{"AUDIT#calls:agent", "HEAD"}, {"AUDIT#cred:agent", "HEAD"}, {"AUDIT#cred:agent", "00000000000000000001"}} {
			item := rawItem(t, client, table, key[0], key[1])
			if _, ok := item["ttl"]; ok {
				t.Errorf("%s %s has a ttl attribute %#v: the table's TTL would delete it", key[0], key[1], item["ttl"])
			}
		}
		head := rawItem(t, client, table, "AUDIT#calls:agent", "HEAD")
		if n, ok := head["expires"].(*types.AttributeValueMemberN); !ok || n.Value != strconv.FormatInt(denial.TTL, 10) {
			t.Errorf("head attribute expires = %#v, want %d", head["expires"], denial.TTL)
		}
	})
	t.Run("script part", func(t *testing.T) {
		item := rawItem(t, client, table, "SCRIPT#c1", "PART#call/00000007/0000")
		if b, ok := item["bin"].(*types.AttributeValueMemberB); !ok || string(b.Value) != "\x00\xff" {
			t.Errorf("attribute bin = %#v, want the part's bytes", item["bin"])
		}
		if n, ok := item["ttl"].(*types.AttributeValueMemberN); !ok || n.Value != strconv.FormatInt(run.TTL, 10) {
			t.Errorf("attribute ttl = %#v", item["ttl"])
		}
	})
}

func TestStaleIndexEntryDoesNotMatch(t *testing.T) {
	// A GSI lags the table. Simulate an index entry that still carries an
	// old key hash for a credential whose stored hash has moved on.
	ctx := context.Background()
	client, table := newTable(t)
	st := dynamostore.New(client, table, nil)
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"pk":     &types.AttributeValueMemberS{Value: "CRED#c1"},
			"sk":     &types.AttributeValueMemberS{Value: "CRED"},
			"gsi1pk": &types.AttributeValueMemberS{Value: "KEYHASH#old"},
			"gsi1sk": &types.AttributeValueMemberS{Value: "CRED#c1"},
			"data":   &types.AttributeValueMemberS{Value: `{"id":"c1","key_sha256":"new","choice":"refuse","origin":"operator","read_only":false}`},
		},
	})
	if err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if _, err := st.CredentialByKeyHash(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CredentialByKeyHash(stale hash): %v, want ErrNotFound", err)
	}
}

func TestCreateTableTwiceFails(t *testing.T) {
	client, table := newTable(t)
	if err := dynamostore.CreateTable(context.Background(), client, table); err == nil || !strings.Contains(err.Error(), table) {
		t.Fatalf("second CreateTable: %v, want an error naming %s", err, table)
	}
}

func TestConditionFailureIsNotAnSDKError(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	st := dynamostore.New(client, table, nil)
	c := &countersign.Confirmation{ID: "c1"}
	if err := st.CreateConfirmation(ctx, c); err != nil {
		t.Fatal(err)
	}
	err := st.CreateConfirmation(ctx, c)
	var ccf *types.ConditionalCheckFailedException
	if !errors.Is(err, store.ErrConflict) || errors.As(err, &ccf) {
		t.Fatalf("duplicate create: %v; want store.ErrConflict with no SDK error inside", err)
	}
}

// newTable connects to the test server and creates a fresh table, deleted
// when the test ends. It skips the test when no server is configured.
func newTable(tb testing.TB) (*dynamodb.Client, string) {
	tb.Helper()
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		testenv.Missing(tb, testenv.Dynalite, fmt.Sprintf("%s is not set; start dynalite and point the tests at it: %s", endpointEnv, startCommand))
	}
	client := testClient()

	table := fmt.Sprintf("countersign-test-%d-%s", time.Now().UnixNano(), strings.ToLower(tb.Name()))
	table = strings.NewReplacer("/", "-", "_", "-").Replace(table)
	if len(table) > 255 {
		table = table[:255]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		tb.Fatalf("CreateTable at %s: %v", endpoint, err)
	}
	tb.Cleanup(func() {
		_, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		if err != nil {
			tb.Errorf("DeleteTable %s: %v", table, err)
		}
	})
	return client, table
}

func rawItem(tb testing.TB, client dynamostore.Client, table, pk, sk string) map[string]types.AttributeValue {
	tb.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk},
			"sk": &types.AttributeValueMemberS{Value: sk},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		tb.Fatalf("GetItem(%s, %s): %v, item %v", pk, sk, err, out)
	}
	return out.Item
}

// testClient is a client of the test server: awslite's, as the functions
// use.
func testClient() *dynamodb.Client {
	return dynamodb.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("countersign-test", "countersign-test", ""),
	}, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(os.Getenv(endpointEnv)) })
}
