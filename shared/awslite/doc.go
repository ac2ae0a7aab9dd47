// Package awslite is a small client for the few AWS calls a deployed
// function makes: reading its configuration from S3 (ListObjectsV2 and
// GetObject), its signing key and secret references from Secrets Manager
// (GetSecretValue), driving its state machines (Step Functions'
// StartExecution, SendTaskSuccess and SendTaskFailure), mailing the
// e-mail approvers (SNS Publish), and the store's DynamoDB calls
// (DynamoDB sends them; package awslite/dynamodb gives them the SDK's
// names and types: GetItem, PutItem, UpdateItem, DeleteItem, Query, and
// for tests and the CLI the table's operations). No function links a
// service client of the SDK (TestNoFunctionLinksAnSDKClient).
//
// Why not the SDK's service clients: each links its whole generated
// client (every operation's serialiser, endpoint rules, and for S3 the
// checksum, express and presign customizations) and initialises its
// packages at every cold start. Measured on the linux/arm64 stripped
// bootstraps (make lambdas), the S3 client alone was 0.85 MB of every
// function, Step Functions' 0.26 MB, Secrets Manager's 0.07 to 0.13 MB,
// SNS's 0.46 MB of the notify and approve functions, and DynamoDB's 1.1
// to 1.3 MB of every function, whose package initialisation (its schemas
// package above all) was 0.69 MB in 3,900 allocations of every cold start
// (docs/performance.md, Sizes and cold start).
// What is kept from aws-sdk-go-v2: aws.Config (region, the credential
// provider and its cache, the HTTP client when one is set), the Signature
// Version 4 signer (aws/signer/v4) and the standard retryer (aws/retry:
// throttling and 5xx answers and connection errors are retried with its
// backoff and retry quota). Only the serialisers are ours.
//
// Errors the service answers are *Error, which is a smithy.APIError: code
// (NoSuchKey, PreconditionFailed, ExecutionAlreadyExists, TaskDoesNotExist,
// ResourceNotFoundException, ValidationException, ...), message and HTTP
// status, so callers map them with errors.As as they would the SDK's
// (DynamoDB's failed condition is also *types.ConditionalCheckFailedException
// of awslite/dynamodb/types, as with the SDK).
//
// Endpoints: Endpoint when set (sam local, moto in tests; S3 is then
// addressed path-style), else the region's public endpoint
// (<service>.<region>.amazonaws.com, .amazonaws.com.cn in China; S3
// virtual-hosted when the bucket name allows it).
package awslite
