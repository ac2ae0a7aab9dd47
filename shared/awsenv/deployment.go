package awsenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/s3config"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/telemetry"
	"github.com/countersign/countersign/shared/telemetry/otlp"
	"github.com/countersign/countersign/shared/workflow/sfnflow"
)

// Deployment is a deployed function's graph and where its configuration
// comes from. Its App is the graph; Refresh puts a changed configuration in
// force.
type Deployment struct {
	*app.App
	// Env is the environment the function started with.
	Env Env
	// OAuth is the OAuth authorization server (NeedOAuth), nil otherwise.
	OAuth *oauth.Server
	// SignIn signs people in through the deployment's provider
	// (NeedOAuth): the authorization server's, and the approval page's
	// for approvers.sign_in. Every function derives the same cookie key
	// from the signing key, so a person signed in once is known to both.
	SignIn oauth.SignIn

	source   *s3config.Source
	channels func(*config.Config) []notify.Channel
	// signIn builds SignIn (WithSignIn); nil: nobody signs in here.
	signIn func(d *Deployment, key []byte, sessions oauth.SessionStore) oauth.SignIn
}

// ErrNoApproverChannel is why a deployment refuses a configuration that
// reaches nobody: every confirmation would wait its timeout and expire.
var ErrNoApproverChannel = errors.New("no approver channel: settings.json lists no approvers.webhooks and the stack has no e-mail approver " +
	"(deploy with the ApproverEmail parameter, or add a webhook); every confirmation would expire unanswered")

// Load reads the environment, builds the AWS adapters (DynamoDB, Step
// Functions, the signing key from Secrets Manager, the approver channels:
// webhooks and the SNS e-mail topic), loads the configuration (from its S3
// prefix, or the directory when no bucket is named), resolving its secret
// references, and assembles the graph with app.New. It writes nothing to
// the table unless COUNTERSIGN_SEED_CREDENTIALS says so (the gateway
// only). An error names every missing or invalid variable, or every
// configuration problem; the function's main exits with it.
func Load(ctx context.Context, need Needs, opts ...Option) (*Deployment, error) {
	step("load")
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if need&NeedOAuth != 0 {
		need |= NeedSigningKey // the OAuth keys are derived from it
	}
	env, err := FromEnv(os.LookupEnv, need)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	awsCfg, err := env.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	step("environment read")
	d := &Deployment{Env: env, signIn: o.signIn}
	var email func(workspace string) notify.Channel
	if o.email != nil && env.ApproverTopicARN != "" {
		email = o.email(env.ApproverTopicARN, env.SNSEndpoint, awsCfg)
	}
	d.channels = func(cfg *config.Config) []notify.Channel {
		out := webhooks(cfg)
		if email != nil {
			out = append(out, email(cfg.Settings.Workspace.Name))
		}
		return out
	}
	sm := env.SecretsManager(awsCfg)
	step("Secrets Manager client built")
	// The signing key is read while the configuration is: a cold start
	// waits for the slower of the two, not their sum.
	type keyResult struct {
		key links.Key
		err error
	}
	keyc := make(chan keyResult, 1)
	if need&NeedSigningKey != 0 {
		go func() {
			k, err := LoadSigningKey(ctx, sm, env.SigningKeySecret)
			step("signing key read")
			keyc <- keyResult{k, err}
		}()
	}
	check := func(cfg *config.Config) error {
		// The e-mail approver counts wherever the stack has its topic, in
		// the functions that never send it a request too.
		if len(webhooks(cfg)) == 0 && env.ApproverTopicARN == "" {
			return ErrNoApproverChannel
		}
		return nil
	}
	// Each load resolves its references afresh (a rotated secret is read
	// at the next change or cold start).
	loadFS := func(ctx context.Context, fsys fs.FS, name string) (*config.Config, error) {
		step("configuration read")
		r := newSecretResolver(ctx, sm, env.SecretsPrefix)
		// Every secret the files name is read at once, while they are
		// validated, not one round trip after another as Load meets them.
		r.prefetch(config.SecretRefs(fsys, maxPrefetch))
		cfg, err := config.LoadFS(fsys, name, &config.LoadOptions{Secrets: r.resolve})
		if err != nil {
			return nil, err
		}
		step("configuration loaded")
		if err := check(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return cfg, nil
	}
	var cfg *config.Config
	if env.ConfigBucket != "" {
		d.source = s3config.New(env.S3(awsCfg), s3config.Options{
			Bucket: env.ConfigBucket, Prefix: env.ConfigPrefix, Every: env.ConfigRefresh, Load: loadFS, Logger: logger,
		})
		step("S3 client built")
		cfg, err = d.source.Load(ctx)
	} else {
		cfg, err = loadFS(ctx, os.DirFS(env.ConfigDir), env.ConfigDir)
	}
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}

	step("configuration in hand")
	st := dynamostore.New(env.DynamoDB(awsCfg), env.Table, nil)
	ad := app.Adapters{Store: st, Logger: logger, Channels: d.channels(cfg)}
	if need&NeedWorkflow != 0 {
		if ad.Workflow, err = sfnflow.New(env.SFN(awsCfg), env.Machines()); err != nil {
			return nil, err
		}
	}
	step("store and workflow built")
	var key links.Key
	if need&NeedSigningKey != 0 {
		r := <-keyc
		step("signing key in hand")
		if r.err != nil {
			return nil, r.err
		}
		if ad.Signer, err = links.NewSigner(r.key); err != nil {
			return nil, err
		}
		key = r.key
	}
	d.App = app.New(cfg, ad, app.Options{PublicURL: d.publicURL(cfg), SyncEvents: true})
	step("graph built")
	if need&NeedOAuth != 0 {
		if err := d.withOAuth(st, key); err != nil {
			return nil, err
		}
		step("OAuth server built")
	}
	if env.SeedCredentials {
		revoked, err := d.SeedCredentials(ctx)
		if err != nil {
			return nil, err
		}
		logger.WarnContext(ctx, "credentials.json seeded into the table (COUNTERSIGN_SEED_CREDENTIALS=true)", "credentials", len(cfg.Credentials), "revoked", revoked)
	}
	return d, nil
}

