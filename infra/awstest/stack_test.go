package awstest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/countersign/countersign/internal/oidctest"
	ddblite "github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/views"
)

// stack is the emulated deployment of template.yaml: the five bootstraps
// under the runtime interface emulator, Step Functions (and SNS, S3,
// Secrets Manager) from moto, DynamoDB from dynalite, and the test itself
// as API Gateway, approver webhook receiver and upstream.
type stack struct {
	tb   testing.TB
	root string // the repository
	dir  string // scratch: binaries, configurations, the shim's function map

	tpl      *template
	res      *resolver
	fns      []*function
	machines []*machine
	routes   []route

	moto               *proc
	motoURL, dynamoURL string
	// issuer is the OpenID provider (zitadel/oidc's, on loopback) the
	// template's sign-in variables name in place of the Cognito user pool.
	issuer   string
	provider *oidctest.Provider

	table  string
	bucket string // the configuration bucket
	topic  string // the e-mail approvers' topic
	cfg    aws.Config
	sfn    *sfn.Client
	ddb    *dynamodb.Client
	s3     *s3.Client
	Store  *dynamostore.Store

	front    *httptest.Server // API Gateway
	Upstream *upstream
	Hooks    *webhooks

	mu        sync.Mutex
	emulators map[string]*emulator // by function name
	settings  settings             // of the running emulators
	deployed  bool
	configs   int // configuration directories written
}

// emulator is one function under the runtime interface emulator, with the
// proxy its AWS clients go through. The emulator runs one invocation at a
// time, as one Lambda execution environment does; a function that must
// take concurrent invocations (concurrency) has spares, more execution
// environments of the same function behind the same proxy.
type emulator struct {
	fn     *function
	url    string
	proc   *proc
	aws    *awsProxy
	invMu  sync.Mutex // held for the invocation in progress
	spares []*emulator
	served atomic.Int64 // invocations this environment ran
}

// concurrency is how many execution environments a function has, by its
// short name (1 when not listed): Lambda runs an invocation that comes
// while every environment is busy in a new one. The approve function has
// two, so that two approvers' POSTs at once run at once, each in its own
// environment, as they would on AWS (the people flows' races).
var concurrency = map[string]int{"approve": 2}

// environments are e and its spares.
func (e *emulator) environments() []*emulator { return append([]*emulator{e}, e.spares...) }

// settings are what a flow may change in the deployed configuration.
type settings struct {
	CallSeconds, ScriptSeconds, RedeemSeconds int
	// SignInByDefault leaves approvers.sign_in out of settings.json, so
	// the template's identity provider makes it "required"; otherwise it
	// is "optional", as the flows that decide by the link alone need.
	SignInByDefault bool
}

// defaultSettings leave a person time to act under a loaded machine.
var defaultSettings = settings{CallSeconds: 60, ScriptSeconds: 60, RedeemSeconds: 60}

// Keys and names of the test configuration.
const (
	askKey        = "cs_awstest_ask"
	askCredential = "chat-user"
	operatorKey   = "cs_awstest_op"
	hookSecret    = "whsec_awstest"
	approverName  = "ops"
	// hookSecretName is where the webhook's secret is kept: the test's
	// settings.json names it, the functions read it from Secrets Manager.
	hookSecretName = stackName + "/ops-hook"
	approverEmail  = "approvers@awstest.example"
	// refreshSeconds is the stack's ConfigRefreshSeconds here: short, so a
	// configuration change is picked up in seconds.
	refreshSeconds = 2
)

// deployParameters are the template parameters the emulated deployment is
// made with, as `sam deploy --parameter-overrides` gives them.
var deployParameters = map[string]string{
	"ApproverEmail":        approverEmail,
	"ConfigRefreshSeconds": fmt.Sprint(refreshSeconds),
}

// newStack starts everything but the functions (see deploy).
func newStack(tb testing.TB, ctx context.Context) *stack {
	tb.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		tb.Fatal(err)
	}
	s := &stack{tb: tb, root: root, dir: tb.TempDir(), emulators: map[string]*emulator{}}

	// The template first: nothing else is worth starting if the SAM
	// transform fails. cfn-lint, slower, runs beside the rest.
	phase := time.Now()
	lap := func(what string) {
		tb.Logf("setup: %s in %s", what, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}
	file := filepath.Join(root, "template.yaml")
	lintErr := make(chan error, 1)
	go func() { lintErr <- lintTemplate(file) }()
	s.tpl = loadTemplate(tb, file)
	lap("template.yaml expanded by the SAM translator")
	s.res = newResolver(s.tpl, deployParameters)
	if s.fns, err = s.res.functions(); err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	var names []string
	for _, fn := range s.fns {
		names = append(names, fn.Short)
	}
	buildErr := make(chan error, 1)
	go func() { buildErr <- buildLambdas(ctx, root, s.dir, names) }()
	built := false
	defer func() {
		if !built {
			<-buildErr
		}
	}()

	s.startMoto(ctx)
	lap("moto_server started")
	s.startDynamo(ctx)
	lap("DynamoDB (dynalite) ready")
	s.Upstream = newUpstream(tb)
	s.Hooks = newWebhooks(tb)
	s.front = httptest.NewServer(http.HandlerFunc(s.serveAPI))
	tb.Cleanup(s.front.Close)

	s.createTable(ctx)
	s.createSecret(ctx)
	s.createBucket(ctx)
	s.createTopic(ctx)
	s.res.refs[s.apiLogical()] = apiID
	s.startProvider()
	if s.machines, err = s.res.machines(root); err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	if s.routes, err = s.res.routes(); err != nil {
		tb.Fatalf("template.yaml: HttpApi: %v", err)
	}
	for _, fn := range s.fns {
		if err := s.res.environment(fn); err != nil {
			tb.Fatalf("template.yaml: %v", err)
		}
	}
	built = true
	if err := <-buildErr; err != nil {
		tb.Fatalf("build the functions and the emulator: %v", err)
	}
	lap("bootstraps and emulator built")
	if err := <-lintErr; err != nil {
		tb.Fatal(err)
	}
	lap("template.yaml passed cfn-lint")
	return s
}

