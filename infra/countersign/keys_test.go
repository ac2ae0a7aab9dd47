package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/store/embedded"
)

var keyFormat = regexp.MustCompile(`^cs_[a-z2-7]{40}$`)

// createKey runs keys create and returns the key it printed.
func createKey(tb testing.TB, args ...string) string {
	tb.Helper()
	r := runCmd(tb, append([]string{"keys", "create"}, args...)...)
	if r.code != exitOK {
		tb.Fatalf("keys create %v: exit %d: %s", args, r.code, r.stderr)
	}
	key := strings.TrimSuffix(r.stdout, "\n")
	if !keyFormat.MatchString(key) {
		tb.Fatalf("keys create printed %q, want only the key", r.stdout)
	}
	return key
}

// storedCredentials reads the credentials of a local data directory.
func storedCredentials(tb testing.TB, dir string) map[string]countersign.Credential {
	tb.Helper()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	list, err := store.All(context.Background(), st.ListCredentials, countersign.ListQuery{}, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]countersign.Credential{}
	for _, c := range list {
		out[c.ID] = c
	}
	return out
}

func TestKeysLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	data := []string{"--data", dir}

	// create: the key printed once, only its hash stored.
	opKey := createKey(t, append([]string{"--id", "ops"}, data...)...)
	chatKey := createKey(t, append([]string{"--id", "chat-bot", "--origin", "chat", "--connections", "crm, billing,crm"}, data...)...)
	roKey := createKey(t, append([]string{"--id", "reader", "--choice", "run_without_asking", "--read-only"}, data...)...)
	rootKey := createKey(t, append([]string{"--id", "root", "--operator"}, data...)...)
	creds := storedCredentials(t, dir)
	want := map[string]countersign.Credential{
		"ops":      {ID: "ops", KeyHash: config.HashKey(opKey), Choice: countersign.Refuse, Origin: countersign.OriginOperator},
		"chat-bot": {ID: "chat-bot", KeyHash: config.HashKey(chatKey), Choice: countersign.AskPerson, Origin: countersign.OriginChat, Connections: []string{"crm", "billing"}},
		"reader":   {ID: "reader", KeyHash: config.HashKey(roKey), Choice: countersign.RunWithoutAsking, Origin: countersign.OriginOperator, ReadOnly: true},
		"root":     {ID: "root", KeyHash: config.HashKey(rootKey), Choice: countersign.Refuse, Origin: countersign.OriginOperator, Operator: true},
	}
	if fmt.Sprint(creds) != fmt.Sprint(want) {
		t.Fatalf("stored credentials:\n%+v\nwant\n%+v", creds, want)
	}
	db, err := os.ReadFile(filepath.Join(dir, "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{opKey, chatKey, roKey, rootKey} {
		if bytes.Contains(db, []byte(k)) {
			t.Fatalf("the store file holds the key %s itself", k)
		}
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
		absent []string // must not be in stdout
	}{
		{name: "list shows ids, choices, flags and hash prefixes",
			args: []string{"list"},
			stdout: []string{
				"ID        CHOICE              ORIGIN    FLAGS      CONNECTIONS  KEY SHA-256  LAST CLIENT\n",
				"chat-bot  ask_person          chat      -          crm,billing  " + config.HashKey(chatKey)[:8] + "…    -\n",
				"ops       refuse              operator  -          all          " + config.HashKey(opKey)[:8] + "…    -\n",
				"reader    run_without_asking  operator  read-only  all  ",
				"root      refuse              operator  operator   all  ",
			},
			absent: []string{config.HashKey(opKey), config.HashKey(chatKey), opKey}},
		{name: "list --json names the fields",
			args:   []string{"list", "--json"},
			stdout: []string{`"id": "ops"`, `"key_sha256_prefix": "` + config.HashKey(opKey)[:8] + `"`, `"connections": []`, `"last_client": null`},
			absent: []string{config.HashKey(opKey), `"key_sha256":`}},
		{name: "create refuses an existing id",
			args: []string{"create", "--id", "ops"}, code: exitFail, stderr: "credential ops already exists in " + filepath.Join(dir, "countersign.db") + ": revoke it first"},
		{name: "set-choice", args: []string{"set-choice", "--id", "ops", "--choice", "ask_agent"}, stdout: []string{"ops: choice refuse -> ask_agent\n"}},
		{name: "set-choice again", args: []string{"set-choice", "--id", "ops", "--choice", "ask_agent"}, stdout: []string{"ops: choice is already ask_agent\n"}},
		{name: "set-read-only", args: []string{"set-read-only", "--id", "ops"}, stdout: []string{"ops: read_only false -> true\n"}},
		{name: "set-read-only false", args: []string{"set-read-only", "--id", "reader", "false"}, stdout: []string{"reader: read_only true -> false\n"}},
		{name: "revoke", args: []string{"revoke", "--id", "chat-bot"}, stdout: []string{"revoked chat-bot: its key is refused (401 unauthenticated) from the next call on\n"},
			stderr: "if chat-bot is listed there, remove it from the file too"},
		{name: "revoke again", args: []string{"revoke", "--id", "chat-bot"}, code: exitFail, stderr: "no credential chat-bot in "},
		{name: "set-choice of a missing credential", args: []string{"set-choice", "--id", "nobody", "--choice", "refuse"}, code: exitFail, stderr: "no credential nobody in "},
		{name: "set-choice with a bad choice", args: []string{"set-choice", "--id", "ops", "--choice", "maybe"}, code: exitUsage, stderr: `--choice "maybe" is not a choice`},
		{name: "set-choice without a choice", args: []string{"set-choice", "--id", "ops"}, code: exitUsage, stderr: "--choice C is required"},
		{name: "set-read-only with a bad value", args: []string{"set-read-only", "--id", "ops", "maybe"}, code: exitUsage, stderr: `set-read-only takes true or false, not "maybe"`},
		{name: "create without an id", args: []string{"create"}, code: exitUsage, stderr: "--id ID is required"},
		{name: "create with a bad id", args: []string{"create", "--id", "a:b"}, code: exitUsage, stderr: `--id "a:b" is not a credential id`},
		{name: "create with a bad origin", args: []string{"create", "--id", "x", "--origin", "robot"}, code: exitUsage, stderr: `--origin "robot" is not an origin`},
		{name: "create with a bad connection", args: []string{"create", "--id", "x", "--connections", "crm,"}, code: exitUsage, stderr: `--connections: "" is not a connection name`},
		{name: "an unknown subcommand", args: []string{"rotate"}, code: exitUsage, stderr: `unknown keys subcommand "rotate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append(append([]string{"keys"}, tt.args...), data...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout shows %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
			}
		})
	}

	creds = storedCredentials(t, dir)
	if _, ok := creds["chat-bot"]; ok {
		t.Error("chat-bot is still stored after revoke")
	}
	if c := creds["ops"]; c.Choice != countersign.AskAgent || !c.ReadOnly || c.KeyHash != config.HashKey(opKey) {
		t.Errorf("ops after the changes: %+v", c)
	}
}

func TestKeysStoreFlags(t *testing.T) {
	t.Setenv(envTable, "")
	missing := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{name: "list needs an existing store", args: []string{"list", "--data", missing}, code: exitFail,
			stderr: "no store at " + filepath.Join(missing, "countersign.db") + ": the local stack creates it at its first start"},
		{name: "not both", args: []string{"list", "--data", missing, "--table", "t"}, code: exitUsage, stderr: "give --data (the local store) or --table (DynamoDB), not both"},
		{name: "a table needs a region", args: []string{"list", "--table", "t"}, env: map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_PROFILE": ""},
			code: exitUsage, stderr: "no AWS region for table t: pass --region or set AWS_REGION"},
		{name: "COUNTERSIGN_TABLE names the table", args: []string{"list"}, env: map[string]string{envTable: "from-env", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_PROFILE": ""},
			code: exitUsage, stderr: "no AWS region for table from-env"},
		{name: "--data wins over COUNTERSIGN_TABLE", args: []string{"list", "--data", missing}, env: map[string]string{envTable: "from-env"},
			code: exitFail, stderr: "no store at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			r := runCmd(t, append([]string{"keys"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, tt.code, r.stderr, tt.stderr)
			}
		})
	}
}

func TestKeysWhileTheStoreIsHeld(t *testing.T) {
	dir := t.TempDir()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lockTimeout = 200 * time.Millisecond
	t.Cleanup(func() { lockTimeout = 2 * time.Second })
	for _, args := range [][]string{
		{"list"}, {"create", "--id", "x"}, {"revoke", "--id", "x"}, {"set-choice", "--id", "x", "--choice", "refuse"}, {"set-read-only", "--id", "x"},
	} {
		// In a synctest bubble the clock moves only while the store waits
		// for the lock (bbolt tries every 50 ms): it waits lockTimeout.
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			r := runCmd(t, append(append([]string{"keys"}, args...), "--data", dir)...)
			if r.code != exitFail || !strings.Contains(r.stderr, "is locked: the local stack is running with --data "+dir+"; stop it (Ctrl-C) and run this again") {
				t.Errorf("%v: exit %d, stderr %s", args, r.code, r.stderr)
			}
			if d := time.Since(start); d < lockTimeout-50*time.Millisecond || d > lockTimeout {
				t.Errorf("%v waited %s for the lock, want lockTimeout (%s)", args, d, lockTimeout)
			}
		})
	}
}

// TestKeysRevokeLocalStack creates a key with the tool, uses it against the
// local stack, shows that keys refuses to touch the store while the stack
// runs, revokes it with the stack stopped, and sees the next call refused
// with 401.
func TestKeysRevokeLocalStack(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts the local stack")
	}
	dir := t.TempDir()
	key := createKey(t, "--id", "ci-bot", "--choice", "run_without_asking", "--data", dir)

	start := func() *stack.Stack {
		t.Helper()
		s, err := stack.Start(context.Background(), stack.Options{ConfigDir: "../config", Addr: "127.0.0.1:0", DataDir: dir, Stdout: &bytes.Buffer{}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	stop := func(s *stack.Stack) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A never-tier call: authenticated, decided, and nothing sent upstream.
	call := func(s *stack.Stack) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", s.URL+"/v1/calls",
			strings.NewReader(`{"connection":"crm","method":"DELETE","path":"/accounts/2","intent":"write"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Code
	}

	s := start()
	if status, code := call(s); status != http.StatusForbidden || code != "blocked" {
		t.Fatalf("with the new key: %d %s, want 403 blocked", status, code)
	}
	lockTimeout = 200 * time.Millisecond
	t.Cleanup(func() { lockTimeout = 2 * time.Second })
	r := runCmd(t, "keys", "revoke", "--id", "ci-bot", "--data", dir)
	if r.code != exitFail || !strings.Contains(r.stderr, "the local stack is running") {
		t.Fatalf("revoke while the stack runs: exit %d, stderr %s", r.code, r.stderr)
	}
	stop(s)

	if r := runCmd(t, "keys", "revoke", "--id", "ci-bot", "--data", dir); r.code != exitOK {
		t.Fatalf("revoke: exit %d: %s", r.code, r.stderr)
	}
	s = start()
	defer stop(s)
	if status, code := call(s); status != http.StatusUnauthorized || code != "unauthenticated" {
		t.Fatalf("after revoke: %d %s, want 401 unauthenticated", status, code)
	}
}

// TestKeysDynamoDB runs the keys commands against DynamoDB (dynalite in CI)
// and checks the gateway's authentication against the same table.
func TestKeysDynamoDB(t *testing.T) {
	endpoint := os.Getenv("COUNTERSIGN_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		testenv.Missing(t, testenv.Dynalite, "COUNTERSIGN_TEST_DYNAMODB_ENDPOINT is not set; run: ./scripts/test-with-dynalite.sh go test ./infra/countersign")
	}
	ctx := context.Background()
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
	table := fmt.Sprintf("countersign-keys-test-%d", time.Now().UnixNano())
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	flags := []string{"--table", table, "--region", "us-east-1", "--endpoint", endpoint}

	key := createKey(t, append([]string{"--id", "deploy-bot", "--choice", "ask_agent"}, flags...)...)
	// The environment names the table, region and endpoint as well.
	t.Setenv(envTable, table)
	t.Setenv(envRegion, "us-east-1")
	t.Setenv(envEndpoint, endpoint)
	createKey(t, "--id", "other")

	svc := &calls.Service{Store: dynamostore.New(client, table, nil)}
	cred, err := svc.Authenticate(ctx, key)
	if err != nil || cred.ID != "deploy-bot" || cred.Choice != countersign.AskAgent {
		t.Fatalf("Authenticate with the new key: %+v, %v", cred, err)
	}

	r := runCmd(t, "keys", "list")
	if r.code != exitOK || !strings.Contains(r.stdout, "deploy-bot  ask_agent") || !strings.Contains(r.stdout, "other ") ||
		strings.Contains(r.stdout, config.HashKey(key)) {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCmd(t, append([]string{"keys", "set-read-only", "--id", "deploy-bot"}, flags...)...); r.code != exitOK {
		t.Fatalf("set-read-only: %s", r.stderr)
	}
	if cred, err := svc.Authenticate(ctx, key); err != nil || !cred.ReadOnly {
		t.Fatalf("after set-read-only: %+v, %v", cred, err)
	}
	if r := runCmd(t, "keys", "revoke", "--id", "deploy-bot"); r.code != exitOK {
		t.Fatalf("revoke: %s", r.stderr)
	}
	_, err = svc.Authenticate(ctx, key)
	if fault.CodeOf(err) != fault.Unauthenticated {
		t.Fatalf("Authenticate after revoke: %v, want unauthenticated (401)", err)
	}
	if r := runCmd(t, "keys", "revoke", "--id", "deploy-bot"); r.code != exitFail || !strings.Contains(r.stderr, "no credential deploy-bot in DynamoDB table "+table) {
		t.Fatalf("second revoke: exit %d, %s", r.code, r.stderr)
	}
}
