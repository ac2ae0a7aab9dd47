package awsenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/workflow"
)

// The environment variables FromEnv reads.
const (
	VarTable                  = "COUNTERSIGN_TABLE"
	VarConfigDir              = "COUNTERSIGN_CONFIG_DIR"
	VarPublicURL              = "COUNTERSIGN_PUBLIC_URL"
	VarConfirmMachineARN      = "COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN"
	VarBatchMachineARN        = "COUNTERSIGN_BATCH_STATE_MACHINE_ARN"
	VarSigningKeySecret       = "COUNTERSIGN_SIGNING_KEY_SECRET"
	VarConfigBucket           = "COUNTERSIGN_CONFIG_BUCKET"
	VarConfigPrefix           = "COUNTERSIGN_CONFIG_PREFIX"
	VarConfigRefreshSeconds   = "COUNTERSIGN_CONFIG_REFRESH_SECONDS"
	VarApproverTopicARN       = "COUNTERSIGN_APPROVER_TOPIC_ARN"
	VarSecretsPrefix          = "COUNTERSIGN_SECRETS_PREFIX"
	VarSeedCredentials        = "COUNTERSIGN_SEED_CREDENTIALS"
	VarSignInIssuer           = "COUNTERSIGN_SIGNIN_ISSUER"
	VarSignInClientID         = "COUNTERSIGN_SIGNIN_CLIENT_ID"
	VarDynamoDBEndpoint       = "COUNTERSIGN_DYNAMODB_ENDPOINT"
	VarSFNEndpoint            = "COUNTERSIGN_SFN_ENDPOINT"
	VarSecretsManagerEndpoint = "COUNTERSIGN_SECRETSMANAGER_ENDPOINT"
	VarS3Endpoint             = "COUNTERSIGN_S3_ENDPOINT"
	VarSNSEndpoint            = "COUNTERSIGN_SNS_ENDPOINT"

	// VarLambdaTaskRoot is set by the Lambda runtime to the directory the
	// function's code was unpacked into (/var/task).
	VarLambdaTaskRoot = "LAMBDA_TASK_ROOT"
)

// DefaultConfigDir is the configuration directory when COUNTERSIGN_CONFIG_DIR
// is unset and no bucket is named: ./config beside bootstrap.
const DefaultConfigDir = "./config"

// DefaultConfigPrefix is the configuration's prefix in its bucket when
// COUNTERSIGN_CONFIG_PREFIX is unset.
const DefaultConfigPrefix = "config/"

// DefaultConfigRefresh is how often a deployed function looks for a
// configuration change when COUNTERSIGN_CONFIG_REFRESH_SECONDS is unset.
const DefaultConfigRefresh = 30 * time.Second

// Needs says which optional groups of variables a function requires.
type Needs uint

const (
	// NeedWorkflow requires the state machine ARNs
	// (COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN and
	// COUNTERSIGN_BATCH_STATE_MACHINE_ARN): functions that start executions
	// or answer tasks (gateway, approve).
	NeedWorkflow Needs = 1 << iota
	// NeedSigningKey requires COUNTERSIGN_SIGNING_KEY_SECRET: functions that
	// sign or verify approval links (notify, approve).
	NeedSigningKey
	// MaySeedCredentials lets COUNTERSIGN_SEED_CREDENTIALS=true write the
	// configuration's credentials.json to the table at start (the gateway
	// only; off unless the variable says so).
	MaySeedCredentials
	// NeedOAuth makes the function the OAuth authorization server and
	// checks access tokens (the gateway and scripts functions); it needs
	// NeedSigningKey (the OAuth keys are derived from the signing key). It
	// reads COUNTERSIGN_SIGNIN_ISSUER and COUNTERSIGN_SIGNIN_CLIENT_ID.
	NeedOAuth
)