func (s *stack) apiLogical() string { return s.tpl.resources("AWS::Serverless::HttpApi")[0] }

// awsConfig is the test's own AWS configuration: static keys, no lookups.
func awsConfig() aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("awstest", "awstest", ""),
	}
}

// startMoto starts testdata/motoserver.py and turns on its execution of
// state machines.
func (s *stack) startMoto(ctx context.Context) {
	tb := s.tb
	port := freePort(tb)
	lambdas := filepath.Join(s.dir, "lambdas.json")
	if err := os.WriteFile(lambdas, []byte("{}"), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "motoserver.py"), "--port", strconv.Itoa(port), "--lambdas", lambdas)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	p := start(tb, "moto_server", cmd)
	s.moto = p
	s.motoURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(tb, p, s.motoURL+"/moto-api/", 30*time.Second)
	body := `{"stepfunctions": {"execute_state_machine": true}}`
	resp, err := http.Post(s.motoURL+"/moto-api/config", "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatalf("moto config: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		tb.Fatalf("moto config: HTTP %d", resp.StatusCode)
	}
	s.cfg = awsConfig()
	s.sfn = sfn.NewFromConfig(s.cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(s.motoURL) })
}

// startDynamo uses COUNTERSIGN_TEST_DYNAMODB_ENDPOINT when set (as
// scripts/test-with-dynalite.sh sets it), else starts the pinned dynalite
// of infra/dynalite, installing it first if needed.
func (s *stack) startDynamo(ctx context.Context) {
	tb := s.tb
	if ep := os.Getenv("COUNTERSIGN_TEST_DYNAMODB_ENDPOINT"); ep != "" {
		s.dynamoURL = strings.TrimRight(ep, "/")
	} else {
		dir := filepath.Join(s.root, "infra", "dynalite")
		bin := filepath.Join(dir, "node_modules", ".bin", "dynalite")
		if _, err := os.Stat(bin); err != nil {
			install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
			install.Dir = dir
			if out, err := install.CombinedOutput(); err != nil {
				tb.Fatalf("install dynalite (cd infra/dynalite && npm ci): %v\n%s", err, out)
			}
		}
		port := freePort(tb)
		p := start(tb, "dynalite", exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port)))
		waitTCP(tb, p, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second)
		s.dynamoURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	s.ddb = dynamodb.NewFromConfig(awsConfig(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(s.dynamoURL) })
}

// tableProperties are the Table properties createTable knows how to apply;
// any other fails the test, so a new one is not silently left out.
var tableProperties = map[string]bool{
	"BillingMode": true, "AttributeDefinitions": true, "KeySchema": true,
	"GlobalSecondaryIndexes": true, "TimeToLiveSpecification": true,
	"PointInTimeRecoverySpecification": true, // backups: nothing to emulate
}

// createTable creates the table from the template's own AWS::DynamoDB::Table
// properties (their names are those of the CreateTable API).
func (s *stack) createTable(ctx context.Context) {
	tb := s.tb
	ids := s.tpl.resources("AWS::DynamoDB::Table")
	if len(ids) != 1 {
		tb.Fatalf("template.yaml: want one AWS::DynamoDB::Table, have %v", ids)
	}
	props := s.tpl.properties(ids[0])
	create := map[string]any{}
	for k, v := range props {
		if !tableProperties[k] {
			tb.Fatalf("template.yaml: %s.%s: the test does not emulate this property yet", ids[0], k)
		}
		if k != "TimeToLiveSpecification" && k != "PointInTimeRecoverySpecification" {
			create[k] = v
		}
	}
	raw, _ := json.Marshal(create)
	var in dynamodb.CreateTableInput
	if err := json.Unmarshal(raw, &in); err != nil {
		tb.Fatalf("template.yaml: %s: %v", ids[0], err)
	}
	s.table = fmt.Sprintf("%s-Table-awstest%d", stackName, time.Now().UnixNano())
	in.TableName = aws.String(s.table)
	if _, err := s.ddb.CreateTable(ctx, &in); err != nil {
		tb.Fatalf("create table from template.yaml's %s: %v", ids[0], err)
	}
	tb.Cleanup(func() {
		_, _ = s.ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(s.table)})
	})
	w := dynamodb.NewTableExistsWaiter(s.ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)}, time.Minute); err != nil {
		tb.Fatalf("table %s: %v", s.table, err)
	}
	if ttl := obj(props["TimeToLiveSpecification"]); ttl != nil {
		_, err := s.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(s.table),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
				AttributeName: aws.String(fmt.Sprint(ttl["AttributeName"])), Enabled: aws.Bool(ttl["Enabled"] == true),
			},
		})
		var unknown interface{ ErrorCode() string }
		if err != nil && !(errors.As(err, &unknown) && unknown.ErrorCode() == "UnknownOperationException") {
			tb.Fatalf("table %s: TTL: %v", s.table, err)
		}
	}
	s.res.refs[ids[0]] = s.table
	// The store as the functions open it: awslite's client, not the SDK's
	// (which creates the table above from the template's properties).
	store := ddblite.NewFromConfig(awsConfig(), func(o *ddblite.Options) { o.BaseEndpoint = aws.String(s.dynamoURL) })
	s.Store = dynamostore.New(store, s.table, nil)
}

