// Package awsenv is how a deployed countersign function starts: FromEnv
// turns the process environment into a typed Env once (every missing or
// invalid variable named in one error), Env builds the AWS configuration
// and the clients (honouring endpoint overrides for sam local and tests),
// LoadSigningKey reads the link signing key from Secrets Manager, and Load
// assembles a Deployment: the configuration read from its S3 prefix
// (shared/s3config) with its secret references resolved from Secrets
// Manager, the approver channels (webhooks and the SNS e-mail
// topic), refused when there is none, and the graph (shared/app).
//
// A function's main.go is then only wiring:
//
//	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey)
//	awsenv.StartHTTP(d, d.Approver())
//
// StartHTTP serves an http.Handler on API Gateway's events (converted at
// the edge by httpapi.Lambda); Start serves a workflow task's handler.
// Both refresh the configuration as each invocation starts (at most
// every COUNTERSIGN_CONFIG_REFRESH_SECONDS). A cold start writes nothing
// to the table: credentials live there, managed with `countersign keys`,
// and credentials.json is seeded only when COUNTERSIGN_SEED_CREDENTIALS is
// "true" (the gateway only). The local stack (infra/local) does not use
// this package.
package awsenv
