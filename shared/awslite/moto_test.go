package awslite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/awslite"
)

const region = "us-east-1"

// testConfig is static credentials, no lookups.
func testConfig() aws.Config {
	return aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "")}
}

// startMoto starts moto_server on a loopback port and returns its URL; it
// is stopped when the test ends.
func startMoto(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		testenv.Missing(tb, testenv.Moto, `moto_server is not installed; install it with: python3 -m pip install 'moto[server]==5.2.1'`)
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start moto_server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: time.Second}
	for range 300 { // up to 30 s
		select {
		case <-done:
			tb.Fatalf("moto_server exited: %s", log.String())
		default:
		}
		if resp, err := client.Get(url + "/moto-api/"); err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("moto_server did not answer on %s", url)
	return ""
}

// apiCode is err's service error code, "" when it has none.
func apiCode(err error) string {
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return ae.ErrorCode()
	}
	return ""
}

// TestAgainstMoto runs every call against moto_server, with the SDK's own
// clients setting up what they read.
func TestAgainstMoto(t *testing.T) {
	url := startMoto(t)
	ctx := context.Background()
	cfg := testConfig()
	opts := awslite.Options{Config: cfg, Endpoint: url}

	t.Run("S3", func(t *testing.T) {
		sdk := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(url), true })
		const bucket = "config-bucket"
		if _, err := sdk.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		objects := map[string]string{
			"config/settings.json":                  `{"workspace": {"name": "Acme"}}`,
			"config/connections/crm/policy.json":    `{}`,
			"config/connections/a b+c/tools/é.json": `{"name": "x"}`,
			"config/folder/":                        ``,
			"other/settings.json":                   `no`,
		}
		etags := map[string]string{}
		for k, v := range objects {
			out, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader(v)})
			if err != nil {
				t.Fatal(err)
			}
			etags[k] = aws.ToString(out.ETag)
		}
		c := awslite.NewS3(opts)

		// Pages of two: every key under the prefix, once, in order.
		var got []string
		in := &awslite.ListObjectsV2Input{Bucket: bucket, Prefix: "config/", MaxKeys: 2}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("more pages than keys")
			}
			page, err := c.ListObjectsV2(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				got = append(got, o.Key)
				if o.ETag != etags[o.Key] || o.Size != int64(len(objects[o.Key])) || time.Since(o.LastModified) > time.Hour {
					t.Errorf("%s: etag %s size %d modified %v, want %s %d now", o.Key, o.ETag, o.Size, o.LastModified, etags[o.Key], len(objects[o.Key]))
				}
			}
			if !page.IsTruncated {
				break
			}
			in.ContinuationToken = page.NextContinuationToken
		}
		want := []string{"config/connections/a b+c/tools/é.json", "config/connections/crm/policy.json", "config/folder/", "config/settings.json"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("listed %q, want %q", got, want)
		}

		for _, key := range []string{"config/settings.json", "config/connections/a b+c/tools/é.json"} {
			out, err := c.GetObject(ctx, &awslite.GetObjectInput{Bucket: bucket, Key: key, IfMatch: etags[key]})
			if err != nil {
				t.Fatalf("get %s: %v", key, err)
			}
			data, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(data) != objects[key] || out.ETag != etags[key] {
				t.Errorf("get %s = %q (etag %s), want %q (%s)", key, data, out.ETag, objects[key], etags[key])
			}
		}
		errs := []struct {
			name string
			in   awslite.GetObjectInput
			code string
		}{
			{name: "missing key", in: awslite.GetObjectInput{Bucket: bucket, Key: "config/none.json"}, code: "NoSuchKey"},
			{name: "another ETag", in: awslite.GetObjectInput{Bucket: bucket, Key: "config/settings.json", IfMatch: `"0123"`}, code: "PreconditionFailed"},
			{name: "missing bucket", in: awslite.GetObjectInput{Bucket: "no-such-bucket", Key: "k"}, code: "NoSuchBucket"},
		}
		for _, tt := range errs {
			_, err := c.GetObject(ctx, &tt.in)
			if apiCode(err) != tt.code {
				t.Errorf("%s: error %v, want code %s", tt.name, err, tt.code)
			}
		}
		if _, err := c.ListObjectsV2(ctx, &awslite.ListObjectsV2Input{Bucket: "no-such-bucket"}); apiCode(err) != "NoSuchBucket" {
			t.Errorf("list a missing bucket: %v, want NoSuchBucket", err)
		}
	})

	t.Run("SecretsManager", func(t *testing.T) {
		sdk := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(url) })
		if _, err := sdk.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("app/key"), SecretString: aws.String(`{"kid":"k1"}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sdk.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("app/bin"), SecretBinary: []byte{0, 1, 2, 255}}); err != nil {
			t.Fatal(err)
		}
		c := awslite.NewSecretsManager(opts)
		out, err := c.GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: "app/key"})
		if err != nil || out.SecretString == nil || *out.SecretString != `{"kid":"k1"}` || out.Name != "app/key" {
			t.Errorf("string secret: %+v, %v", out, err)
		}
		out, err = c.GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: "app/bin"})
		if err != nil || out.SecretString != nil || !bytes.Equal(out.SecretBinary, []byte{0, 1, 2, 255}) {
			t.Errorf("binary secret: %+v, %v", out, err)
		}
		if _, err := c.GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: "app/none"}); apiCode(err) != "ResourceNotFoundException" {
			t.Errorf("missing secret: %v, want ResourceNotFoundException", err)
		}
	})

	t.Run("SFN", func(t *testing.T) {
		sdk := sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(url) })
		m, err := sdk.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name:       aws.String("confirm"),
			Definition: aws.String(`{"StartAt": "Wait", "States": {"Wait": {"Type": "Pass", "End": true}}}`),
			RoleArn:    aws.String("arn:aws:iam::123456789012:role/sfn"),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := awslite.NewSFN(opts)
		in := &awslite.StartExecutionInput{StateMachineArn: aws.ToString(m.StateMachineArn), Name: "c-1", Input: `{"id": "c-1"}`}
		out, err := c.StartExecution(ctx, in)
		if err != nil || !strings.Contains(out.ExecutionArn, ":execution:confirm:c-1") {
			t.Fatalf("start: %+v, %v", out, err)
		}
		desc, err := sdk.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(out.ExecutionArn)})
		if err != nil || aws.ToString(desc.Input) != in.Input {
			t.Errorf("the execution's input: %v, %v; want %s", desc, err, in.Input)
		}
		in.Input = `{"id": "other"}`
		if _, err := c.StartExecution(ctx, in); apiCode(err) != "ExecutionAlreadyExists" {
			t.Errorf("start again with another input: %v, want ExecutionAlreadyExists", err)
		}
		in.StateMachineArn += "-none"
		if _, err := c.StartExecution(ctx, in); apiCode(err) != "StateMachineDoesNotExist" {
			t.Errorf("start a missing machine: %v, want StateMachineDoesNotExist", err)
		}
		// moto accepts any task token (so a malformed call is what fails
		// here); the codes of an unknown token are mapped in
		// TestErrorsAndRetries and sfnflow's tests.
		if err := c.SendTaskSuccess(ctx, &awslite.SendTaskSuccessInput{TaskToken: "token", Output: "{}"}); err != nil {
			t.Errorf("send task success: %v", err)
		}
		if err := c.SendTaskFailure(ctx, &awslite.SendTaskFailureInput{TaskToken: "token", Error: "denied", Cause: "no"}); err != nil {
			t.Errorf("send task failure: %v", err)
		}
	})

	t.Run("DynamoDB", func(t *testing.T) { dynamoDBAgainstMoto(t, url) })

	t.Run("SNS", func(t *testing.T) {
		sdk := sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(url) })
		topic, err := sdk.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("approvers")})
		if err != nil {
			t.Fatal(err)
		}
		c := awslite.NewSNS(opts)
		out, err := c.Publish(ctx, &awslite.PublishInput{TopicArn: aws.ToString(topic.TopicArn), Subject: "Approve DELETE /contacts/12?", Message: "a & b\nhttps://x.example/?a=1&b=2"})
		if err != nil || out.MessageId == "" {
			t.Errorf("publish: %+v, %v", out, err)
		}
		if _, err := c.Publish(ctx, &awslite.PublishInput{TopicArn: aws.ToString(topic.TopicArn) + "-none", Message: "m"}); apiCode(err) != "NotFound" {
			t.Errorf("publish to a missing topic: %v, want NotFound", err)
		}
	})
}