// createSecret stores the link signing key in moto's Secrets Manager in the
// shape the template's GenerateSecretString makes: {"kid":"k1","secret":<64
// alphanumerics>}.
func (s *stack) createSecret(ctx context.Context) {
	ids := s.tpl.resources("AWS::SecretsManager::Secret")
	if len(ids) != 1 {
		s.tb.Fatalf("template.yaml: want one AWS::SecretsManager::Secret, have %v", ids)
	}
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	secret := make([]byte, 64)
	for i := range secret {
		secret[i] = alnum[rand.IntN(len(alnum))]
	}
	value, _ := json.Marshal(map[string]string{"kid": "k1", "secret": string(secret)})
	sm := secretsmanager.NewFromConfig(s.cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(s.motoURL) })
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(stackName + "-signing-key"), SecretString: aws.String(string(value)),
	})
	if err != nil {
		s.tb.Fatalf("create signing key secret: %v", err)
	}
	s.res.refs[ids[0]] = aws.ToString(out.ARN)
}

// bucketProperties are the ConfigBucket properties createBucket applies or
// knows there is nothing to emulate of; any other fails the test.
var bucketProperties = map[string]bool{
	"VersioningConfiguration": true, "PublicAccessBlockConfiguration": true, "BucketEncryption": true,
	"OwnershipControls": true, "LifecycleConfiguration": true, // nothing the functions see
}

// createBucket creates the configuration bucket (the template's one
// AWS::S3::Bucket) in moto, versioned, private and encrypted as the
// template says, and writes a signing key and the webhook's secret where
// the configuration names it.
func (s *stack) createBucket(ctx context.Context) {
	tb := s.tb
	ids := s.tpl.resources("AWS::S3::Bucket")
	if len(ids) != 1 {
		tb.Fatalf("template.yaml: want one AWS::S3::Bucket, have %v", ids)
	}
	props := s.tpl.properties(ids[0])
	for k := range props {
		if !bucketProperties[k] {
			tb.Fatalf("template.yaml: %s.%s: the test does not emulate this property yet", ids[0], k)
		}
	}
	s.s3 = s3.NewFromConfig(s.cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(s.motoURL), true })
	s.bucket = strings.ToLower(fmt.Sprintf("%s-%s-awstest%d", stackName, ids[0], time.Now().UnixNano()))
	if _, err := s.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		tb.Fatalf("create bucket from template.yaml's %s: %v", ids[0], err)
	}
	if obj(props["VersioningConfiguration"])["Status"] == "Enabled" {
		_, err := s.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(s.bucket),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
		if err != nil {
			tb.Fatalf("bucket %s: versioning: %v", s.bucket, err)
		}
	}
	if pab := obj(props["PublicAccessBlockConfiguration"]); pab != nil {
		_, err := s.s3.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(s.bucket),
			PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
				BlockPublicAcls: aws.Bool(pab["BlockPublicAcls"] == true), BlockPublicPolicy: aws.Bool(pab["BlockPublicPolicy"] == true),
				IgnorePublicAcls: aws.Bool(pab["IgnorePublicAcls"] == true), RestrictPublicBuckets: aws.Bool(pab["RestrictPublicBuckets"] == true),
			}})
		if err != nil {
			tb.Fatalf("bucket %s: public access block: %v", s.bucket, err)
		}
	}
	s.res.refs[ids[0]] = s.bucket
	s.res.attrs[ids[0]+".Arn"] = "arn:aws:s3:::" + s.bucket

	sm := secretsmanager.NewFromConfig(s.cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(s.motoURL) })
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(hookSecretName), SecretString: aws.String(hookSecret)}); err != nil {
		tb.Fatalf("create the webhook's secret: %v", err)
	}
}

// createTopic creates the e-mail approvers' topic (the template's
// AWS::SNS::Topic, whose condition ApproverEmail makes true here) and its
// subscription in moto.
func (s *stack) createTopic(ctx context.Context) {
	tb := s.tb
	ids := s.tpl.resources("AWS::SNS::Topic")
	if len(ids) != 1 {
		tb.Fatalf("template.yaml: want one AWS::SNS::Topic, have %v", ids)
	}
	if cond, ok := obj(obj(s.tpl.Raw["Resources"])[ids[0]])["Condition"].(string); ok {
		if on, err := s.res.condition(cond); err != nil || !on {
			tb.Fatalf("template.yaml: %s: condition %s is %v (%v) with ApproverEmail given", ids[0], cond, on, err)
		}
	}
	name, err := s.res.str(s.tpl.properties(ids[0])["TopicName"])
	if err != nil {
		tb.Fatalf("template.yaml: %s.TopicName: %v", ids[0], err)
	}
	client := sns.NewFromConfig(s.cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(s.motoURL) })
	out, err := client.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		tb.Fatalf("create topic from template.yaml's %s: %v", ids[0], err)
	}
	s.topic = aws.ToString(out.TopicArn)
	s.res.refs[ids[0]] = s.topic
	for _, sub := range s.tpl.resources("AWS::SNS::Subscription") {
		p := s.tpl.properties(sub)
		endpoint, err := s.res.str(p["Endpoint"])
		if err != nil {
			tb.Fatalf("template.yaml: %s.Endpoint: %v", sub, err)
		}
		_, err = client.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(s.topic), Protocol: aws.String(fmt.Sprint(p["Protocol"])), Endpoint: aws.String(endpoint)})
		if err != nil {
			tb.Fatalf("subscribe %s: %v", sub, err)
		}
	}
}

