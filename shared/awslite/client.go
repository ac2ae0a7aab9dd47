package awslite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Limits on what is read of a response, so that nothing grows without
// bound: an error's body, and a JSON or XML answer (a secret is at most
// 64 KiB; a listing page of 1,000 keys well under a megabyte).
const (
	maxErrorBody  = 64 << 10
	maxAnswerBody = 4 << 20
)

// Options configure a client. Config is required; zero fields mean the
// defaults their comments give.
type Options struct {
	// Config gives the region, the credentials and, when set, the HTTP
	// client and the retryer (aws.Config.Retryer; nil: retry.NewStandard),
	// with aws.Config.RetryMaxAttempts when set.
	Config aws.Config
	// Endpoint replaces the service's public endpoint (an absolute URL,
	// for sam local and tests); S3 is then addressed path-style.
	Endpoint string
	// Now is the signing clock; nil means time.Now.
	Now func() time.Time
}

// client is what every service shares: signing, sending and retrying.
type client struct {
	service  string // the signing name: s3, states, secretsmanager
	region   string
	endpoint string // without a trailing slash
	custom   bool   // endpoint is Options.Endpoint
	creds    aws.CredentialsProvider
	http     aws.HTTPClient
	retryer  aws.Retryer
	signer   *v4.Signer
	now      func() time.Time
}

