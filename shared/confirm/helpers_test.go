package confirm_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/store/storetest"
	"github.com/countersign/countersign/shared/workflow"
)

// t0 is the fixed start of every test clock.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// started is one recorded Workflow.Start.
type started struct {
	Machine workflow.Machine
	Name    string
	Input   json.RawMessage
}

// told is one recorded SendTaskSuccess or SendTaskFailure, with the stored
// status of the confirmation at the moment the workflow was told.
type told struct {
	Token   string
	Success bool
	Output  json.RawMessage
	Error   string
	Cause   string
	// StoredStatus is read from the store inside the call: it proves the
	// decision was written before the workflow was told.
	StoredStatus countersign.Status
}

// fakeWorkflow records what the lifecycle asks of the workflow and can fail.
type fakeWorkflow struct {
	st store.Store

	mu       sync.Mutex
	starts   []started
	tells    []told
	startErr error
	sendErr  error
}

var _ workflow.Workflow = (*fakeWorkflow)(nil)

func (f *fakeWorkflow) Start(_ context.Context, m workflow.Machine, name string, input []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return "", f.startErr
	}
	f.starts = append(f.starts, started{Machine: m, Name: name, Input: append(json.RawMessage(nil), input...)})
	return "exec:" + name, nil
}

func (f *fakeWorkflow) storedStatus(ctx context.Context, token string) countersign.Status {
	// Tokens in these tests are "tok:<confirmation id>".
	id := token[len("tok:"):]
	c, err := f.st.GetConfirmation(ctx, id)
	if err != nil {
		return ""
	}
	return c.Status
}

func (f *fakeWorkflow) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	st := f.storedStatus(ctx, token)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tells = append(f.tells, told{Token: token, Success: true, Output: append(json.RawMessage(nil), output...), StoredStatus: st})
	return f.sendErr
}

func (f *fakeWorkflow) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	st := f.storedStatus(ctx, token)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tells = append(f.tells, told{Token: token, Error: errorName, Cause: cause, StoredStatus: st})
	return f.sendErr
}

func (f *fakeWorkflow) told() []told {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]told(nil), f.tells...)
}

func (f *fakeWorkflow) started() []started {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]started(nil), f.starts...)
}

// env is a lifecycle service on a real embedded store with a fake workflow
// and a manual clock.
type env struct {
	svc   *confirm.Service
	st    *embedded.Store
	wf    *fakeWorkflow
	clock *storetest.Clock
	ctx   context.Context
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	clock := storetest.NewClock(t0)
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "db"), &embedded.Options{Now: clock.Now})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	wf := &fakeWorkflow{st: st}
	n := 0
	var mu sync.Mutex
	svc := &confirm.Service{
		Store: st, Workflow: wf, Now: clock.Now, Credentials: st,
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return "cf_test" + string(rune('a'+n-1))
		},
	}
	return &env{svc: svc, st: st, wf: wf, clock: clock, ctx: context.Background()}
}

// op builds a bound operation for credential.
func op(tb testing.TB, credential, method, path, endpoint string, pathArgs map[string]string, body string) countersign.Operation {
	tb.Helper()
	args := countersign.Args{Path: pathArgs}
	if body != "" {
		args.Body = json.RawMessage(body)
	}
	o, err := confirm.NewOperation(credential, "crm", method, path, endpoint, args)
	if err != nil {
		tb.Fatalf("new operation: %v", err)
	}
	return o
}

func deleteOp(tb testing.TB, credential, id string) countersign.Operation {
	tb.Helper()
	return op(tb, credential, "DELETE", "/contacts/"+id, "/contacts/{id}", map[string]string{"id": id}, "")
}

// createCall creates a pending single-call confirmation for chat-user.
// token returns the task token stored for confirmation id ("" if none).
func (e *env) token(tb testing.TB, id string) string {
	tb.Helper()
	tok, err := e.st.TaskToken(e.ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		tb.Fatal(err)
	}
	return tok
}

func (e *env) createCall(tb testing.TB) *countersign.Confirmation {
	tb.Helper()
	c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Reason: "deleting needs a person",
		Operations: []countersign.Operation{deleteOp(tb, "chat-user", "12")}})
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
	return c
}

// createScript creates a pending batch of n operations for chat-user.
func (e *env) createScript(tb testing.TB, n int) *countersign.Confirmation {
	tb.Helper()
	ops := make([]countersign.Operation, n)
	for i := range ops {
		ops[i] = deleteOp(tb, "chat-user", string(rune('1'+i)))
	}
	c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindScript, Credential: "chat-user", Reason: "script", Operations: ops})
	if err != nil {
		tb.Fatalf("create script: %v", err)
	}
	return c
}

// createCard creates a pending batch of n operations that the gateway runs
// itself when approved (the MCP card): its status follows each outcome,
// where a script batch's waits for the script's end.
func (e *env) createCard(tb testing.TB, n int) *countersign.Confirmation {
	tb.Helper()
	ops := make([]countersign.Operation, n)
	for i := range ops {
		ops[i] = deleteOp(tb, "chat-user", string(rune('1'+i)))
	}
	c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Reason: "card", Operations: ops, GatewayRuns: true})
	if err != nil {
		tb.Fatalf("create card: %v", err)
	}
	return c
}

// ready attaches the token the notify task would attach.
func (e *env) ready(tb testing.TB, id string) {
	tb.Helper()
	if _, ok, err := e.svc.AttachToken(e.ctx, id, "tok:"+id); err != nil || !ok {
		tb.Fatalf("attach token to %s: ok %v, err %v", id, ok, err)
	}
}

func (e *env) get(tb testing.TB, id string) *countersign.Confirmation {
	tb.Helper()
	c, err := e.st.GetConfirmation(e.ctx, id)
	if err != nil {
		tb.Fatalf("get %s: %v", id, err)
	}
	return c
}

// approved creates a call confirmation and approves it.
func (e *env) approvedCall(tb testing.TB) *countersign.Confirmation {
	tb.Helper()
	c := e.createCall(tb)
	e.ready(tb, c.ID)
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
		tb.Fatalf("approve: %v", err)
	}
	return e.get(tb, c.ID)
}

// wantCode fails unless err carries the lifecycle code want.
func wantCode(tb testing.TB, err error, want fault.Code) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("err = nil, want code %s", want)
	}
	if got := fault.CodeOf(err); got != want {
		tb.Fatalf("code %q (err %v), want %q", got, err, want)
	}
}

var errBoom = errors.New("boom")
