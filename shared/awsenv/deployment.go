package awsenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/workflow/sfnflow"
)

// Load reads the environment, builds the AWS adapters (DynamoDB, Step
// Functions, the signing key from Secrets Manager, the approver channels)
// and assembles the graph with app.New. An error names every missing or
// invalid variable or configuration problem; the function's main exits
// with it.
func Load(ctx context.Context, need Needs) (*app.App, error) {
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
	ad := app.Adapters{Store: dynamostore.New(env.DynamoDB(awsCfg), env.Table, nil), Logger: logger}
	if need&NeedWorkflow != 0 {
		if ad.Workflow, err = sfnflow.New(env.SFN(awsCfg), env.Machines()); err != nil {
			return nil, err
		}
	}
	if need&NeedSigningKey != 0 {
		key, err := LoadSigningKey(ctx, env.SecretsManager(awsCfg), env.SigningKeySecret)
		if err != nil {
			return nil, err
		}
		if ad.Signer, err = links.NewSigner(key); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Settings.Approvers.Webhooks {
		ad.Channels = append(ad.Channels, &notify.Webhook{Approver: w.Name, URL: w.URL, Format: w.Format, Secret: w.Secret})
	}
	return app.New(cfg, ad, app.Options{PublicURL: env.PublicURL, SyncEvents: true}), nil
}

// MustLoad is Load for a function's main: it exits with the error.
func MustLoad(need Needs) *app.App {
	a, err := Load(context.Background(), need)
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	return a
}
