package awsenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/awsenv/awsfake"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/notify/snsmail"
	"github.com/countersign/countersign/shared/policy"
)

const (
	bucket     = "countersign-configbucket-test"
	signingKey = `{"kid":"k1","secret":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3"}`
)

// deployed is a fake AWS account holding a configuration in S3 and the
// environment the template gives a function.
type deployed struct {
	aws  *awsfake.Server
	vars map[string]string
	opts []awsenv.Option
}

func newDeployed(t testing.TB, settings string) *deployed {
	t.Helper()
	fake := awsfake.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	old := time.Now().Add(-time.Hour)
	fake.PutObject(bucket, "config/settings.json", []byte(settings), old)
	fake.PutObject(bucket, "config/credentials.json", []byte(`[{"id": "seeded", "key": "cs_seeded", "choice": "ask_person"}]`), old)
	fake.PutObject(bucket, "config/connections/crm/policy.json", []byte(
		`{"base_url": "https://crm.example", "headers": {"Authorization": "Bearer ${secretsmanager:countersign/crm-token}"},
		  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`), old)
	fake.PutSecret("countersign/signing-key", signingKey)
	fake.PutSecret("countersign/ops-hook", "whsec_from_secrets_manager")
	fake.PutSecret("countersign/crm-token", "tok_from_secrets_manager")
	d := &deployed{aws: fake, vars: map[string]string{
		"COUNTERSIGN_TABLE":                     "countersign-Table",
		"COUNTERSIGN_CONFIG_BUCKET":             bucket,
		"COUNTERSIGN_CONFIG_PREFIX":             "config/",
		"COUNTERSIGN_CONFIG_REFRESH_SECONDS":    "1",
		"COUNTERSIGN_PUBLIC_URL":                "https://abc.execute-api.us-east-1.amazonaws.com",
		"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN": confirmARN,
		"COUNTERSIGN_BATCH_STATE_MACHINE_ARN":   batchARN,
		"COUNTERSIGN_SIGNING_KEY_SECRET":        "countersign/signing-key",
		"COUNTERSIGN_SECRETS_PREFIX":            "countersign/",
		"AWS_REGION":                            "us-east-1",
		"AWS_ACCESS_KEY_ID":                     "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":                 "SECRETTEST",
		"AWS_SESSION_TOKEN":                     "",
		"AWS_PROFILE":                           "",
		"AWS_CONFIG_FILE":                       filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE":           filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED":             "true",
	}}
	for _, svc := range []string{"DYNAMODB", "SFN", "SECRETSMANAGER", "S3", "SNS"} {
		d.vars["COUNTERSIGN_"+svc+"_ENDPOINT"] = srv.URL
	}
	return d
}

// load runs awsenv.Load with the deployment's environment, as the
// gateway's main does.
func (d *deployed) load(t *testing.T) (*awsenv.Deployment, error) {
	t.Helper()
	for k, v := range d.vars {
		t.Setenv(k, v)
	}
	return awsenv.Load(context.Background(), awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.MaySeedCredentials, d.opts...)
}

const webhookSettings = `{"workspace": {"name": "Acme"},
  "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`

// TestColdStartWritesNothing: a gateway's cold start reads its
// configuration, its secrets and its signing key, and makes no call to
// the table at all: credentials.json is not seeded.
func TestColdStartWritesNothing(t *testing.T) {
	dep := newDeployed(t, webhookSettings)
	d, err := dep.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	calls := dep.aws.Calls()
	for _, c := range calls {
		if strings.HasPrefix(c, "dynamodb:") {
			t.Errorf("the cold start called %s: it must not touch the table", c)
		}
	}
	slices.Sort(calls)
	want := []string{"s3:GetObject", "s3:GetObject", "s3:GetObject", "s3:ListBucket",
		"secretsmanager:GetSecretValue", "secretsmanager:GetSecretValue", "secretsmanager:GetSecretValue"}
	if !slices.Equal(calls, want) {
		t.Errorf("cold start calls %q, want %q", calls, want)
	}
	cfg := d.Live()
	if cfg.Dir != "s3://"+bucket+"/config/" {
		t.Errorf("configuration read from %s", cfg.Dir)
	}
	hooks := cfg.Settings.Approvers.Webhooks
	if len(hooks) != 1 || hooks[0].Secret != "whsec_from_secrets_manager" || cfg.Connections["crm"].Headers["Authorization"] != "Bearer tok_from_secrets_manager" {
		t.Errorf("secrets not resolved: %+v, %q", hooks, cfg.Connections["crm"].Headers)
	}
	if got := d.LinkBase(); got != "https://abc.execute-api.us-east-1.amazonaws.com" {
		t.Errorf("links point to %q, want the API's URL (settings.json gives no public_url)", got)
	}
}

