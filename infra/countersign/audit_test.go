package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/store/embedded"
)

// tamperer changes one stored audit record behind the store's back, as
// someone with write access to the table or the file could.
type tamperer interface {
	read(tb testing.TB, chain string, seq int64) countersign.AuditRecord
	write(tb testing.TB, r countersign.AuditRecord)
	remove(tb testing.TB, chain string, seq int64)
}

// fillTrail appends four records to cred:agent and one to system.
func fillTrail(tb testing.TB, st audit.Store) {
	tb.Helper()
	t := &audit.Trail{Store: st}
	ctx := context.Background()
	for i, action := range []string{"call.paused", "confirmation.approved", "confirmation.redeemed", "call.denied"} {
		_, err := t.Append(ctx, countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent", Action: action,
			Method: "DELETE", Path: fmt.Sprintf("/contacts/%d", i), Connection: "crm", Outcome: "ok"})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := t.Append(ctx, countersign.AuditRecord{Chain: audit.System, Actor: "cli", Action: "key.created", Subject: "agent"}); err != nil {
		tb.Fatal(err)
	}
}

var tamperCases = []struct {
	name   string
	tamper func(tb testing.TB, tp tamperer)
	want   string
}{
	{"delete a middle record", func(tb testing.TB, tp tamperer) { tp.remove(tb, "cred:agent", 2) },
		"BROKEN chain cred:agent record 2: missing"},
	{"edit a middle record", func(tb testing.TB, tp tamperer) {
		r := tp.read(tb, "cred:agent", 2)
		r.Actor = "approver:someone-else"
		tp.write(tb, r)
	}, "BROKEN chain cred:agent record 2: edited"},
	{"edit a middle record and its hash", func(tb testing.TB, tp tamperer) {
		r := tp.read(tb, "cred:agent", 2)
		r.Outcome = "rejected"
		r.Hash = audit.Hash(&r)
		tp.write(tb, r)
	}, "BROKEN chain cred:agent record 3: does not follow record 2"},
	{"delete the first record", func(tb testing.TB, tp tamperer) { tp.remove(tb, "cred:agent", 1) },
		"BROKEN chain cred:agent record 1: missing"},
	{"delete the newest record", func(tb testing.TB, tp tamperer) { tp.remove(tb, "cred:agent", 4) },
		"BROKEN chain cred:agent record 4: missing: the head names record 4"},
	{"edit the newest record and its hash", func(tb testing.TB, tp tamperer) {
		r := tp.read(tb, "cred:agent", 4)
		r.Outcome = "executed"
		r.Hash = audit.Hash(&r)
		tp.write(tb, r)
	}, "BROKEN chain cred:agent record 4: edited or replaced"},
}

func checkVerify(t *testing.T, flags []string, tamper func(tb testing.TB, tp tamperer), tp tamperer, want string) {
	t.Helper()
	r := runCmd(t, append([]string{"audit", "--verify"}, flags...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "ok: 2 chains, 5 records") {
		t.Fatalf("verify before tampering: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tamper(t, tp)
	r = runCmd(t, append([]string{"audit", "--verify"}, flags...)...)
	if r.code != exitFail || !strings.Contains(r.stdout, want) || !strings.Contains(r.stderr, "the audit trail is broken") {
		t.Fatalf("verify after tampering: exit %d, want 1 and %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "chain system") {
		t.Errorf("an untouched chain is reported broken:\n%s", r.stdout)
	}
}

// boltTamperer edits the local store's file directly.
type boltTamperer struct{ path string }

func (b boltTamperer) update(tb testing.TB, fn func(bk *bbolt.Bucket) error) {
	tb.Helper()
	db, err := bbolt.Open(b.path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error { return fn(tx.Bucket([]byte("store_audit"))) }); err != nil {
		tb.Fatal(err)
	}
}

func boltKey(chain string, seq int64) []byte { return fmt.Appendf(nil, "%s\x00%020d", chain, seq) }

func (b boltTamperer) read(tb testing.TB, chain string, seq int64) countersign.AuditRecord {
	var r countersign.AuditRecord
	b.update(tb, func(bk *bbolt.Bucket) error { return json.Unmarshal(bk.Get(boltKey(chain, seq)), &r) })
	return r
}

func (b boltTamperer) write(tb testing.TB, r countersign.AuditRecord) {
	b.update(tb, func(bk *bbolt.Bucket) error {
		data, _ := json.Marshal(r)
		return bk.Put(boltKey(r.Chain, r.Seq), data)
	})
}

func (b boltTamperer) remove(tb testing.TB, chain string, seq int64) {
	b.update(tb, func(bk *bbolt.Bucket) error { return bk.Delete(boltKey(chain, seq)) })
}

func TestAuditVerifyLocal(t *testing.T) {
	for _, tc := range tamperCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "countersign.db")
			st, err := embedded.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			fillTrail(t, st)
			st.Close()
			checkVerify(t, []string{"--data", dir}, tc.tamper, boltTamperer{path}, tc.want)
		})
	}
}

