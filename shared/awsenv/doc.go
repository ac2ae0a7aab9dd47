// Package awsenv reads the deployed environment of the countersign Lambda
// functions: FromEnv turns the process environment into a typed Env once at
// start (every missing or invalid variable named in one error), Env builds
// the AWS configuration and the DynamoDB, Step Functions and Secrets Manager
// clients (honouring endpoint overrides for sam local and tests), and
// LoadSigningKey reads the link signing key from Secrets Manager.
//
// A function's main.go is then only wiring:
//
//	env, err := awsenv.FromEnv(os.LookupEnv, awsenv.NeedWorkflow|awsenv.NeedSigningKey)
//	if err != nil {
//		log.Fatal(err) // names every bad variable
//	}
//	cfg, err := env.AWSConfig(ctx)
//	...
//	flow, err := sfnflow.New(env.SFN(cfg), env.Machines())
//	key, err := awsenv.LoadSigningKey(ctx, env.SecretsManager(cfg), env.SigningKeySecret)
//
// The local stack (infra/local) does not use this package.
package awsenv
