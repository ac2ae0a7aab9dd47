package calls_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/dynamostore"
)

// dynamoEndpoint names the DynamoDB-compatible server (make test starts dynalite).
const dynamoEndpoint = "COUNTERSIGN_TEST_DYNAMODB_ENDPOINT"

// stores are the adapters a test runs against: embedded always, DynamoDB
// when dynalite runs.
func stores(t *testing.T) map[string]func(now func() time.Time) testStore {
	m := map[string]func(now func() time.Time) testStore{"embedded": nil}
	ep := os.Getenv(dynamoEndpoint)
	if ep == "" {
		t.Logf("DynamoDB case skipped: run ./scripts/test-with-dynalite.sh go test ./shared/calls")
		return m
	}
	m["dynamodb"] = func(now func() time.Time) testStore {
		client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep),
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
		table := "calls_" + time.Now().Format("150405.000000")
		if err := dynamostore.CreateTable(context.Background(), client, table); err != nil {
			t.Fatal(err)
		}
		return dynamostore.New(client, table, &dynamostore.Options{Now: now})
	}
	return m
}

// TestLargeAnswers: a 1 MB upstream answer never makes a write fail: a
// redeemed operation keeps its outcome truncated with the whole body's
// length and hash, and an Idempotency-Key keeps a truncated answer, so a
// retry replays it and the upstream is called once.
func TestLargeAnswers(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnvWith(t, open)
			cred := e.creds["chat-user"]
			del := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/big", Intent: policy.IntentWrite}
			res, err := e.svc.Do(e.ctx, cred, del, calls.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e.approve(t, res.Confirmation.ID)
			redeem := *del
			redeem.Intent, redeem.ConfirmationID = policy.IntentConfirmedWrite, res.Confirmation.ID
			got, err := e.svc.Do(e.ctx, cred, &redeem, calls.Options{})
			if err != nil || len(got.Response.Body) != len(bigAnswer) {
				t.Fatalf("redeem: %v (the agent must get the whole answer)", err)
			}
			stored, err := e.st.GetConfirmation(e.ctx, res.Confirmation.ID)
			if err != nil {
				t.Fatal(err)
			}
			out := stored.Operations[0].Outcome
			if stored.Status != countersign.StatusExecuted || out == nil || !out.Truncated || out.BodyBytes != len(bigAnswer) || out.BodySHA256 == "" {
				t.Fatalf("stored %s outcome %+v, want executed with a truncated outcome", stored.Status, out)
			}

			read := &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/big", Intent: policy.IntentRead, IdempotencyKey: "k1"}
			run := func() calls.Reply {
				res, err := e.svc.Do(e.ctx, e.creds["runner"], read, calls.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return calls.Reply{Status: 200, Body: res.Response.Body}
			}
			hash := calls.RequestHash("test", read)
			a1, replayed, err := e.svc.Idempotent(e.ctx, e.creds["runner"], "k1", hash, run)
			if err != nil || replayed || len(a1.Body) != len(bigAnswer) {
				t.Fatalf("first: %v replayed %v, %d bytes", err, replayed, len(a1.Body))
			}
			a2, replayed, err := e.svc.Idempotent(e.ctx, e.creds["runner"], "k1", hash, run)
			if err != nil || !replayed || a2.Headers[calls.TruncatedHeader] == "" {
				t.Fatalf("replay: %v replayed %v headers %v", err, replayed, a2.Headers)
			}
			if n := len(e.up.seen()); n != 2 {
				t.Errorf("upstream called %d times, want 2 (one DELETE, one GET)", n)
			}
		})
	}
}