// Env is the configuration of a deployed function, read once at start.
type Env struct {
	// Table is the DynamoDB table (COUNTERSIGN_TABLE, required).
	Table string
	// ConfigDir is the configuration directory (COUNTERSIGN_CONFIG_DIR,
	// default "./config"), read when no ConfigBucket is named. A relative
	// path is resolved against LAMBDA_TASK_ROOT when that is set, else left
	// relative to the working directory.
	ConfigDir string
	// ConfigBucket and ConfigPrefix locate the configuration in S3
	// (COUNTERSIGN_CONFIG_BUCKET, COUNTERSIGN_CONFIG_PREFIX, default
	// "config/"); when the bucket is set the functions read it there and
	// re-read it every ConfigRefresh (COUNTERSIGN_CONFIG_REFRESH_SECONDS,
	// 1 to 3600, default 30).
	ConfigBucket, ConfigPrefix string
	ConfigRefresh              time.Duration
	// PublicURL is the address the deployment knows itself by, where
	// approval links point unless settings.json gives public_url
	// (COUNTERSIGN_PUBLIC_URL, optional, an absolute http or https URL,
	// without a trailing slash).
	PublicURL string
	// ApproverTopicARN is the SNS topic of the e-mail approvers
	// (COUNTERSIGN_APPROVER_TOPIC_ARN, optional).
	ApproverTopicARN string
	// SecretsPrefix, when set, is the prefix every secret reference of the
	// configuration must name: the template grants reading those only
	// (COUNTERSIGN_SECRETS_PREFIX).
	SecretsPrefix string
	// SeedCredentials writes credentials.json to the table at start
	// (COUNTERSIGN_SEED_CREDENTIALS, "true" or "false", default false),
	// with MaySeedCredentials only.
	SeedCredentials bool
	// SignInIssuer and SignInClientID are the identity provider people
	// sign in through when settings.json has no sign_in
	// (COUNTERSIGN_SIGNIN_ISSUER, an absolute http or https URL, and
	// COUNTERSIGN_SIGNIN_CLIENT_ID, both or neither), with NeedOAuth: the
	// stack's Cognito user pool and its app client (a public client: the
	// sign-in uses PKCE), or the SignInIssuer parameter's provider.
	SignInIssuer, SignInClientID string
	// ConfirmMachineARN and BatchMachineARN are the state machines
	// (COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN,
	// COUNTERSIGN_BATCH_STATE_MACHINE_ARN), required with NeedWorkflow.
	ConfirmMachineARN, BatchMachineARN string
	// SigningKeySecret is the Secrets Manager secret id (name or ARN) of the
	// link signing key (COUNTERSIGN_SIGNING_KEY_SECRET), required with
	// NeedSigningKey. See LoadSigningKey for its format.
	SigningKeySecret string
	// DynamoDBEndpoint, SFNEndpoint, SecretsManagerEndpoint, S3Endpoint and
	// SNSEndpoint override the service endpoints
	// (COUNTERSIGN_<SERVICE>_ENDPOINT; optional, absolute http or https
	// URLs), for sam local and tests. S3 is then addressed path-style.
	DynamoDBEndpoint, SFNEndpoint, SecretsManagerEndpoint string
	S3Endpoint, SNSEndpoint                               string
}

// Problem is one missing or invalid variable.
type Problem struct {
	Var    string // the variable's name
	Reason string // what is wrong, never its value
}

// Error is returned by FromEnv; it lists every problem found.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("awsenv: bad environment: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Var + " " + p.Reason)
	}
	return b.String()
}

// Vars returns the names of the variables with a problem, in order.
func (e *Error) Vars() []string {
	vars := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		vars[i] = p.Var
	}
	return vars
}

