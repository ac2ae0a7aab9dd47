package sfnflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/workflow"
	"github.com/countersign/countersign/shared/workflow/sfnflow"
)

const (
	confirmARN = "arn:aws:states:us-east-1:123456789012:stateMachine:countersign-confirm"
	batchARN   = "arn:aws:states:us-east-1:123456789012:stateMachine:countersign-batch"
)

// request is one call the fake Step Functions received.
type request struct {
	Action string         // from X-Amz-Target, without "AWSStepFunctions."
	Body   map[string]any // the decoded JSON body
}

// reply is what the fake answers: a JSON body with status 200, or an error
// {"__type": ErrType, "message": ...} with Status (400 when zero).
type reply struct {
	Body    string
	ErrType string
	Status  int
}

// fakeSFN is an httptest server on 127.0.0.1 speaking the awsJson1_0
// protocol of Step Functions for the actions it is given replies for.
type fakeSFN struct {
	tb      testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []request
	replies map[string]reply
}

func newFakeSFN(tb testing.TB, replies map[string]reply) *fakeSFN {
	tb.Helper()
	f := &fakeSFN{tb: tb, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSFN) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	target := r.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, "AWSStepFunctions.")
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.0" ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"UnknownOperationException","message":"bad request `+target+`"}`)
		return
	}
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"SerializationException","message":"bad JSON"}`)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, request{Action: action, Body: body})
	rep, ok := f.replies[action]
	f.mu.Unlock()
	switch {
	case !ok:
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"UnknownOperationException","message":"no reply for `+action+`"}`)
	case rep.ErrType != "":
		status := rep.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"__type": rep.ErrType, "message": "fake " + rep.ErrType})
	default:
		io.WriteString(w, rep.Body)
	}
}

func (f *fakeSFN) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// newFlow returns a Flow using a real *awslite.SFN pointed at f.
func newFlow(tb testing.TB, f *fakeSFN) *sfnflow.Flow {
	tb.Helper()
	cfg := aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
		HTTPClient:       f.srv.Client(),
		RetryMaxAttempts: 1,
	}
	client := awslite.NewSFN(awslite.Options{Config: cfg, Endpoint: f.srv.URL})
	flow, err := sfnflow.New(client, map[workflow.Machine]string{workflow.Confirm: confirmARN, workflow.Batch: batchARN})
	if err != nil {
		tb.Fatal(err)
	}
	return flow
}

// wantBody checks that got has exactly the string fields want.
func wantBody(tb testing.TB, got request, action string, want map[string]string) {
	tb.Helper()
	if got.Action != action {
		tb.Errorf("action = %q, want %q", got.Action, action)
	}
	if len(got.Body) != len(want) {
		tb.Errorf("%s body = %v, want fields %v", action, got.Body, want)
	}
	for k, v := range want {
		if s, _ := got.Body[k].(string); s != v {
			tb.Errorf("%s body field %s = %q, want %q", action, k, got.Body[k], v)
		}
	}
}

// noSDKTypes fails if err's chain holds a smithy API error.
func noSDKTypes(tb testing.TB, err error) {
	tb.Helper()
	if _, ok := errors.AsType[smithy.APIError](err); ok {
		tb.Errorf("error %v leaks a smithy.APIError", err)
	}
}

