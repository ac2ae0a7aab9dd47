// Package awstest is the end-to-end test of the AWS path: template.yaml
// deployed on this machine's emulators, with real parts wherever there are
// some.
//
//   - The five functions are their real bootstrap binaries (built for
//     linux/amd64 with -tags lambda.norpc), each under the Lambda runtime
//     interface emulator (built from its Go module), on its own loopback
//     port, with the environment the template gives it.
//   - Step Functions, Secrets Manager, S3 and SNS are one moto_server,
//     started by testdata/motoserver.py, which runs the real
//     statemachines/*.asl.json (stepfunctions.execute_state_machine) and
//     sends their Lambda tasks to the emulators. The configuration bucket
//     and the approvers' topic (with its e-mail subscription) are made from
//     the template's own resources, the template's parameters given as `sam
//     deploy --parameter-overrides` would (ApproverEmail, a 2 s
//     ConfigRefreshSeconds); the configuration is uploaded with the real
//     `countersign config push`, its webhook secret kept in Secrets Manager.
//   - DynamoDB is dynalite, the table created from the template's own Table
//     properties.
//   - The template is linted with cfn-lint and expanded with the SAM
//     translator in the same run; the OpenAPI body's routes, the functions'
//     environments and timeouts, the state machines' substitutions and the
//     roles' IAM actions are read from it.
//   - The test is API Gateway (HTTP API payload 2.0 events), the approvers'
//     webhook receiver (the e-mails are read back from moto's store of
//     published SNS messages) and the upstream; it runs the operator's
//     `countersign keys` against the table.
//   - The identity provider is zitadel/oidc's OpenID provider (its op
//     package with the example's storage and login form) on loopback, put
//     where the template's Cognito user pool would be (the functions'
//     COUNTERSIGN_SIGNIN_ISSUER and COUNTERSIGN_SIGNIN_CLIENT_ID); the
//     OAuth flow signs in there through the gateway function, and the
//     people flows (people_test.go) sign approvers in there through the
//     approve function: each person (ada, grace) a browser with its own
//     cookie jar, through the provider's login form and the gateway's
//     /oauth/callback back to the approval page.
//   - A function runs one invocation at a time per emulator, as one
//     execution environment does; the approve function has two
//     (concurrency), so that two approvers' POSTs at once run at once, as
//     on AWS. Its proxy to the AWS services holds the first of their
//     writes of the confirmation until the second comes (a meeting), so
//     each has read the record before either writes it: the races of a
//     quorum are met by DynamoDB's conditional writes and the state
//     machine every time, not only when the timing happens to be close.
//
// A flow is a name, the settings it needs and a function of a *flow (see
// flows in awstest_test.go); the gateway's cold start is the first.
//
// Run it with `make awstest`. It skips, saying how to install it, only
// where moto_server is missing.
package awstest