// TestSeedOnlyWhenAsked: COUNTERSIGN_SEED_CREDENTIALS=true writes
// credentials.json to the table; nothing else does.
func TestSeedOnlyWhenAsked(t *testing.T) {
	dep := newDeployed(t, webhookSettings)
	dep.vars["COUNTERSIGN_SEED_CREDENTIALS"] = "true"
	if _, err := dep.load(t); err != nil {
		t.Fatal(err)
	}
	var puts int
	for _, c := range dep.aws.Calls() {
		if c == "dynamodb:PutItem" {
			puts++
		}
	}
	if puts != 1 {
		t.Errorf("%d PutItem calls, want 1 (the one credential of credentials.json)", puts)
	}
}

func TestNoApproverChannel(t *testing.T) {
	dep := newDeployed(t, `{"approvers": {"console": true}}`)
	_, err := dep.load(t)
	if !errors.Is(err, awsenv.ErrNoApproverChannel) || !strings.Contains(err.Error(), "no approver channel") ||
		!strings.Contains(err.Error(), "s3://"+bucket+"/config/") {
		t.Fatalf("Load without a channel: %v, want ErrNoApproverChannel naming the configuration", err)
	}

	// The e-mail approver is a channel: the stack's topic suffices, in
	// the functions that never send to it as in notify.
	dep.vars["COUNTERSIGN_APPROVER_TOPIC_ARN"] = "arn:aws:sns:us-east-1:123456789012:countersign-approvers"
	d, err := dep.load(t)
	if err != nil {
		t.Fatalf("Load with the e-mail approver, gateway: %v", err)
	}
	if n := len(d.Dispatcher.Channels()); n != 0 {
		t.Errorf("the gateway has %d channels, want none (it never sends a request)", n)
	}
	dep.opts = []awsenv.Option{awsenv.WithEmail(snsmail.Deployed)}
	if d, err = dep.load(t); err != nil {
		t.Fatalf("Load with the e-mail approver, notify: %v", err)
	}
	chans := d.Dispatcher.Channels()
	if len(chans) != 1 || chans[0].Name() != snsmail.Approver {
		t.Fatalf("channels %v, want the e-mail approver", chans)
	}
	ev := notify.Event{Type: notify.TypeRequested, Confirmation: notify.EventConfirmation{ID: "cf_1", ExpiresAt: time.Now().Add(time.Minute)}}
	if err := d.Dispatcher.NotifyEachWait(context.Background(), ev, func(a string) string { return "https://x/approve/cf_1?a=" + a }); err != nil {
		t.Fatal(err)
	}
	pub := dep.aws.Published()
	if len(pub) != 1 || pub[0].Get("TopicArn") != "arn:aws:sns:us-east-1:123456789012:countersign-approvers" ||
		!strings.Contains(pub[0].Get("Message"), "https://x/approve/cf_1?a=email") {
		t.Errorf("published %v", pub)
	}
}

func TestSecretOutsideThePrefixIsRefused(t *testing.T) {
	dep := newDeployed(t, strings.Replace(webhookSettings, "countersign/ops-hook", "other/ops-hook", 1))
	dep.aws.PutSecret("other/ops-hook", "whsec")
	_, err := dep.load(t)
	if err == nil || !strings.Contains(err.Error(), "settings.json: approvers.webhooks[0].secret: secretsmanager:other/ops-hook: the deployed functions may read only secrets named countersign/") {
		t.Fatalf("Load: %v", err)
	}
}

// TestRefreshAppliesAChange: a tier changed in S3 decides the calls from
// the first invocation after the refresh interval; a configuration that
// fails validation is refused and the one in force stays.
func TestRefreshAppliesAChange(t *testing.T) {
	dep := newDeployed(t, `{"workspace": {"name": "Acme"}, "public_url": "https://approvals.example",
	  "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": "whsec_plain"}]}}`)
	d, err := dep.load(t)
	if err != nil {
		t.Fatal(err)
	}
	if d.LinkBase() != "https://approvals.example" {
		t.Errorf("links point to %q: settings.public_url must win over COUNTERSIGN_PUBLIC_URL", d.LinkBase())
	}
	tierNow := func() policy.Tier {
		m, _ := d.Calls.Current().Policy.Resolve("crm", "DELETE", "/contacts/1")
		return m.Endpoint.Tier
	}
	h := awsenv.Handler(d, func(ctx context.Context, in json.RawMessage) (policy.Tier, error) { return tierNow(), nil })
	invoke := func() policy.Tier {
		t.Helper()
		got, err := h(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	put := func(confirm string) {
		dep.aws.PutObject(bucket, "config/connections/crm/policy.json", []byte(
			`{"base_url": "https://crm.example", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": `+confirm+`}]}`),
			time.Now().Add(-time.Minute))
	}
	put(`"never"`)
	if got := invoke(); got != policy.Confirm {
		t.Fatalf("within the interval: %s, want the tier in force (confirm)", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for invoke() != policy.Never {
		if time.Now().After(deadline) {
			t.Fatal("the change was not put in force within 5 s of a 1 s interval")
		}
		time.Sleep(100 * time.Millisecond)
	}
	put(`false`)
	time.Sleep(1100 * time.Millisecond)
	if got := invoke(); got != policy.Never {
		t.Fatalf("after an invalid change: %s, want the configuration in force (never)", got)
	}
	if len(d.Dispatcher.Channels()) != 1 {
		t.Error("the channels changed")
	}
}