func TestStart(t *testing.T) {
	const execARN = "arn:aws:states:us-east-1:123456789012:execution:countersign-confirm:c_123"
	tests := []struct {
		name      string
		machine   workflow.Machine
		input     string
		reply     reply
		wantARN   string
		wantInput string // sent input
		wantState string // sent stateMachineArn
		wantErr   error  // errors.Is target; nil for success
		wantMsg   string // substring of the error
	}{
		{
			name: "confirm", machine: workflow.Confirm, input: `{"id":"c_123"}`,
			reply:   reply{Body: `{"executionArn":"` + execARN + `","startDate":1.7e9}`},
			wantARN: execARN, wantInput: `{"id":"c_123"}`, wantState: confirmARN,
		},
		{
			name: "batch", machine: workflow.Batch, input: `{"id":"c_123"}`,
			reply:   reply{Body: `{"executionArn":"` + execARN + `","startDate":1.7e9}`},
			wantARN: execARN, wantInput: `{"id":"c_123"}`, wantState: batchARN,
		},
		{
			name: "empty input is {}", machine: workflow.Confirm, input: "",
			reply:   reply{Body: `{"executionArn":"` + execARN + `","startDate":1.7e9}`},
			wantARN: execARN, wantInput: `{}`, wantState: confirmARN,
		},
		{
			name: "execution already exists", machine: workflow.Confirm, input: `{"id":"other"}`,
			reply:     reply{ErrType: "ExecutionAlreadyExists"},
			wantInput: `{"id":"other"}`, wantState: confirmARN,
			wantErr: sfnflow.ErrExecutionAlreadyExists, wantMsg: "start confirm c_123",
		},
		{
			name: "namespaced error type", machine: workflow.Confirm, input: `{}`,
			reply:     reply{ErrType: "com.amazonaws.swf.service.v2.model#ExecutionAlreadyExists"},
			wantInput: `{}`, wantState: confirmARN,
			wantErr: sfnflow.ErrExecutionAlreadyExists,
		},
		{
			name: "other error is wrapped", machine: workflow.Confirm, input: `{}`,
			reply:     reply{ErrType: "StateMachineDoesNotExist"},
			wantInput: `{}`, wantState: confirmARN,
			wantMsg: "StateMachineDoesNotExist",
		},
		{
			name: "no execution ARN", machine: workflow.Confirm, input: `{}`,
			reply:     reply{Body: `{}`},
			wantInput: `{}`, wantState: confirmARN,
			wantMsg: "no execution ARN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t, map[string]reply{"StartExecution": tt.reply})
			arn, err := newFlow(t, f).Start(context.Background(), tt.machine, "c_123", []byte(tt.input))
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1: %v", len(reqs), reqs)
			}
			wantBody(t, reqs[0], "StartExecution", map[string]string{
				"stateMachineArn": tt.wantState, "name": "c_123", "input": tt.wantInput,
			})
			failed := tt.wantErr != nil || tt.wantMsg != ""
			switch {
			case !failed && err != nil:
				t.Fatalf("Start: %v", err)
			case failed && err == nil:
				t.Fatalf("Start = %q, want an error", arn)
			case !failed:
				if arn != tt.wantARN {
					t.Errorf("Start = %q, want %q", arn, tt.wantARN)
				}
				return
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Start error = %v, want %v", err, tt.wantErr)
				}
				noSDKTypes(t, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Start error = %v, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestStartUnknownMachine(t *testing.T) {
	f := newFakeSFN(t, nil)
	if _, err := newFlow(t, f).Start(context.Background(), "nope", "c_1", []byte(`{}`)); err == nil {
		t.Fatal("Start of an unknown machine succeeded")
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent, want 0", n)
	}
}

// taskErrors are the Step Functions answers to SendTask* and what the
// Flow must return for each.
var taskErrors = []struct {
	name     string
	errType  string
	status   int
	notFound bool   // want workflow.ErrTaskNotFound
	wantMsg  string // substring of the error
}{
	{name: "ok"},
	{name: "task does not exist", errType: "TaskDoesNotExist", notFound: true, wantMsg: "TaskDoesNotExist"},
	{name: "invalid token", errType: "InvalidToken", notFound: true, wantMsg: "InvalidToken"},
	{name: "task timed out", errType: "TaskTimedOut", notFound: true, wantMsg: "TaskTimedOut"},
	{name: "namespaced type", errType: "com.amazonaws.swf.service.v2.model#TaskTimedOut", notFound: true},
	{name: "invalid output", errType: "InvalidOutput", wantMsg: "InvalidOutput"},
	{name: "server error", errType: "InternalFailure", status: 500, wantMsg: "InternalFailure"},
}

func checkTaskError(t *testing.T, op string, err error, notFound bool, wantMsg string, wantFail bool) {
	t.Helper()
	switch {
	case !wantFail:
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return
	case err == nil:
		t.Fatalf("%s succeeded, want an error", op)
	}
	if got := errors.Is(err, workflow.ErrTaskNotFound); got != notFound {
		t.Errorf("%s error = %v; errors.Is ErrTaskNotFound = %v, want %v", op, err, got, notFound)
	}
	if notFound {
		noSDKTypes(t, err)
	}
	if !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("%s error = %v, want it to contain %q", op, err, wantMsg)
	}
}

func TestSendTaskSuccess(t *testing.T) {
	for _, tt := range taskErrors {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t, map[string]reply{"SendTaskSuccess": {Body: `{}`, ErrType: tt.errType, Status: tt.status}})
			err := newFlow(t, f).SendTaskSuccess(context.Background(), "tok-1", []byte(`{"decision":"approve"}`))
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1: %v", len(reqs), reqs)
			}
			wantBody(t, reqs[0], "SendTaskSuccess", map[string]string{"taskToken": "tok-1", "output": `{"decision":"approve"}`})
			checkTaskError(t, "SendTaskSuccess", err, tt.notFound, tt.wantMsg, tt.errType != "")
		})
	}
}

