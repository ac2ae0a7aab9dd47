package awslite_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/awslite"
)

// answer is one scripted answer of a fake service.
type answer struct {
	status int
	header map[string]string
	body   string
}

// scripted serves its answers in order (the last one again when they run
// out) and counts the requests.
type scripted struct {
	mu       sync.Mutex
	answers  []answer
	requests int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	a := s.answers[min(s.requests, len(s.answers)-1)]
	s.requests++
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

// noBackoff is the SDK's standard retryer without its waits.
func noBackoff() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

func TestErrorsAndRetries(t *testing.T) {
	throttled := answer{status: 400, body: `{"__type": "ThrottlingException", "message": "Rate exceeded"}`}
	started := answer{status: 200, body: `{"executionArn": "arn:aws:states:us-east-1:1:execution:m:n"}`}
	tests := []struct {
		name     string
		answers  []answer
		call     string // sfn or s3
		wantCode string // "" for success
		wantMsg  string
		requests int
	}{
		{name: "throttling is retried", call: "sfn", answers: []answer{throttled, throttled, started}, requests: 3},
		{name: "throttling named in the header", call: "sfn", answers: []answer{
			{status: 400, header: map[string]string{"X-Amzn-Errortype": "ThrottlingException:http://internal.amazon.com/coral/"}, body: `{}`}, started}, requests: 2},
		{name: "5xx is retried", call: "sfn", answers: []answer{{status: 503, body: `{"__type": "ServiceUnavailable"}`}, started}, requests: 2},
		{name: "S3 slow down is retried", call: "s3", answers: []answer{
			{status: 503, body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>`},
			{status: 200, body: `ok`}}, requests: 2},
		{name: "retries end", call: "sfn", answers: []answer{throttled}, wantCode: "ThrottlingException", wantMsg: "Rate exceeded", requests: 3},
		{name: "a client error is not retried", call: "sfn", answers: []answer{{status: 400, body: `{"__type": "ValidationException", "Message": "bad name"}`}},
			wantCode: "ValidationException", wantMsg: "bad name", requests: 1},
		{name: "a namespaced type", call: "sfn", answers: []answer{{status: 400, body: `{"__type": "com.amazonaws.swf.service.v2.model#ExecutionAlreadyExists", "message": "exists"}`}},
			wantCode: "ExecutionAlreadyExists", wantMsg: "exists", requests: 1},
		{name: "S3's XML error", call: "s3", answers: []answer{{status: 412, body: `<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`}},
			wantCode: "PreconditionFailed", wantMsg: "At least one of the pre-conditions you specified did not hold", requests: 1},
		{name: "no body: the status names it", call: "s3", answers: []answer{{status: 404}}, wantCode: "NotFound", requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{answers: tt.answers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			cfg := testConfig()
			cfg.Retryer = noBackoff
			o := awslite.Options{Config: cfg, Endpoint: srv.URL}
			var err error
			switch tt.call {
			case "sfn":
				var out *awslite.StartExecutionOutput
				out, err = awslite.NewSFN(o).StartExecution(context.Background(), &awslite.StartExecutionInput{StateMachineArn: "arn:aws:states:us-east-1:1:stateMachine:m", Name: "n"})
				if err == nil && out.ExecutionArn != "arn:aws:states:us-east-1:1:execution:m:n" {
					t.Errorf("execution ARN = %q", out.ExecutionArn)
				}
			case "s3":
				var out *awslite.GetObjectOutput
				out, err = awslite.NewS3(o).GetObject(context.Background(), &awslite.GetObjectInput{Bucket: "b", Key: "k"})
				if err == nil {
					data, _ := io.ReadAll(out.Body)
					out.Body.Close()
					if string(data) != "ok" {
						t.Errorf("body = %q", data)
					}
				}
			}
			if s.requests != tt.requests {
				t.Errorf("%d requests, want %d", s.requests, tt.requests)
			}
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			e, ok := errors.AsType[*awslite.Error](err)
			if !ok {
				t.Fatalf("error %v is no *awslite.Error", err)
			}
			if e.Code != tt.wantCode || e.Message != tt.wantMsg || e.Status != tt.answers[0].status {
				t.Errorf("error = %q %q %d, want %q %q %d", e.Code, e.Message, e.Status, tt.wantCode, tt.wantMsg, tt.answers[0].status)
			}
		})
	}
}

// seen is what a request looked like to the service.
type seen struct {
	Method, Path, ContentType, Target, PayloadHash, Scope, Token string
	Query, Form                                                  url.Values
	Body                                                         map[string]any
}

// recorder answers every request with answer and keeps what it saw.
func recorder(tb testing.TB, answer string) (*httptest.Server, *[]seen) {
	tb.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), ContentType: r.Header.Get("Content-Type"),
			Target: r.Header.Get("X-Amz-Target"), PayloadHash: r.Header.Get("X-Amz-Content-Sha256"), Token: r.Header.Get("X-Amz-Security-Token")}
		s.Query.Del("x-id") // the SDK's routing hint, which S3 does not need
		if _, after, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=AKIDTEST/"); ok {
			// The scope: date/region/service/aws4_request.
			s.Scope, _, _ = strings.Cut(after, ",")
		}
		if s.ContentType == "application/x-www-form-urlencoded" {
			s.Form, _ = url.ParseQuery(string(b))
		} else if len(b) > 0 {
			_ = json.Unmarshal(b, &s.Body)
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		io.WriteString(w, answer)
	}))
	tb.Cleanup(srv.Close)
	return srv, &got
}

// TestRequestsAsTheSDKSends sends each call with the SDK's client and with
// ours and compares what the service sees: method, escaped path, query,
// operation, body, payload hash and the signature's scope.
func TestRequestsAsTheSDKSends(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig()
	// A Lambda's credentials always carry a session token.
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "SESSIONTOKEN")
	type pair struct {
		name      string
		answer    string
		sdk, ours func(endpoint string) error
	}
	const bucket, key = "config-bucket", "config/a b+c/é (1).json"
	pairs := []pair{
		{name: "GetObject", answer: "x",
			sdk: func(e string) error {
				c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(e), true })
				_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), IfMatch: aws.String(`"e1"`)})
				return err
			},
			ours: func(e string) error {
				_, err := awslite.NewS3(awslite.Options{Config: cfg, Endpoint: e}).GetObject(ctx, &awslite.GetObjectInput{Bucket: bucket, Key: key, IfMatch: `"e1"`})
				return err
			}},
		{name: "ListObjectsV2", answer: `<ListBucketResult></ListBucketResult>`,
			sdk: func(e string) error {
				c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(e), true })
				_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("config/"), ContinuationToken: aws.String("t/1=="), MaxKeys: aws.Int32(2)})
				return err
			},
			ours: func(e string) error {
				_, err := awslite.NewS3(awslite.Options{Config: cfg, Endpoint: e}).ListObjectsV2(ctx, &awslite.ListObjectsV2Input{Bucket: bucket, Prefix: "config/", ContinuationToken: "t/1==", MaxKeys: 2})
				return err
			}},
		{name: "StartExecution", answer: `{"executionArn": "a"}`,
			sdk: func(e string) error {
				_, err := sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(e) }).StartExecution(ctx, &sfn.StartExecutionInput{
					StateMachineArn: aws.String("arn:m"), Name: aws.String("n"), Input: aws.String(`{"a": 1}`)})
				return err
			},
			ours: func(e string) error {
				_, err := awslite.NewSFN(awslite.Options{Config: cfg, Endpoint: e}).StartExecution(ctx, &awslite.StartExecutionInput{StateMachineArn: "arn:m", Name: "n", Input: `{"a": 1}`})
				return err
			}},
		{name: "SendTaskSuccess", answer: `{}`,
			sdk: func(e string) error {
				_, err := sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(e) }).SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{
					TaskToken: aws.String("tok"), Output: aws.String(`{"ok": true}`)})
				return err
			},
			ours: func(e string) error {
				return awslite.NewSFN(awslite.Options{Config: cfg, Endpoint: e}).SendTaskSuccess(ctx, &awslite.SendTaskSuccessInput{TaskToken: "tok", Output: `{"ok": true}`})
			}},
		{name: "SendTaskFailure", answer: `{}`,
			sdk: func(e string) error {
				_, err := sfn.NewFromConfig(cfg, func(o *sfn.Options) { o.BaseEndpoint = aws.String(e) }).SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
					TaskToken: aws.String("tok"), Error: aws.String("denied"), Cause: aws.String("no")})
				return err
			},
			ours: func(e string) error {
				return awslite.NewSFN(awslite.Options{Config: cfg, Endpoint: e}).SendTaskFailure(ctx, &awslite.SendTaskFailureInput{TaskToken: "tok", Error: "denied", Cause: "no"})
			}},
		{name: "GetSecretValue", answer: `{"SecretString": "s"}`,
			sdk: func(e string) error {
				_, err := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(e) }).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
					SecretId: aws.String("app/key")})
				return err
			},
			ours: func(e string) error {
				_, err := awslite.NewSecretsManager(awslite.Options{Config: cfg, Endpoint: e}).GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: "app/key"})
				return err
			}},
		{name: "Publish", answer: `<PublishResponse><PublishResult><MessageId>m-1</MessageId></PublishResult></PublishResponse>`,
			sdk: func(e string) error {
				_, err := sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(e) }).Publish(ctx, &sns.PublishInput{
					TopicArn: aws.String("arn:aws:sns:us-east-1:1:approvers"), Subject: aws.String("Approve?"), Message: aws.String("a & b = c\n")})
				return err
			},
			ours: func(e string) error {
				out, err := awslite.NewSNS(awslite.Options{Config: cfg, Endpoint: e}).Publish(ctx, &awslite.PublishInput{TopicArn: "arn:aws:sns:us-east-1:1:approvers", Subject: "Approve?", Message: "a & b = c\n"})
				if err == nil && out.MessageId != "m-1" {
					err = errors.New("message id " + out.MessageId)
				}
				return err
			}},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			srv, got := recorder(t, p.answer)
			if err := p.sdk(srv.URL); err != nil {
				t.Fatalf("SDK: %v", err)
			}
			if err := p.ours(srv.URL); err != nil {
				t.Fatalf("awslite: %v", err)
			}
			if len(*got) != 2 {
				t.Fatalf("%d requests, want 2", len(*got))
			}
			sdk, ours := (*got)[0], (*got)[1]
			if ours.Token != "SESSIONTOKEN" {
				t.Errorf("X-Amz-Security-Token = %q, want the session token", ours.Token)
			}
			if !strings.HasPrefix(ours.Scope, time.Now().UTC().Format("20060102")[:6]) || !strings.HasSuffix(ours.Scope, "/aws4_request") {
				t.Errorf("signature scope %q, want <date>/<region>/<service>/aws4_request", ours.Scope)
			}
			if diff := cmp.Diff(sdk, ours); diff != "" {
				t.Errorf("the request differs from the SDK's (-SDK +awslite):\n%s", diff)
			}
		})
	}
}
