package awsenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/workflow/sfnflow"
)

// Deployment is what every function builds once at cold start from its
// environment: the configuration, the store, the lifecycle service, the
// approver channels and, where needed, the link signer.
type Deployment struct {
	Env        Env
	Config     *policy.Config
	Store      *dynamostore.Store
	Confirm    *confirm.Service
	Dispatcher *notify.Dispatcher
	// Signer is set when NeedSigningKey was asked for.
	Signer *links.Signer
	// PublicURL is where approvers reach the approval page.
	PublicURL string
	Logger    *slog.Logger
}

// Load reads the environment and builds the deployment; an error names
// every missing or invalid variable or configuration problem, and the
// function's main exits with it.
func Load(ctx context.Context, need Needs) (*Deployment, error) {
	env, err := FromEnv(os.LookupEnv, need)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := policy.Load(env.ConfigDir, nil)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	awsCfg, err := env.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Env: env, Config: cfg, Logger: logger, PublicURL: cfg.Settings.PublicURL}
	if env.PublicURL != "" {
		d.PublicURL = env.PublicURL
	}
	d.Store = dynamostore.New(env.DynamoDB(awsCfg), env.Table, nil)
	t := cfg.Settings.Timeouts
	d.Confirm = &confirm.Service{Store: d.Store, Timeouts: confirm.Timeouts{Call: t.Call(), Script: t.Script(), Redeem: t.Redeem()}, Logger: logger}
	if need&NeedWorkflow != 0 {
		flow, err := sfnflow.New(env.SFN(awsCfg), env.Machines())
		if err != nil {
			return nil, err
		}
		d.Confirm.Workflow = flow
	}
	if need&NeedSigningKey != 0 {
		key, err := LoadSigningKey(ctx, env.SecretsManager(awsCfg), env.SigningKeySecret)
		if err != nil {
			return nil, err
		}
		if d.Signer, err = links.NewSigner(key); err != nil {
			return nil, err
		}
	}
	var channels []notify.Channel
	for _, w := range cfg.Settings.Approvers.Webhooks {
		channels = append(channels, &notify.Webhook{Approver: w.Name, URL: w.URL, Format: w.Format, Secret: w.Secret})
	}
	d.Dispatcher = notify.NewDispatcher(channels, logger)
	return d, nil
}

// MustLoad is Load for a function's main: it exits with the error.
func MustLoad(need Needs) *Deployment {
	d, err := Load(context.Background(), need)
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	return d
}