// FromEnv reads the environment through lookup (os.LookupEnv in main) into
// an Env. Values are trimmed of surrounding white space, and an empty value
// counts as unset. The variables need names are required as well as
// COUNTERSIGN_TABLE; the error, an *Error, names every missing or invalid
// variable at once, never their values.
func FromEnv(lookup func(string) (string, bool), need Needs) (Env, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var errs Error
	problem := func(name, reason string) { errs.Problems = append(errs.Problems, Problem{Var: name, Reason: reason}) }
	required := func(name string) string {
		v := get(name)
		if v == "" {
			problem(name, "is required")
		}
		return v
	}
	endpoint := func(name string) string {
		v := strings.TrimRight(get(name), "/")
		if v != "" && !isHTTPURL(v) {
			problem(name, "is not an absolute http or https URL")
		}
		return v
	}
	machine := func(name string) string {
		v := required(name)
		if v != "" && !isStateMachineARN(v) {
			problem(name, "is not a state machine ARN (arn:<partition>:states:<region>:<account>:stateMachine:<name>)")
		}
		return v
	}

	var e Env
	e.Table = required(VarTable)
	e.ConfigDir = get(VarConfigDir)
	if e.ConfigDir == "" {
		e.ConfigDir = DefaultConfigDir
	}
	if root := get(VarLambdaTaskRoot); root != "" && !filepath.IsAbs(e.ConfigDir) {
		e.ConfigDir = filepath.Join(root, e.ConfigDir)
	}
	e.ConfigDir = filepath.Clean(e.ConfigDir)
	e.ConfigBucket = get(VarConfigBucket)
	e.ConfigPrefix = get(VarConfigPrefix)
	if e.ConfigPrefix == "" {
		e.ConfigPrefix = DefaultConfigPrefix
	}
	e.ConfigRefresh = DefaultConfigRefresh
	if v := get(VarConfigRefreshSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3600 {
			problem(VarConfigRefreshSeconds, "is not a whole number of seconds from 1 to 3600")
		}
		e.ConfigRefresh = time.Duration(n) * time.Second
	}
	e.PublicURL = endpoint(VarPublicURL)
	e.ApproverTopicARN = get(VarApproverTopicARN)
	if e.ApproverTopicARN != "" && !isTopicARN(e.ApproverTopicARN) {
		problem(VarApproverTopicARN, "is not an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)")
	}
	e.SecretsPrefix = get(VarSecretsPrefix)
	switch v := get(VarSeedCredentials); {
	case v == "" || v == "false":
	case v == "true" && need&MaySeedCredentials != 0:
		e.SeedCredentials = true
	case v == "true":
		problem(VarSeedCredentials, "is set for a function that never seeds credentials (only the gateway may)")
	default:
		problem(VarSeedCredentials, `is not "true" or "false"`)
	}
	if need&NeedWorkflow != 0 {
		e.ConfirmMachineARN = machine(VarConfirmMachineARN)
		e.BatchMachineARN = machine(VarBatchMachineARN)
	}
	if need&(NeedSigningKey|NeedOAuth) != 0 {
		e.SigningKeySecret = required(VarSigningKeySecret)
	}
	if need&NeedOAuth != 0 {
		e.SignInIssuer = endpoint(VarSignInIssuer)
		e.SignInClientID = get(VarSignInClientID)
		switch {
		case e.SignInIssuer != "" && e.SignInClientID == "":
			problem(VarSignInClientID, "is required with "+VarSignInIssuer)
		case e.SignInIssuer == "" && e.SignInClientID != "":
			problem(VarSignInIssuer, "is required with "+VarSignInClientID)
		}
	}
	e.DynamoDBEndpoint = endpoint(VarDynamoDBEndpoint)
	e.SFNEndpoint = endpoint(VarSFNEndpoint)
	e.SecretsManagerEndpoint = endpoint(VarSecretsManagerEndpoint)
	e.S3Endpoint = endpoint(VarS3Endpoint)
	e.SNSEndpoint = endpoint(VarSNSEndpoint)
	if len(errs.Problems) > 0 {
		return Env{}, &errs
	}
	return e, nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

func isTopicARN(s string) bool {
	p := strings.SplitN(s, ":", 6)
	return len(p) == 6 && p[0] == "arn" && p[1] != "" && p[2] == "sns" && p[3] != "" && p[4] != "" && p[5] != "" && !strings.Contains(p[5], ":")
}

func isStateMachineARN(s string) bool {
	p := strings.SplitN(s, ":", 7)
	return len(p) == 7 && p[0] == "arn" && p[1] != "" && p[2] == "states" && p[3] != "" &&
		p[4] != "" && p[5] == "stateMachine" && p[6] != ""
}

// Machines returns the state machine ARNs by workflow.Machine, for
// sfnflow.New. It is meaningful when FromEnv was given NeedWorkflow.
func (e Env) Machines() map[workflow.Machine]string {
	return map[workflow.Machine]string{
		workflow.Confirm: e.ConfirmMachineARN,
		workflow.Batch:   e.BatchMachineARN,
	}
}

// AWSConfig is the AWS configuration of the function: the region
// (AWS_REGION, or AWS_DEFAULT_REGION) and the execution role's credentials
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which the
// Lambda runtime (and sam local, and the emulator) puts in the
// environment. It reads nothing else: config.LoadDefaultConfig would look
// for shared files, profiles, SSO and instance metadata a function never
// has, and link and initialise their clients at every cold start.
func (e Env) AWSConfig(ctx context.Context) (aws.Config, error) {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	var missing []string
	for name, v := range map[string]string{"AWS_REGION": region, "AWS_ACCESS_KEY_ID": id, "AWS_SECRET_ACCESS_KEY": secret} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return aws.Config{}, fmt.Errorf("awsenv: %s not set: the Lambda runtime sets them (the execution role's credentials)", strings.Join(missing, ", "))
	}
	return aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN"))),
	}, nil
}

// DynamoDB returns a DynamoDB client, using DynamoDBEndpoint when set:
// awslite's (shared/awslite/dynamodb), not the SDK's, whose package
// initialisation every cold start paid.
func (e Env) DynamoDB(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if e.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(e.DynamoDBEndpoint)
		}
	})
}

// The clients below are awslite's, not the SDK's: a deployed function
// makes a handful of these calls, and the SDK's generated clients cost
// every bootstrap about 1.2 MB (package awslite says what was measured).

// SFN returns a Step Functions client, using SFNEndpoint when set.
func (e Env) SFN(cfg aws.Config) *awslite.SFN {
	return awslite.NewSFN(awslite.Options{Config: cfg, Endpoint: e.SFNEndpoint})
}

// SecretsManager returns a Secrets Manager client, using
// SecretsManagerEndpoint when set.
func (e Env) SecretsManager(cfg aws.Config) *awslite.SecretsManager {
	return awslite.NewSecretsManager(awslite.Options{Config: cfg, Endpoint: e.SecretsManagerEndpoint})
}

// S3 returns an S3 client, using S3Endpoint (path-style) when set.
func (e Env) S3(cfg aws.Config) *awslite.S3 {
	return awslite.NewS3(awslite.Options{Config: cfg, Endpoint: e.S3Endpoint})
}