func TestSendTaskFailure(t *testing.T) {
	for _, tt := range taskErrors {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t, map[string]reply{"SendTaskFailure": {Body: `{}`, ErrType: tt.errType, Status: tt.status}})
			err := newFlow(t, f).SendTaskFailure(context.Background(), "tok-1", "Rejected", "rejected by alice")
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1: %v", len(reqs), reqs)
			}
			wantBody(t, reqs[0], "SendTaskFailure", map[string]string{"taskToken": "tok-1", "error": "Rejected", "cause": "rejected by alice"})
			checkTaskError(t, "SendTaskFailure", err, tt.notFound, tt.wantMsg, tt.errType != "")
		})
	}
}

func TestSendTaskFailureTruncates(t *testing.T) {
	tests := []struct {
		name, errorName, cause string
		wantName, wantCause    string // "" means: the input unchanged
	}{
		{name: "at the limits", errorName: strings.Repeat("E", 256), cause: strings.Repeat("c", 32768)},
		{
			name: "ASCII over the limits", errorName: strings.Repeat("E", 300), cause: strings.Repeat("c", 40000),
			wantName: strings.Repeat("E", 256), wantCause: strings.Repeat("c", 32768),
		},
		{
			// "é" is 2 bytes: 255 bytes of "E" then a split "é" would end
			// mid-character, so the cut falls before it.
			name: "no split character", errorName: strings.Repeat("E", 255) + "éé", cause: strings.Repeat("c", 32767) + "€",
			wantName: strings.Repeat("E", 255), wantCause: strings.Repeat("c", 32767),
		},
		{
			name: "invalid UTF-8 replaced", errorName: "Bad\xffName", cause: "cause\xfe",
			wantName: "Bad\uFFFDName", wantCause: "cause\uFFFD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t, map[string]reply{"SendTaskFailure": {Body: `{}`}})
			if err := newFlow(t, f).SendTaskFailure(context.Background(), "tok", tt.errorName, tt.cause); err != nil {
				t.Fatal(err)
			}
			wantName, wantCause := tt.wantName, tt.wantCause
			if wantName == "" {
				wantName = tt.errorName
			}
			if wantCause == "" {
				wantCause = tt.cause
			}
			body := f.requests()[0].Body
			gotName, _ := body["error"].(string)
			gotCause, _ := body["cause"].(string)
			if gotName != wantName {
				t.Errorf("error sent = %q (%d bytes), want %q (%d bytes)", gotName, len(gotName), wantName, len(wantName))
			}
			if gotCause != wantCause {
				t.Errorf("cause sent: %d bytes, want %d bytes", len(gotCause), len(wantCause))
			}
			if len(gotName) > sfnflow.MaxErrorNameLen || len(gotCause) > sfnflow.MaxCauseLen || !utf8.ValidString(gotName) || !utf8.ValidString(gotCause) {
				t.Errorf("sent %d/%d bytes (valid UTF-8 %v/%v), over the limits", len(gotName), len(gotCause), utf8.ValidString(gotName), utf8.ValidString(gotCause))
			}
		})
	}
}

func TestNew(t *testing.T) {
	client := awslite.NewSFN(awslite.Options{Config: aws.Config{Region: "us-east-1"}})
	tests := []struct {
		name     string
		api      sfnflow.API
		machines map[workflow.Machine]string
		wantErr  string
	}{
		{name: "ok", api: client, machines: map[workflow.Machine]string{workflow.Confirm: confirmARN, workflow.Batch: batchARN}},
		{name: "nil API", machines: map[workflow.Machine]string{workflow.Confirm: confirmARN, workflow.Batch: batchARN}, wantErr: "nil API"},
		{name: "no machines", api: client, wantErr: "batch, confirm"},
		{name: "batch missing", api: client, machines: map[workflow.Machine]string{workflow.Confirm: confirmARN}, wantErr: "ARN for batch"},
		{name: "empty ARN", api: client, machines: map[workflow.Machine]string{workflow.Confirm: " ", workflow.Batch: batchARN}, wantErr: "ARN for confirm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sfnflow.New(tt.api, tt.machines)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