// configDir writes the test configuration for set into a new directory and
// returns it. tiers gives an endpoint's confirm by method (nil: GET auto,
// DELETE true, as every flow but the configuration change's has them). It is checked as
// `countersign config push` checks it (secret references not resolved).
func (s *stack) configDir(set settings, tiers map[string]any) string {
	tb := s.tb
	s.configs++
	dir := filepath.Join(s.dir, fmt.Sprintf("config-%d", s.configs))
	approvers := map[string]any{"console": false, "webhooks": []any{map[string]any{
		"name": approverName, "url": s.Hooks.URL + "/hook", "format": "json",
		"secret": map[string]any{"secretsmanager": hookSecretName},
	}}}
	if !set.SignInByDefault {
		approvers["sign_in"] = "optional"
	}
	files := map[string]any{
		"settings.json": map[string]any{
			"workspace":  map[string]any{"name": "awstest", "accent_color": "#5b21b6"},
			"public_url": s.front.URL,
			"approvers":  approvers,
			"timeouts":   map[string]any{"call_seconds": set.CallSeconds, "script_seconds": set.ScriptSeconds, "redeem_seconds": set.RedeemSeconds},
		},
		// Not uploaded by config push: deployed credentials live in the table.
		"credentials.json": []any{map[string]any{"id": askCredential, "key": askKey, "choice": "ask_person"},
			map[string]any{"id": "root", "key": operatorKey, "role": "operator"}},
		"connections/crm/policy.json": map[string]any{
			"base_url": s.Upstream.URL,
			"endpoints": []any{endpoint("GET", tiers), endpoint("DELETE", tiers),
				map[string]any{"method": "POST", "path": "/contacts/{id}/close", "confirm": "review"}},
		},
		// The show flow's: the same upstream, its DELETE showing the
		// contact as it is now (read by the notify task) and checking it
		// again before the write.
		"connections/" + showConnection + "/policy.json": map[string]any{
			"base_url": s.Upstream.URL,
			"endpoints": []any{map[string]any{"method": "GET", "path": "/contacts/{id}"},
				map[string]any{"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "show": map[string]any{"path": "/contacts/{id}"}}},
		},
		// The people flows': the same upstream, its DELETE decided by two
		// people (a quorum), or by someone other than the caller (four eyes).
		"connections/" + quorumConnection + "/policy.json": map[string]any{
			"base_url":  s.Upstream.URL,
			"endpoints": []any{map[string]any{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}},
			"approval":  map[string]any{"required": 2},
		},
		"connections/" + rememberConnection + "/policy.json": rememberPolicy(s.Upstream.URL),
		"connections/" + editConnection + "/policy.json":     editPolicy(s.Upstream.URL),
		"connections/" + fourEyesConnection + "/policy.json": map[string]any{
			"base_url":  s.Upstream.URL,
			"endpoints": []any{map[string]any{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}},
			"approval":  map[string]any{"separate_approver": true},
		},
		"connections/" + passkeyConnection + "/policy.json": map[string]any{
			"base_url":  s.Upstream.URL,
			"endpoints": []any{map[string]any{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}},
			"approval":  map[string]any{"passkey": true},
		},
	}
	for name, v := range files {
		b, _ := json.MarshalIndent(v, "", "  ")
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// endpoint is the crm endpoint of method on /contacts/{id}, with its
// confirm from tiers or the default (GET auto, DELETE true).
func endpoint(method string, tiers map[string]any) map[string]any {
	ep := map[string]any{"method": method, "path": "/contacts/{id}"}
	confirm, ok := tiers[method]
	if !ok && method == "DELETE" {
		confirm, ok = true, true
	}
	if ok && confirm != nil {
		ep["confirm"] = confirm
	}
	return ep
}

// push uploads dir to the configuration bucket with the real tool,
// `countersign config push`, and returns what it printed.
func (s *stack) push(dir string) (string, error) {
	cmd := exec.Command(filepath.Join(s.dir, "countersign"), "config", "push", dir, "--bucket", s.bucket, "--endpoint", s.motoURL)
	cmd.Env = append(os.Environ(), s.toolEnv()...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tool runs the countersign tool with args against the emulated account
// and returns what it printed on standard output and on standard error.
func (s *stack) tool(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(s.dir, "countersign"), args...)
	cmd.Env = append(os.Environ(), s.toolEnv()...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// toolEnv is an operator's environment for the emulated account.
func (s *stack) toolEnv() []string {
	return []string{"AWS_REGION=" + region, "AWS_ACCESS_KEY_ID=awstest", "AWS_SECRET_ACCESS_KEY=awstest", "AWS_SESSION_TOKEN=",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + filepath.Join(s.dir, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(s.dir, "none")}
}

// writeConfig pushes the configuration for set to the bucket and puts its
// credentials in the table, as an operator would (countersign keys would
// make new keys; the flows need the known one).
func (s *stack) writeConfig(set settings) {
	tb := s.tb
	dir := s.configDir(set, nil)
	if out, err := s.push(dir); err != nil {
		tb.Fatalf("countersign config push: %v\n%s", err, out)
	}
	cfg, err := config.Load(dir, &config.LoadOptions{KeepSecretRefs: true})
	if err != nil {
		tb.Fatalf("test configuration: %v", err)
	}
	for _, c := range cfg.Credentials {
		if err := s.Store.PutCredential(context.Background(), c); err != nil {
			tb.Fatalf("put credential %s: %v", c.ID, err)
		}
	}
}

// deploy makes the functions run with set: on the first call, or when set
// differs from the running configuration, every emulator is (re)started,
// as a redeploy would, so the next invocation is a cold start reading it.
func (s *stack) deploy(set settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deployed && s.settings == set {
		return
	}
	tb := s.tb
	s.writeConfig(set)
	for _, e := range s.emulators {
		for _, env := range e.environments() {
			env.invMu.Lock()
			env.proc.stop()
			env.invMu.Unlock()
		}
	}
	lambdas := map[string]string{}
	for _, fn := range s.fns {
		e := s.emulators[fn.Name]
		if e == nil {
			e = &emulator{fn: fn, aws: newAWSProxy(tb, s.dynamoURL, s.motoURL)}
			for range max(concurrency[fn.Short], 1) - 1 {
				e.spares = append(e.spares, &emulator{fn: fn, aws: e.aws})
			}
			s.emulators[fn.Name] = e
		}
		for _, env := range e.environments() {
			s.startEmulator(env)
		}
	}
	for _, e := range s.emulators {
		for _, env := range e.environments() {
			s.waitEmulator(env)
		}
		// Step Functions' tasks go to the first environment.
		lambdas[e.fn.Name] = e.url
	}
	// The shim re-reads the map on every invocation: replace it whole.
	b, _ := json.Marshal(lambdas)
	tmp := filepath.Join(s.dir, "lambdas.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "lambdas.json")); err != nil {
		tb.Fatal(err)
	}
	s.settings, s.deployed = set, true
}

// waitEmulator waits until env listens. An emulator whose port another
// process took between freePort and its bind ("address already in use")
// is started again on other ports, at most twice.
func (s *stack) waitEmulator(env *emulator) {
	tb := s.tb
	tb.Helper()
	for attempt := 1; ; attempt++ {
		err := listening(env.proc, strings.TrimPrefix(env.url, "http://"), 30*time.Second)
		if err == nil {
			return
		}
		if attempt < 3 && env.proc.exited() && strings.Contains(env.proc.tail(4000), "address already in use") {
			tb.Logf("%s lost its port to another process before it listened; starting it again on other ports", env.fn.Short)
			s.startEmulator(env)
			continue
		}
		tb.Fatal(err)
	}
}

// startEmulator starts (or restarts) one execution environment of e.fn
// under the runtime interface emulator, with the environment the template
// gives the function.
func (s *stack) startEmulator(e *emulator) {
	tb, fn := s.tb, e.fn
	port, rapi := freePort(tb), freePort(tb)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir, "TZ=UTC",
		"AWS_REGION=" + region, "AWS_DEFAULT_REGION=" + region,
		"AWS_ACCESS_KEY_ID=awstest", "AWS_SECRET_ACCESS_KEY=awstest", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_NAME=" + fn.Name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(fn.Timeout),
		"LOG_LEVEL=warn",
	}
	for k, v := range fn.Env {
		if k == "COUNTERSIGN_PUBLIC_URL" {
			v = s.front.URL // the API's URL: the test is API Gateway
		}
		env = append(env, k+"="+v)
	}
	for _, k := range []string{"COUNTERSIGN_DYNAMODB_ENDPOINT", "COUNTERSIGN_SFN_ENDPOINT", "COUNTERSIGN_SECRETSMANAGER_ENDPOINT",
		"COUNTERSIGN_S3_ENDPOINT", "COUNTERSIGN_SNS_ENDPOINT"} {
		env = append(env, k+"="+e.aws.URL)
	}
	cmd := exec.Command(filepath.Join(s.dir, "aws-lambda-rie"),
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", rapi),
		filepath.Join(s.dir, fn.Short, "bootstrap"))
	cmd.Dir = filepath.Join(s.dir, fn.Short)
	cmd.Env = env
	e.invMu.Lock()
	e.url, e.proc = url, start(tb, fn.Short, cmd)
	e.invMu.Unlock()
}

// snsMail is one message published to the approvers' topic.
type snsMail struct {
	Subject, Body string
}

// snsMessage waits for the request published to the approvers' topic for
// confirmation id (its body names "Confirmation <id>").
func (s *stack) snsMessage(tb testing.TB, id string, timeout time.Duration) snsMail {
	tb.Helper()
	return s.snsMessageWhere(tb, "the request for "+id, func(m snsMail) bool { return strings.Contains(m.Body, "Confirmation "+id) }, timeout)
}

// snsMessageWhere waits for a message published to the approvers' topic
// that match accepts (what describes it in a failure), read from moto's
// store of sent notifications (GET /moto-api/data.json:
// sns.Topic[].sent_notifications, each [message id, message, subject,
// attributes, group]).
func (s *stack) snsMessageWhere(tb testing.TB, what string, match func(snsMail) bool, timeout time.Duration) snsMail {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(s.motoURL + "/moto-api/data.json")
		if err != nil {
			tb.Fatalf("moto data: %v", err)
		}
		var data struct {
			SNS struct {
				Topic []struct {
					ARN               string  `json:"arn"`
					SentNotifications [][]any `json:"sent_notifications"`
				} `json:"Topic"`
			} `json:"sns"`
		}
		err = json.NewDecoder(resp.Body).Decode(&data)
		resp.Body.Close()
		if err != nil {
			tb.Fatalf("moto data: %v", err)
		}
		for _, t := range data.SNS.Topic {
			if t.ARN != s.topic {
				continue
			}
			for _, n := range t.SentNotifications {
				if len(n) >= 3 {
					body, _ := n[1].(string)
					subject, _ := n[2].(string)
					if m := (snsMail{Subject: subject, Body: body}); match(m) {
						return m
					}
				}
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no message (%s) on %s within %s", what, s.topic, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// emulator returns the emulator of the function named name.
func (s *stack) emulator(short string) *emulator {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emulators[stackName+"-"+short]
}

// resetWorkflows stops every running execution and creates the state
// machines afresh under the same names (so the same ARNs): moto 5.2.1's
// StartExecution deep-copies the state machine with its executions and
// fails ("cannot pickle '_thread.RLock'") while another one is running.
func (s *stack) resetWorkflows(ctx context.Context) {
	tb := s.tb
	for _, m := range s.machines {
		out, err := s.sfn.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(m.ARN), StatusFilter: sfntypes.ExecutionStatusRunning})
		if err == nil {
			for _, ex := range out.Executions {
				_, _ = s.sfn.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: ex.ExecutionArn})
			}
			if _, err := s.sfn.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(m.ARN)}); err != nil {
				tb.Fatalf("delete state machine %s: %v", m.Name, err)
			}
		}
		out2, err := s.sfn.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name: aws.String(m.Name), Definition: aws.String(m.Definition), Type: sfntypes.StateMachineTypeStandard,
			RoleArn: aws.String(fmt.Sprintf("arn:%s:iam::%s:role/%s-%sRole", partition, accountID, stackName, m.Logical)),
		})
		if err != nil {
			tb.Fatalf("create state machine %s from template.yaml's %s: %v", m.Name, m.Logical, err)
		}
		if got := aws.ToString(out2.StateMachineArn); got != m.ARN {
			tb.Fatalf("state machine %s: moto made ARN %s, the template resolves %s", m.Name, got, m.ARN)
		}
	}
}

// machine returns the state machine whose logical id is logical.
func (s *stack) machine(logical string) *machine {
	for _, m := range s.machines {
		if m.Logical == logical {
			return m
		}
	}
	s.tb.Fatalf("template.yaml has no state machine %s", logical)
	return nil
}

// execution is how an execution ended.
type execution struct {
	Status string   // SUCCEEDED, FAILED, ...
	States []string // the states entered, in order
}

// Last is the last state entered.
func (e execution) Last() string {
	if len(e.States) == 0 {
		return ""
	}
	return e.States[len(e.States)-1]
}

func (e execution) String() string { return e.Status + " via " + strings.Join(e.States, " → ") }

// waitExecution waits until the execution named name of m has ended.
func (s *stack) waitExecution(ctx context.Context, tb testing.TB, m *machine, name string, timeout time.Duration) execution {
	tb.Helper()
	arn := fmt.Sprintf("arn:%s:states:%s:%s:execution:%s:%s", partition, region, accountID, m.Name, name)
	deadline := time.Now().Add(timeout)
	for {
		out, err := s.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			tb.Fatalf("describe execution %s: %v", arn, err)
		}
		if out.Status != sfntypes.ExecutionStatusRunning {
			ex := execution{Status: string(out.Status)}
			hist, err := s.sfn.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn)})
			if err != nil {
				tb.Fatalf("execution history %s: %v", arn, err)
			}
			for _, ev := range hist.Events {
				if d := ev.StateEnteredEventDetails; d != nil {
					ex.States = append(ex.States, aws.ToString(d.Name))
				}
			}
			return ex
		}
		if time.Now().After(deadline) {
			tb.Fatalf("execution %s still running after %s", arn, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serveAPI is API Gateway: it matches the request against the HTTP API's
// routes (from the template's OpenAPI body), sends the function the HTTP API
// payload 2.0 event API Gateway would send, and writes its answer back.
func (s *stack) serveAPI(w http.ResponseWriter, r *http.Request) {
	var rt *route
	var params map[string]string
	// API Gateway picks the most specific route: the most literal
	// segments, and a route without a greedy parameter over one with.
	best := -1
	for i := range s.routes {
		if s.routes[i].Method != "ANY" && s.routes[i].Method != r.Method {
			continue
		}
		if p, ok := s.routes[i].match(r.URL.Path); ok {
			if score := s.routes[i].specificity(); score > best {
				rt, params, best = &s.routes[i], p, score
			}
		}
	}
	if rt == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			cookies = append(cookies, vs...)
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	now := time.Now().UTC()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: rt.routeKey(), RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: rt.routeKey(), AccountID: accountID, Stage: "$default", APIID: apiID,
			DomainName: r.Host, DomainPrefix: strings.Split(r.Host, ".")[0],
			RequestID: strconv.FormatInt(now.UnixNano(), 36), Time: now.Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: "127.0.0.1", UserAgent: r.UserAgent(),
			},
		},
	}
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if utf8.Valid(b) {
		ev.Body = string(b)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	s.mu.Lock()
	e := s.emulators[rt.Function]
	s.mu.Unlock()
	if e == nil {
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		s.tb.Errorf("route %s integrates %s, which the template does not define", rt.routeKey(), rt.Function)
		return
	}
	out, err := e.invoke(r.Context(), ev)
	var resp events.APIGatewayV2HTTPResponse
	if err == nil {
		err = json.Unmarshal(out, &resp)
	}
	if err != nil {
		s.tb.Errorf("%s %s → %s: %v\n%s", r.Method, r.URL.Path, rt.Function, err, e.logTail(3000))
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		body, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// logTail is the end of the emulator's output (the function's logs).
func (e *emulator) logTail(n int) string {
	e.invMu.Lock()
	defer e.invMu.Unlock()
	return e.proc.tail(n)
}

// dumpLogs logs the end of every process's output, after a failed flow.
func (s *stack) dumpLogs(tb testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb.Logf("moto_server:\n%s", s.moto.tail(3000))
	for _, fn := range s.fns {
		if e := s.emulators[fn.Name]; e != nil {
			for i, env := range e.environments() {
				tb.Logf("%s #%d (emulator and function):\n%s", fn.Short, i+1, env.logTail(3000))
			}
		}
	}
}

// invoke sends the event to an idle execution environment of the function
// (the first, else a spare), or waits for the first when all are busy, and
// returns the function's result; a function error is an error.
func (e *emulator) invoke(ctx context.Context, ev any) ([]byte, error) {
	env := e.acquire()
	defer env.invMu.Unlock()
	env.served.Add(1)
	b, _ := json.Marshal(ev)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.url+"/2015-03-31/functions/function/invocations", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", e.fn.Name, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var fe struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &fe) == nil && fe.Type != "" {
		return nil, fmt.Errorf("invoke %s: HTTP %d: %s", e.fn.Name, resp.StatusCode, out)
	}
	return out, nil
}

// acquire returns an execution environment of e, locked for one invocation.
func (e *emulator) acquire() *emulator {
	for _, env := range e.environments() {
		if env.invMu.TryLock() {
			return env
		}
	}
	e.invMu.Lock()
	return e
}

// awsProxy sits between one function and the emulated AWS services: it
// records the IAM action of every call (to hold against the role the
// template gives the function) and can fail chosen actions.
type awsProxy struct {
	*httptest.Server
	mu      sync.Mutex
	actions map[string]int
	failing map[string]bool
	meeting *meeting
}

// meeting holds the requests it matches until n of them have come (or its
// wait ends), then lets them all go on at once: the writes of racing
// invocations meet in the store only after each has read what it writes
// over, as on a slow network, whichever of them ran faster.
type meeting struct {
	match   func(action string, body []byte) bool
	n       int
	wait    time.Duration
	mu      sync.Mutex
	arrived int
	all     chan struct{} // closed when n have come
}

// join holds a matched request until the meeting is complete or its wait
// ends; a request that comes after it completed goes on at once.
func (m *meeting) join() {
	m.mu.Lock()
	if m.arrived >= m.n {
		m.mu.Unlock()
		return
	}
	m.arrived++
	if m.arrived == m.n {
		close(m.all)
	}
	m.mu.Unlock()
	select {
	case <-m.all:
	case <-time.After(m.wait):
	}
}

// met reports whether n matched requests came.
func (m *meeting) met() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.arrived >= m.n
}