// step marks the end of a step of Load; it does nothing but in
// TestColdStartSteps, which times them.
var step = func(string) {}

// webhooks are cfg's webhook approver channels. (The console prints to the
// function's log, which no approver reads: a deployment has none.)
func webhooks(cfg *config.Config) []notify.Channel {
	var out []notify.Channel
	for _, w := range cfg.Settings.Approvers.Webhooks {
		out = append(out, &notify.Webhook{Approver: w.Name, URL: w.URL, Format: w.Format, Secret: w.Secret})
	}
	return out
}

// Option is an optional part of a deployment a function asks for.
type Option func(*options)

type options struct {
	email  EmailApprover
	signIn func(d *Deployment, key []byte, sessions oauth.SessionStore) oauth.SignIn
}

// EmailApprover builds the e-mail approver of a deployment: its channel
// for a workspace, publishing to topicARN (through endpoint when set).
// snsmail.Deployed is one.
type EmailApprover func(topicARN, endpoint string, cfg aws.Config) func(workspace string) notify.Channel

// WithEmail adds the e-mail approver (COUNTERSIGN_APPROVER_TOPIC_ARN) to
// the channels. The notify function sends it the requests, and the approve
// function the follow-ups of the answers given on the approval page
// (approval_counted and decided); the others do not pass it, so they do
// not link the SNS client: an answer given in an MCP client (the gateway
// and scripts functions) is not mailed.
func WithEmail(f EmailApprover) Option {
	return func(o *options) { o.email = f }
}

// publicURL is where approval links point for cfg: settings.public_url
// when settings.json gives it, else the address the deployment knows itself
// by (the API's URL, from the template).
func (d *Deployment) publicURL(cfg *config.Config) string {
	if cfg.Settings.PublicURLGiven {
		return ""
	}
	return d.Env.PublicURL
}

// Refresh puts a changed configuration in force, at most every
// ConfigRefresh (see s3config.Source.Check); call it as an invocation
// starts. A refused change is logged and changes nothing.
func (d *Deployment) Refresh(ctx context.Context) {
	if d.source == nil {
		return
	}
	if cfg, changed := d.source.Check(ctx); changed {
		d.Apply(app.Live{Config: cfg, Channels: d.channels(cfg), PublicURL: d.publicURL(cfg)})
	}
}

// Handler wraps h so that each invocation first refreshes the
// configuration.
func Handler[In, Out any](d *Deployment, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		d.Refresh(ctx)
		return h(ctx, in)
	}
}

// Start runs h as the function's handler (lambda.Start), each invocation
// refreshing the configuration first.
//
// Telemetry starts first: EMF metrics on stdout (telemetry.StartLambda)
// and, when the OTEL_EXPORTER_OTLP_* variables ask for it, spans over
// OTLP/HTTP, flushed after each invocation (telemetry.Wrap). A bad
// telemetry setting stops the function at start, with the reason.
func Start[In, Out any](d *Deployment, h func(context.Context, In) (Out, error)) {
	if err := telemetry.StartLambda(); err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	if _, err := otlp.Start(context.Background(), &otlp.Options{Service: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}); err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	lambda.Start(telemetry.Wrap(Handler(d, h)))
}

// StartHTTP serves h as the function's handler: API Gateway's HTTP API
// (payload 2.0) events are converted at the edge (httpapi.Lambda), each
// invocation refreshing the configuration first.
func StartHTTP(d *Deployment, h http.Handler) {
	Start(d, httpapi.Lambda(h))
}

// MustLoad is Load for a function's main: it exits with the error.
func MustLoad(need Needs, opts ...Option) *Deployment {
	d, err := Load(context.Background(), need, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	return d
}
