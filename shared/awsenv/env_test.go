package awsenv_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/workflow"
)

const (
	topicARN   = "arn:aws:sns:us-east-1:123456789012:countersign-approvers"
	confirmARN = "arn:aws:states:us-east-1:123456789012:stateMachine:countersign-confirm"
	batchARN   = "arn:aws:states:us-east-1:123456789012:stateMachine:countersign-batch"
)

func lookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestFromEnv(t *testing.T) {
	all := map[string]string{
		"COUNTERSIGN_TABLE":                     "countersign-Table",
		"COUNTERSIGN_CONFIG_DIR":                "/opt/config",
		"COUNTERSIGN_PUBLIC_URL":                "https://abc.execute-api.us-east-1.amazonaws.com/",
		"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN": confirmARN,
		"COUNTERSIGN_BATCH_STATE_MACHINE_ARN":   batchARN,
		"COUNTERSIGN_SIGNING_KEY_SECRET":        "countersign/signing-key",
		"COUNTERSIGN_DYNAMODB_ENDPOINT":         "http://127.0.0.1:8000",
		"COUNTERSIGN_SFN_ENDPOINT":              "http://127.0.0.1:8083",
		"COUNTERSIGN_SECRETSMANAGER_ENDPOINT":   "http://127.0.0.1:4566",
		"LAMBDA_TASK_ROOT":                      "/var/task",
		"COUNTERSIGN_CONFIG_BUCKET":             "countersign-configbucket-abc",
		"COUNTERSIGN_CONFIG_PREFIX":             "prod/config/",
		"COUNTERSIGN_CONFIG_REFRESH_SECONDS":    "5",
		"COUNTERSIGN_APPROVER_TOPIC_ARN":        topicARN,
		"COUNTERSIGN_SECRETS_PREFIX":            "countersign/",
		"COUNTERSIGN_SEED_CREDENTIALS":          "true",
		"COUNTERSIGN_S3_ENDPOINT":               "http://127.0.0.1:5000",
		"COUNTERSIGN_SNS_ENDPOINT":              "http://127.0.0.1:5001",
	}
	with := func(changes map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for k, v := range changes {
			if v == "-" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	tests := []struct {
		name     string
		vars     map[string]string
		need     awsenv.Needs
		want     awsenv.Env
		wantVars []string // the variables the error names, in order; nil for success
	}{
		{
			name: "everything", vars: all, need: awsenv.NeedWorkflow | awsenv.NeedSigningKey | awsenv.MaySeedCredentials,
			want: awsenv.Env{
				Table: "countersign-Table", ConfigDir: "/opt/config", SeedCredentials: true,
				ConfigBucket: "countersign-configbucket-abc", ConfigPrefix: "prod/config/", ConfigRefresh: 5 * time.Second,
				ApproverTopicARN: topicARN, SecretsPrefix: "countersign/",
				S3Endpoint: "http://127.0.0.1:5000", SNSEndpoint: "http://127.0.0.1:5001",

				PublicURL:         "https://abc.execute-api.us-east-1.amazonaws.com",
				ConfirmMachineARN: confirmARN, BatchMachineARN: batchARN,
				SigningKeySecret: "countersign/signing-key",
				DynamoDBEndpoint: "http://127.0.0.1:8000", SFNEndpoint: "http://127.0.0.1:8083",
				SecretsManagerEndpoint: "http://127.0.0.1:4566",
			},
		},
		{
			name: "all missing", vars: map[string]string{}, need: awsenv.NeedWorkflow | awsenv.NeedSigningKey,
			wantVars: []string{
				"COUNTERSIGN_TABLE", "COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN",
				"COUNTERSIGN_BATCH_STATE_MACHINE_ARN", "COUNTERSIGN_SIGNING_KEY_SECRET",
			},
		},
		{
			name: "empty and blank values count as missing", need: awsenv.NeedSigningKey,
			vars:     map[string]string{"COUNTERSIGN_TABLE": "", "COUNTERSIGN_SIGNING_KEY_SECRET": "  "},
			wantVars: []string{"COUNTERSIGN_TABLE", "COUNTERSIGN_SIGNING_KEY_SECRET"},
		},
		{
			name: "defaults, outside Lambda", vars: map[string]string{"COUNTERSIGN_TABLE": "t"},
			want: awsenv.Env{Table: "t", ConfigDir: "config", ConfigPrefix: "config/", ConfigRefresh: 30 * time.Second},
		},
		{
			name: "default config dir on Lambda",
			vars: map[string]string{"COUNTERSIGN_TABLE": "t", "LAMBDA_TASK_ROOT": "/var/task"},
			want: awsenv.Env{Table: "t", ConfigDir: "/var/task/config", ConfigPrefix: "config/", ConfigRefresh: 30 * time.Second},
		},
		{
			name: "relative config dir resolved against LAMBDA_TASK_ROOT",
			vars: map[string]string{"COUNTERSIGN_TABLE": "t", "COUNTERSIGN_CONFIG_DIR": "etc/../conf", "LAMBDA_TASK_ROOT": "/var/task"},
			want: awsenv.Env{Table: "t", ConfigDir: "/var/task/conf", ConfigPrefix: "config/", ConfigRefresh: 30 * time.Second},
		},
		{
			name: "absolute config dir kept",
			vars: map[string]string{"COUNTERSIGN_TABLE": "t", "COUNTERSIGN_CONFIG_DIR": "/opt/conf/", "LAMBDA_TASK_ROOT": "/var/task"},
			want: awsenv.Env{Table: "t", ConfigDir: "/opt/conf", ConfigPrefix: "config/", ConfigRefresh: 30 * time.Second},
		},
		{
			name: "optional groups not read when not needed", vars: with(map[string]string{"COUNTERSIGN_SEED_CREDENTIALS": "false"}), need: 0,
			want: awsenv.Env{
				Table: "countersign-Table", ConfigDir: "/opt/config",
				ConfigBucket: "countersign-configbucket-abc", ConfigPrefix: "prod/config/", ConfigRefresh: 5 * time.Second,
				ApproverTopicARN: topicARN, SecretsPrefix: "countersign/",
				S3Endpoint: "http://127.0.0.1:5000", SNSEndpoint: "http://127.0.0.1:5001",

				PublicURL:        "https://abc.execute-api.us-east-1.amazonaws.com",
				DynamoDBEndpoint: "http://127.0.0.1:8000", SFNEndpoint: "http://127.0.0.1:8083",
				SecretsManagerEndpoint: "http://127.0.0.1:4566",
			},
		},
		{
			name: "workflow only", vars: with(map[string]string{"COUNTERSIGN_SIGNING_KEY_SECRET": "-", "COUNTERSIGN_SEED_CREDENTIALS": "-"}), need: awsenv.NeedWorkflow,
			want: awsenv.Env{
				Table: "countersign-Table", ConfigDir: "/opt/config",
				ConfigBucket: "countersign-configbucket-abc", ConfigPrefix: "prod/config/", ConfigRefresh: 5 * time.Second,
				ApproverTopicARN: topicARN, SecretsPrefix: "countersign/",
				S3Endpoint: "http://127.0.0.1:5000", SNSEndpoint: "http://127.0.0.1:5001",

				PublicURL:         "https://abc.execute-api.us-east-1.amazonaws.com",
				ConfirmMachineARN: confirmARN, BatchMachineARN: batchARN,
				DynamoDBEndpoint: "http://127.0.0.1:8000", SFNEndpoint: "http://127.0.0.1:8083",
				SecretsManagerEndpoint: "http://127.0.0.1:4566",
			},
		},
		{
			name: "invalid values", need: awsenv.NeedWorkflow,
			vars: with(map[string]string{
				"COUNTERSIGN_TABLE":                     "-",
				"COUNTERSIGN_PUBLIC_URL":                "abc.execute-api.us-east-1.amazonaws.com",
				"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN": "arn:aws:lambda:us-east-1:123456789012:function:x",
				"COUNTERSIGN_BATCH_STATE_MACHINE_ARN":   "countersign-batch",
				"COUNTERSIGN_DYNAMODB_ENDPOINT":         "localhost:8000",
				"COUNTERSIGN_SFN_ENDPOINT":              "ftp://127.0.0.1",
				"COUNTERSIGN_SECRETSMANAGER_ENDPOINT":   "http://user:pw@127.0.0.1:4566",
				"COUNTERSIGN_CONFIG_REFRESH_SECONDS":    "0",
				"COUNTERSIGN_APPROVER_TOPIC_ARN":        "arn:aws:sqs:us-east-1:123456789012:q",
				"COUNTERSIGN_SEED_CREDENTIALS":          "yes",
				"COUNTERSIGN_S3_ENDPOINT":               "s3.local",
			}),
			wantVars: []string{
				"COUNTERSIGN_TABLE", "COUNTERSIGN_CONFIG_REFRESH_SECONDS", "COUNTERSIGN_PUBLIC_URL", "COUNTERSIGN_APPROVER_TOPIC_ARN",
				"COUNTERSIGN_SEED_CREDENTIALS",
				"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN", "COUNTERSIGN_BATCH_STATE_MACHINE_ARN",
				"COUNTERSIGN_DYNAMODB_ENDPOINT", "COUNTERSIGN_SFN_ENDPOINT", "COUNTERSIGN_SECRETSMANAGER_ENDPOINT", "COUNTERSIGN_S3_ENDPOINT",
			},
		},
		{
			name: "seeding asked of a function that never seeds", need: awsenv.NeedSigningKey,
			vars:     map[string]string{"COUNTERSIGN_TABLE": "t", "COUNTERSIGN_SIGNING_KEY_SECRET": "s", "COUNTERSIGN_SEED_CREDENTIALS": "true"},
			wantVars: []string{"COUNTERSIGN_SEED_CREDENTIALS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := awsenv.FromEnv(lookup(tt.vars), tt.need)
			if tt.wantVars == nil {
				if err != nil {
					t.Fatalf("FromEnv: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("FromEnv (-want +got):\n%s", diff)
				}
				return
			}
			envErr, ok := errors.AsType[*awsenv.Error](err)
			if !ok {
				t.Fatalf("FromEnv error = %v, want an *awsenv.Error", err)
			}
			if diff := cmp.Diff(tt.wantVars, envErr.Vars()); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
			for _, v := range tt.wantVars {
				if !strings.Contains(err.Error(), v) {
					t.Errorf("error %q does not name %s", err, v)
				}
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Errorf("error %q shows a value", err)
			}
			if got != (awsenv.Env{}) {
				t.Errorf("FromEnv returned %+v with an error", got)
			}
		})
	}
}

func TestMachines(t *testing.T) {
	env := awsenv.Env{ConfirmMachineARN: confirmARN, BatchMachineARN: batchARN}
	want := map[workflow.Machine]string{workflow.Confirm: confirmARN, workflow.Batch: batchARN}
	if diff := cmp.Diff(want, env.Machines()); diff != "" {
		t.Errorf("Machines (-want +got):\n%s", diff)
	}
}

// targets is an httptest server on 127.0.0.1 that answers every JSON
// protocol call with {} and records its X-Amz-Target.
type targets struct {
	mu  sync.Mutex
	got []string
}

func (s *targets) serve(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.got = append(s.got, r.Header.Get("X-Amz-Target"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		io.WriteString(w, `{}`)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func TestClientsUseEndpointOverrides(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRETTEST")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	var s targets
	url := s.serve(t)
	env := awsenv.Env{Table: "t", DynamoDBEndpoint: url, SFNEndpoint: url, SecretsManagerEndpoint: url}
	ctx := context.Background()
	cfg, err := env.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "us-east-1" {
		t.Errorf("region = %q, want us-east-1", cfg.Region)
	}
	if _, err := env.DynamoDB(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")}); err != nil {
		t.Errorf("DynamoDB: %v", err)
	}
	if err := env.SFN(cfg).SendTaskSuccess(ctx, &awslite.SendTaskSuccessInput{TaskToken: "t", Output: "{}"}); err != nil {
		t.Errorf("SFN: %v", err)
	}
	if _, err := env.SecretsManager(cfg).GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: "s"}); err != nil {
		t.Errorf("SecretsManager: %v", err)
	}
	want := []string{"DynamoDB_20120810.DescribeTable", "AWSStepFunctions.SendTaskSuccess", "secretsmanager.GetSecretValue"}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.got, want) {
		t.Errorf("calls reaching the override = %q, want %q", s.got, want)
	}
}