// meet makes the proxy hold the next n requests that match until all n
// have come, waiting at most wait; it returns the meeting, to ask whether
// it was met. meet(0, ...) ends it.
func (p *awsProxy) meet(n int, wait time.Duration, match func(action string, body []byte) bool) *meeting {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.meeting = nil
	if n > 0 {
		p.meeting = &meeting{match: match, n: n, wait: wait, all: make(chan struct{})}
	}
	return p.meeting
}

func newAWSProxy(tb testing.TB, dynamoURL, motoURL string) *awsProxy {
	p := &awsProxy{actions: map[string]int{}, failing: map[string]bool{}}
	dyn, _ := url.Parse(dynamoURL)
	moto, _ := url.Parse(motoURL)
	toDyn, toMoto := httputil.NewSingleHostReverseProxy(dyn), httputil.NewSingleHostReverseProxy(moto)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		action := iamAction(r, body)
		p.mu.Lock()
		p.actions[action]++
		fail := p.failing[action]
		m := p.meeting
		p.mu.Unlock()
		if m != nil && m.match(action, body) {
			m.join()
		}
		if fail {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"__type":"ServiceUnavailable","message":"awstest: `+action+` made to fail"}`)
			return
		}
		if strings.HasPrefix(action, "dynamodb:") {
			toDyn.ServeHTTP(w, r)
		} else {
			toMoto.ServeHTTP(w, r)
		}
	}))
	tb.Cleanup(p.Close)
	return p
}

// iamAction names the IAM action of an AWS request: a JSON protocol one
// by its X-Amz-Target (DynamoDB_20120810.GetItem → dynamodb:GetItem), a
// query protocol one by its Action (SNS Publish → sns:Publish), and an S3
// REST one, path-style, by its method and path (GET /bucket?list-type=2 →
// s3:ListBucket, GET /bucket/key → s3:GetObject).
func iamAction(r *http.Request, body []byte) string {
	target := r.Header.Get("X-Amz-Target")
	svc, op, ok := strings.Cut(target, ".")
	if !ok {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" && r.Method == http.MethodPost {
			return "sns:" + form.Get("Action")
		}
		_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		switch {
		case r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2":
			return "s3:ListBucket"
		case r.Method == http.MethodGet && key != "":
			return "s3:GetObject"
		case r.Method == http.MethodPut && key != "":
			return "s3:PutObject"
		}
		return "unknown:" + r.Method + " " + r.URL.Path
	}
	switch {
	case strings.HasPrefix(svc, "DynamoDB_"):
		svc = "dynamodb"
	case svc == "AWSStepFunctions":
		svc = "states"
	case svc == "secretsmanager":
	default:
		svc = strings.ToLower(svc)
	}
	return svc + ":" + op
}

// fail makes action fail (503) until called again with on false.
func (p *awsProxy) fail(action string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing[action] = on
}

// count returns how many times each action was called so far.
func (p *awsProxy) count() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.actions))
	for a, n := range p.actions {
		out[a] = n
	}
	return out
}

// used returns the actions called so far, sorted.
func (p *awsProxy) used() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for a := range p.actions {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// upstream is the connection's API: it records every request and answers
// as a small CRM would.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string // "DELETE /contacts/12 key=<Idempotency-Key>", then " body=<body>" when it has one
	// versions changes what a GET of a path answers (change): the show
	// flow's resource changed by someone else.
	versions map[string]int
}

// change makes the next GETs of path answer another version of it.
func (u *upstream) change(path string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.versions[path]++
}

func newUpstream(tb testing.TB) *upstream {
	u := &upstream{versions: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		hit := fmt.Sprintf("%s %s key=%s", r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"))
		if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16)); len(b) > 0 {
			hit += " body=" + string(b) // what ran, for the edit flow
		}
		u.hits = append(u.hits, hit)
		version := u.versions[r.URL.Path]
		u.mu.Unlock()
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if version > 0 {
			fmt.Fprintf(w, `{"path":%q,"version":%d}`, r.URL.Path, version)
			return
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	tb.Cleanup(u.Close)
	return u
}

// Hits returns the requests received whose "METHOD /path" is prefix, or all.
func (u *upstream) Hits(prefix string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, h := range u.hits {
		if strings.HasPrefix(h, prefix) {
			out = append(out, h)
		}
	}
	return out
}

// webhooks is the approvers' webhook receiver; it checks every delivery's
// Countersign-Signature.
type webhooks struct {
	*httptest.Server
	tb     testing.TB
	mu     sync.Mutex
	events []hookEvent
	more   chan struct{}
}

type hookEvent struct {
	Type         string `json:"type"`
	Confirmation struct {
		ID         string `json:"id"`
		Kind       string `json:"kind"`
		Operations []struct {
			Method string `json:"method"`
			Path   string `json:"path"`
		} `json:"operations"`
		DecidedBy *views.Decider `json:"decided_by"`
	} `json:"confirmation"`
	Decision string `json:"decision"`
	Status   string `json:"status"`
	Links    []struct {
		Approver string `json:"approver"`
		URL      string `json:"url"`
	} `json:"links"`
}

func newWebhooks(tb testing.TB) *webhooks {
	h := &webhooks{tb: tb, more: make(chan struct{}, 1)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := notify.VerifySignature(r.Header.Get("Countersign-Signature"), b, hookSecret, time.Now(), 0); err != nil {
			tb.Errorf("webhook delivery with a bad signature: %v\n%s", err, b)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev hookEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			tb.Errorf("webhook delivery is not JSON: %v\n%s", err, b)
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
		select {
		case h.more <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(h.Close)
	return h
}

// wait returns the first event of type typ for confirmation id, waiting
// up to timeout for it.
func (h *webhooks) wait(tb testing.TB, typ, id string, timeout time.Duration) hookEvent {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		for _, ev := range h.events {
			if ev.Type == typ && ev.Confirmation.ID == id {
				h.mu.Unlock()
				return ev
			}
		}
		h.mu.Unlock()
		select {
		case <-h.more:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			tb.Fatalf("no %s webhook for %s within %s (got %s)", typ, id, timeout, h.types())
		}
	}
}

// count is how many events of type typ for confirmation id came so far.
func (h *webhooks) count(typ, id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range h.events {
		if ev.Type == typ && ev.Confirmation.ID == id {
			n++
		}
	}
	return n
}

// types lists the events received, for messages.
func (h *webhooks) types() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		out = append(out, ev.Type+" "+ev.Confirmation.ID)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// link returns the approval link for approver in a requested event.
func (ev hookEvent) link(tb testing.TB, approver string) *url.URL {
	tb.Helper()
	for _, l := range ev.Links {
		if l.Approver == approver {
			u, err := url.Parse(l.URL)
			if err != nil {
				tb.Fatalf("link %q: %v", l.URL, err)
			}
			return u
		}
	}
	tb.Fatalf("no link for %s in %+v", approver, ev.Links)
	return nil
}

// checkLeastPrivilege holds every AWS action each function called against
// the actions its role in the transformed template allows, and logs both.
func (s *stack) checkLeastPrivilege(tb testing.TB) {
	tb.Helper()
	grants := s.res.grants()
	for _, fn := range s.fns {
		e := s.emulators[fn.Name]
		if e == nil {
			continue
		}
		used := e.aws.used()
		granted := grants[fn.Logical]
		var denied []string
		for _, a := range used {
			if !allows(granted, a) {
				denied = append(denied, a)
			}
		}
		var unused []string
		for _, g := range granted {
			if !slices.ContainsFunc(used, func(a string) bool { return allows([]string{g}, a) }) {
				unused = append(unused, g)
			}
		}
		tb.Logf("IAM %s: called %v; granted but not called in these flows %v", fn.Short, used, unused)
		if len(denied) > 0 {
			tb.Errorf("IAM: %s called %v, which its role in template.yaml does not allow (it allows %v)", fn.Logical, denied, granted)
		}
	}
}
