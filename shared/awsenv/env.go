package awsenv

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

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
	VarDynamoDBEndpoint       = "COUNTERSIGN_DYNAMODB_ENDPOINT"
	VarSFNEndpoint            = "COUNTERSIGN_SFN_ENDPOINT"
	VarSecretsManagerEndpoint = "COUNTERSIGN_SECRETSMANAGER_ENDPOINT"

	// VarLambdaTaskRoot is set by the Lambda runtime to the directory the
	// function's code was unpacked into (/var/task).
	VarLambdaTaskRoot = "LAMBDA_TASK_ROOT"
)

// DefaultConfigDir is the configuration directory when COUNTERSIGN_CONFIG_DIR
// is unset: where the build copies infra/config, beside bootstrap.
const DefaultConfigDir = "./config"

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
)

// Env is the configuration of a deployed function, read once at start.
type Env struct {
	// Table is the DynamoDB table (COUNTERSIGN_TABLE, required).
	Table string
	// ConfigDir is the configuration directory (COUNTERSIGN_CONFIG_DIR,
	// default "./config"). A relative path is resolved against
	// LAMBDA_TASK_ROOT when that is set, else left relative to the working
	// directory.
	ConfigDir string
	// PublicURL, when set, overrides settings.public_url
	// (COUNTERSIGN_PUBLIC_URL, optional, an absolute http or https URL,
	// without a trailing slash).
	PublicURL string
	// ConfirmMachineARN and BatchMachineARN are the state machines
	// (COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN,
	// COUNTERSIGN_BATCH_STATE_MACHINE_ARN), required with NeedWorkflow.
	ConfirmMachineARN, BatchMachineARN string
	// SigningKeySecret is the Secrets Manager secret id (name or ARN) of the
	// link signing key (COUNTERSIGN_SIGNING_KEY_SECRET), required with
	// NeedSigningKey. See LoadSigningKey for its format.
	SigningKeySecret string
	// DynamoDBEndpoint, SFNEndpoint and SecretsManagerEndpoint override the
	// service endpoints (COUNTERSIGN_DYNAMODB_ENDPOINT,
	// COUNTERSIGN_SFN_ENDPOINT, COUNTERSIGN_SECRETSMANAGER_ENDPOINT;
	// optional, absolute http or https URLs), for sam local and tests.
	DynamoDBEndpoint, SFNEndpoint, SecretsManagerEndpoint string
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
	e.PublicURL = endpoint(VarPublicURL)
	if need&NeedWorkflow != 0 {
		e.ConfirmMachineARN = machine(VarConfirmMachineARN)
		e.BatchMachineARN = machine(VarBatchMachineARN)
	}
	if need&NeedSigningKey != 0 {
		e.SigningKeySecret = required(VarSigningKeySecret)
	}
	e.DynamoDBEndpoint = endpoint(VarDynamoDBEndpoint)
	e.SFNEndpoint = endpoint(VarSFNEndpoint)
	e.SecretsManagerEndpoint = endpoint(VarSecretsManagerEndpoint)
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

// AWSConfig loads the shared AWS configuration (config.LoadDefaultConfig):
// on Lambda the region and credentials come from the runtime's environment.
func (e Env) AWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsenv: load AWS config: %w", err)
	}
	return cfg, nil
}

// DynamoDB returns a DynamoDB client, using DynamoDBEndpoint when set.
func (e Env) DynamoDB(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if e.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(e.DynamoDBEndpoint)
		}
	})
}

// SFN returns a Step Functions client, using SFNEndpoint when set.
func (e Env) SFN(cfg aws.Config) *sfn.Client {
	return sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if e.SFNEndpoint != "" {
			o.BaseEndpoint = aws.String(e.SFNEndpoint)
		}
	})
}

// SecretsManager returns a Secrets Manager client, using
// SecretsManagerEndpoint when set.
func (e Env) SecretsManager(cfg aws.Config) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if e.SecretsManagerEndpoint != "" {
			o.BaseEndpoint = aws.String(e.SecretsManagerEndpoint)
		}
	})
}