func TestAuditPrintsAndKeysAreRecorded(t *testing.T) {
	dir := t.TempDir()
	createKey(t, "--data", dir, "--id", "bot", "--choice", "ask_person")
	if r := runCmd(t, "keys", "set-read-only", "--data", dir, "--id", "bot"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	if r := runCmd(t, "keys", "revoke", "--data", dir, "--id", "bot"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	r := runCmd(t, "audit", "--data", dir)
	if r.code != exitOK {
		t.Fatalf("audit: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"system#1  cli  key.created  bot", "system#2  cli  key.changed  bot", "(read_only false -> true)", "system#3  cli  key.revoked  bot"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("audit output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCmd(t, "audit", "--data", dir, "--json", "--since", "1h")
	if lines := strings.Count(r.stdout, "\n"); r.code != exitOK || lines != 3 || !strings.Contains(r.stdout, `"action":"key.revoked"`) {
		t.Fatalf("audit --json: %d lines\n%s", lines, r.stdout)
	}
	r = runCmd(t, "audit", "--data", dir, "--since", "2999-01-01T00:00:00Z")
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("audit --since the future: %q", r.stdout)
	}
	if r := runCmd(t, "audit", "--data", dir, "--since", "yesterday"); r.code != exitUsage {
		t.Fatalf("bad --since: exit %d", r.code)
	}
	if r := runCmd(t, "audit", "--data", dir, "--verify"); r.code != exitOK || !strings.Contains(r.stdout, "ok: 1 chains, 3 records") {
		t.Fatalf("verify: %d %s%s", r.code, r.stdout, r.stderr)
	}
}

// dynamoTamperer edits the table directly.
type dynamoTamperer struct {
	client *dynamodb.Client
	table  string
}

func dynamoKey(chain string, seq int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "AUDIT#" + chain},
		"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("%020d", seq)},
	}
}

func (d dynamoTamperer) read(tb testing.TB, chain string, seq int64) countersign.AuditRecord {
	out, err := d.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: dynamoKey(chain, seq)})
	if err != nil {
		tb.Fatal(err)
	}
	var r countersign.AuditRecord
	if err := json.Unmarshal([]byte(out.Item["data"].(*types.AttributeValueMemberS).Value), &r); err != nil {
		tb.Fatal(err)
	}
	return r
}

func (d dynamoTamperer) write(tb testing.TB, r countersign.AuditRecord) {
	data, _ := json.Marshal(r)
	item := dynamoKey(r.Chain, r.Seq)
	item["data"] = &types.AttributeValueMemberS{Value: string(data)}
	if _, err := d.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
		tb.Fatal(err)
	}
}

func (d dynamoTamperer) remove(tb testing.TB, chain string, seq int64) {
	if _, err := d.client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: dynamoKey(chain, seq)}); err != nil {
		tb.Fatal(err)
	}
}

func TestAuditVerifyDynamoDB(t *testing.T) {
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
	client := dynamodb.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("countersign-test", "countersign-test", ""),
	}, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	for i, tc := range tamperCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			table := fmt.Sprintf("countersign-audit-test-%d-%d", time.Now().UnixNano(), i)
			if err := dynamostore.CreateTable(ctx, client, table); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			})
			fillTrail(t, dynamostore.New(client, table, nil))
			checkVerify(t, []string{"--table", table, "--region", "us-east-1", "--endpoint", endpoint}, tc.tamper, dynamoTamperer{client, table}, tc.want)
		})
	}
}

// TestAuditPrintsControlsAsEscapes: a record's text is anyone's with a
// link (a reject reason), so the text output writes its control, bidi and
// zero-width characters as escapes, never raw to the terminal.
func TestAuditPrintsControlsAsEscapes(t *testing.T) {
	dir := t.TempDir()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &audit.Trail{Store: st}
	if _, err := tr.Append(context.Background(), countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "approver:ops\r\x1b[2K",
		Action: "confirmation.rejected", Method: "POST", Path: "/payments", Connection: "crm", Outcome: "rejected",
		Reason: "\x1b]0;pwned\x07\x1b[2J\u202egnp.exe\u200b"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := runCmd(t, "audit", "--data", dir)
	if r.code != exitOK {
		t.Fatalf("audit: %d %s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\r\u202e\u200b") {
		t.Fatalf("the output holds a control or hidden character raw: %q", r.stdout)
	}
	if !strings.Contains(r.stdout, "approver:ops") || !strings.Contains(r.stdout, "gnp.exe") {
		t.Errorf("the output does not show the escapes: %q", r.stdout)
	}
}