func newClient(service string, o Options, signerOpts ...func(*v4.SignerOptions)) client {
	c := client{
		service: service,
		region:  o.Config.Region,
		creds:   o.Config.Credentials,
		http:    o.Config.HTTPClient,
		signer:  v4.NewSigner(signerOpts...),
		now:     o.Now,
	}
	if o.Config.Retryer != nil {
		c.retryer = o.Config.Retryer()
	}
	if c.retryer == nil {
		c.retryer = retry.NewStandard()
	}
	if n := o.Config.RetryMaxAttempts; n > 0 {
		c.retryer = retry.AddWithMaxAttempts(c.retryer, n)
	}
	if c.http == nil {
		c.http = awshttp.NewBuildableClient()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if o.Endpoint != "" {
		c.endpoint, c.custom = strings.TrimRight(o.Endpoint, "/"), true
	}
	return c
}

// host is the service's public host name in the client's region.
func (c *client) host(prefix string) string {
	suffix := ".amazonaws.com"
	if strings.HasPrefix(c.region, "cn-") {
		suffix = ".amazonaws.com.cn"
	}
	return prefix + "." + c.region + suffix
}

// request is one call: build makes a fresh *http.Request for each attempt
// (its body is body), decode reads a successful answer.
type request struct {
	op     string
	build  func(ctx context.Context) (*http.Request, error)
	body   []byte
	decode func(*http.Response) error
	// keepBody leaves a successful answer's body open for decode's
	// caller (GetObject); decode must then take it.
	keepBody bool
}

// do sends r, retrying what the retryer says is retryable (throttling,
// 5xx, connection errors) with its backoff, within its attempts and retry
// quota.
func (c *client) do(ctx context.Context, r request) error {
	if c.creds == nil {
		return fmt.Errorf("%s %s: no credentials", c.service, r.op)
	}
	var release func(error) error
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, r)
		if release != nil {
			_ = release(err)
			release = nil
		}
		if err == nil {
			return nil
		}
		err = fmt.Errorf("%s %s: %w", c.service, r.op, err)
		if ctx.Err() != nil || attempt >= c.retryer.MaxAttempts() || !c.retryer.IsErrorRetryable(err) {
			return err
		}
		rel, qerr := c.retryer.GetRetryToken(ctx, err)
		if qerr != nil { // the retry quota is spent: no more retries for now
			return err
		}
		release = rel
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

var emptyHash = hex.EncodeToString(sha256.New().Sum(nil))

func (c *client) attempt(ctx context.Context, r request) error {
	req, err := r.build(ctx)
	if err != nil {
		return err
	}
	hash := emptyHash
	if len(r.body) > 0 {
		sum := sha256.Sum256(r.body)
		hash = hex.EncodeToString(sum[:])
		req.Body = io.NopCloser(bytes.NewReader(r.body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(r.body)), nil }
		req.ContentLength = int64(len(r.body))
	}
	req.Header.Set("User-Agent", "countersign-awslite")
	if c.service == "s3" {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hash, c.service, c.region, c.now().UTC()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return readError(resp)
	}
	if !r.keepBody {
		defer resp.Body.Close()
	}
	if r.decode == nil {
		return nil
	}
	if err := r.decode(resp); err != nil {
		if r.keepBody {
			resp.Body.Close()
		}
		return fmt.Errorf("read the answer: %w", err)
	}
	return nil
}

// Error is an error the service answered: a smithy.APIError, so callers
// tell the codes apart with errors.As as with the SDK's errors. The
// retryer reads its code (throttling) and its status (5xx).
type Error struct {
	Code, Message string
	// Status is the HTTP status of the answer.
	Status int
	// RequestID is the service's id of the request, when it gave one.
	RequestID string
}

var _ smithy.APIError = (*Error)(nil)

func (e *Error) Error() string {
	s := fmt.Sprintf("HTTP %d: %s", e.Status, e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// ErrorCode is the service's error code (NoSuchKey, ThrottlingException...).
func (e *Error) ErrorCode() string { return e.Code }

// ErrorMessage is the service's message.
func (e *Error) ErrorMessage() string { return e.Message }

// ErrorFault is smithy.FaultServer for a 5xx answer, else FaultClient.
func (e *Error) ErrorFault() smithy.ErrorFault {
	if e.Status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode is the answer's HTTP status (the retryer retries 5xx).
func (e *Error) HTTPStatusCode() int { return e.Status }

// readError reads a failed answer: a JSON body ({"__type": ..., "message":
// ...}, with the X-Amzn-Errortype header) from the JSON protocols, an XML
// one (<Error><Code>...) from S3; a body without a code (a HEAD, a proxy's
// page) is named after its status.
func readError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Amzn-Requestid")}
	if e.RequestID == "" {
		e.RequestID = resp.Header.Get("X-Amz-Request-Id")
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	body = bytes.TrimSpace(body)
	switch {
	case len(body) > 0 && body[0] == '{':
		var j struct {
			Type     string `json:"__type"`
			Code     string `json:"code"`
			Message  string `json:"message"`
			Message2 string `json:"Message"`
		}
		_ = json.Unmarshal(body, &j)
		e.Code, e.Message = j.Type, j.Message
		if e.Code == "" {
			e.Code = j.Code
		}
		if e.Message == "" {
			e.Message = j.Message2
		}
	case len(body) > 0 && body[0] == '<':
		var x struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
			Error   struct {
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			} `xml:"Error"`
		}
		_ = xml.Unmarshal(body, &x)
		e.Code, e.Message = x.Code, x.Message
		if e.Code == "" {
			e.Code, e.Message = x.Error.Code, x.Error.Message
		}
	}
	if h := resp.Header.Get("X-Amzn-Errortype"); h != "" {
		e.Code = h
	}
	e.Code = sanitizeCode(e.Code)
	if e.Code == "" {
		e.Code = statusCode(resp.StatusCode)
	}
	return e
}

// sanitizeCode takes the code out of its decorations:
// "ExecutionAlreadyExists:http://internal.amazon.com/..." and
// "com.amazonaws.states#ExecutionAlreadyExists" are ExecutionAlreadyExists.
func sanitizeCode(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// statusCode names an answer that gave no code, as the SDK does for S3.
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusNotModified:
		return "NotModified"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusTooManyRequests:
		return "TooManyRequestsException"
	}
	return http.StatusText(status)
}

// jsonCall is a call of a JSON protocol service (awsJson1_0 and 1_1): a
// POST of the input to / with the operation in X-Amz-Target, the answer
// decoded into out (nil: ignored).
func (c *client) jsonCall(ctx context.Context, version, target, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.service, op, err)
	}
	return c.do(ctx, request{
		op:    op,
		body:  body,
		build: c.jsonRequest(version, target, op),
		decode: func(resp *http.Response) error {
			if out == nil {
				_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody))
				return err
			}
			data, err := readAnswer(resp)
			if err != nil {
				return err
			}
			return json.Unmarshal(data, out)
		},
	})
}

// jsonRequest builds the request of a JSON protocol call (awsJson1_0 and
// 1_1): a POST to / of the service's endpoint, with the operation in
// X-Amz-Target.
func (c *client) jsonRequest(version, target, op string) func(context.Context) (*http.Request, error) {
	endpoint := c.endpoint
	if endpoint == "" {
		endpoint = "https://" + c.host(c.service)
	}
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-amz-json-"+version)
		req.Header.Set("X-Amz-Target", target+"."+op)
		return req, nil
	}
}

// readAnswer reads an answer's body, at most maxAnswerBody bytes.
func readAnswer(resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxAnswerBody {
		return nil, errors.New("the answer is too large")
	}
	return data, nil
}
