package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/store/storetest"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/workflow"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const publicURL = "https://approve.example.test"

// nopWorkflow accepts everything.
type nopWorkflow struct{}

func (nopWorkflow) Start(context.Context, workflow.Machine, string, []byte) (string, error) {
	return "exec", nil
}
func (nopWorkflow) SendTaskSuccess(context.Context, string, []byte) error         { return nil }
func (nopWorkflow) SendTaskFailure(context.Context, string, string, string) error { return nil }

// fakeChannel records the events it is sent.
type fakeChannel struct {
	name string
	mu   sync.Mutex
	evs  []notify.Event
}

func (c *fakeChannel) Name() string { return c.name }

func (c *fakeChannel) Send(_ context.Context, ev notify.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
	return nil
}

func (c *fakeChannel) events() []notify.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]notify.Event(nil), c.evs...)
}

type env struct {
	ctx      context.Context
	clock    *storetest.Clock
	st       *embedded.Store
	svc      *confirm.Service
	signer   *links.Signer
	channels []*fakeChannel
	disp     *notify.Dispatcher
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	clock := storetest.NewClock(t0)
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "db"), &embedded.Options{Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	signer, err := links.NewSigner(links.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		tb.Fatal(err)
	}
	chs := []*fakeChannel{{name: "console"}, {name: "ops"}}
	disp := notify.NewDispatcher([]notify.Channel{chs[0], chs[1]}, nil)
	tb.Cleanup(func() { _ = disp.Close(context.Background()) })
	return &env{
		ctx: context.Background(), clock: clock, st: st, signer: signer, channels: chs, disp: disp,
		svc: &confirm.Service{Store: st, Workflow: nopWorkflow{}, Now: clock.Now},
	}
}

// calls is the pipeline the execute task runs operations through.
func (e *env) calls(cfg *config.Config) *calls.Service {
	return (&calls.Service{Store: e.st, Confirm: e.announcing(), Now: e.clock.Now}).WithConfig(cfg)
}

// announcing is the lifecycle over the same store with the approver
// channels attached (e.svc, which the tests answer through, has none).
func (e *env) announcing() *confirm.Service {
	return &confirm.Service{Store: e.st, Workflow: nopWorkflow{}, Now: e.clock.Now, Events: e.disp, SyncEvents: true}
}

func (e *env) notifyTask() *tasks.Notify {
	return &tasks.Notify{Confirm: e.svc, Signer: e.signer, Dispatcher: e.disp, PublicURL: publicURL}
}

func (e *env) create(tb testing.TB, kind countersign.Kind, ops ...countersign.Operation) *countersign.Confirmation {
	tb.Helper()
	return e.createRequest(tb, confirm.Request{Kind: kind, Credential: "chat-user", Reason: "needs a person", Operations: ops})
}

func (e *env) createRequest(tb testing.TB, r confirm.Request) *countersign.Confirmation {
	tb.Helper()
	c, err := e.svc.Create(e.ctx, r)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// token returns the task token stored for confirmation id ("" if none).
func (e *env) token(tb testing.TB, id string) string {
	tb.Helper()
	tok, err := e.st.TaskToken(e.ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		tb.Fatal(err)
	}
	return tok
}

func (e *env) get(tb testing.TB, id string) *countersign.Confirmation {
	tb.Helper()
	c, err := e.st.GetConfirmation(e.ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func newOp(tb testing.TB, method, path, endpoint string, args countersign.Args) countersign.Operation {
	tb.Helper()
	o, err := confirm.NewOperation("chat-user", "crm", method, path, endpoint, args)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

func deleteOp(tb testing.TB) countersign.Operation {
	return newOp(tb, "DELETE", "/contacts/12", "/contacts/{id}", countersign.Args{Path: map[string]string{"id": "12"}})
}

// invoke runs a handler as the Lambda runtime does.
func invoke(tb testing.TB, handler any, payload string) ([]byte, error) {
	tb.Helper()
	return lambda.NewHandler(handler).Invoke(context.Background(), []byte(payload))
}

// errorType is the Lambda errorType the runtime reports for err.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

func TestNotify(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, countersign.KindCall, deleteOp(t))
	out, err := invoke(t, e.notifyTask().Handle, `{"confirmation_id":"`+c.ID+`","task_token":"tok-1","execution":"arn:exec"}`)
	if err != nil {
		t.Fatalf("notify: %v", err)
	}
	if string(out) != "{}" {
		t.Errorf("output %s, want {}", out)
	}
	if got := e.token(t, c.ID); got != "tok-1" {
		t.Errorf("stored token %q, want tok-1", got)
	}
	for _, ch := range e.channels {
		evs := ch.events()
		if len(evs) != 1 {
			t.Fatalf("channel %s got %d events, want 1", ch.name, len(evs))
		}
		ev := evs[0]
		if ev.Type != notify.TypeRequested || ev.Confirmation.ID != c.ID || ev.Confirmation.Credential != "chat-user" ||
			ev.Confirmation.Kind != "call" || !ev.Confirmation.ExpiresAt.Equal(c.ExpiresAt) || ev.Confirmation.Reason != "needs a person" {
			t.Errorf("channel %s event %+v", ch.name, ev)
		}
		if len(ev.Confirmation.Operations) != 1 {
			t.Fatalf("operations %+v", ev.Confirmation.Operations)
		}
		var args map[string]any
		if err := json.Unmarshal(ev.Confirmation.Operations[0].Args, &args); err != nil {
			t.Fatal(err)
		}
		wantArgs := map[string]any{"path": map[string]any{"id": "12"}, "query": map[string]any{}, "body": nil}
		if diff := cmp.Diff(wantArgs, args); diff != "" {
			t.Errorf("args (-want +got):\n%s", diff)
		}
		if len(ev.Links) != 1 || ev.Links[0].Approver != ch.name {
			t.Fatalf("channel %s links %+v, want exactly its own", ch.name, ev.Links)
		}
		raw := ev.Links[0].URL
		if !strings.HasPrefix(raw, publicURL+"/approve/"+c.ID+"?") {
			t.Errorf("link %s does not point at %s/approve/%s", raw, publicURL, c.ID)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		l, err := links.ParseLink(c.ID, u.Query())
		if err != nil {
			t.Fatalf("parse link %s: %v", raw, err)
		}
		if l.Approver != ch.name || l.Exp != c.ExpiresAt.Unix() {
			t.Errorf("link approver %q exp %d, want %q %d", l.Approver, l.Exp, ch.name, c.ExpiresAt.Unix())
		}
		if err := e.signer.Verify(l, t0); err != nil {
			t.Errorf("verify link: %v", err)
		}
		if err := e.signer.Verify(l, c.ExpiresAt); !errors.Is(err, links.ErrExpired) {
			t.Errorf("verify at expiry: %v, want ErrExpired", err)
		}
	}
	if a, b := e.channels[0].events()[0].Links[0].URL, e.channels[1].events()[0].Links[0].URL; a == b {
		t.Errorf("both channels got the same link %s", a)
	}

	t.Run("retry with the same token is harmless", func(t *testing.T) {
		before := e.get(t, c.ID)
		if _, err := invoke(t, e.notifyTask().Handle, `{"confirmation_id":"`+c.ID+`","task_token":"tok-1"}`); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if diff := cmp.Diff(before, e.get(t, c.ID)); diff != "" {
			t.Errorf("a retry changed the record:\n%s", diff)
		}
		for _, ch := range e.channels {
			for _, ev := range ch.events() {
				if ev.Type != notify.TypeRequested || len(ev.Links) != 1 || ev.Links[0].Approver != ch.name {
					t.Errorf("channel %s: unexpected event %+v", ch.name, ev)
				}
			}
		}
	})
}

func TestNotifyNotPending(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, countersign.KindCall, deleteOp(t))
	if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusExpired); err != nil {
		t.Fatal(err)
	}
	if _, err := invoke(t, e.notifyTask().Handle, `{"confirmation_id":"`+c.ID+`","task_token":"tok-1"}`); err != nil {
		t.Fatalf("notify: %v", err)
	}
	for _, ch := range e.channels {
		if n := len(ch.events()); n != 0 {
			t.Errorf("channel %s got %d events for a confirmation no longer pending", ch.name, n)
		}
	}
	if got := e.token(t, c.ID); got != "" {
		t.Errorf("token %q stored on an expired record", got)
	}
}

func TestTaskErrors(t *testing.T) {
	e := newEnv(t)
	fin := &tasks.Finalize{Confirm: e.announcing()}
	exe := &tasks.Execute{Calls: e.calls(&config.Config{Connections: map[string]*config.Connection{}})}
	pending := e.create(t, countersign.KindScript, deleteOp(t))
	rejected := e.create(t, countersign.KindScript, deleteOp(t))
	if _, _, err := e.svc.AttachToken(e.ctx, rejected.ID, "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Answer(e.ctx, rejected.ID, confirm.Answer{Approver: "ops"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		handler any
		payload string
	}{
		{"notify unknown confirmation", e.notifyTask().Handle, `{"confirmation_id":"cf_nope","task_token":"tok"}`},
		{"notify without a token", e.notifyTask().Handle, `{"confirmation_id":"` + pending.ID + `"}`},
		{"notify without an id", e.notifyTask().Handle, `{"task_token":"tok"}`},
		{"finalize unknown confirmation", fin.Handle, `{"confirmation_id":"cf_nope","outcome":"expired"}`},
		{"finalize with an outcome it cannot record", fin.Handle, `{"confirmation_id":"` + pending.ID + `","outcome":"approved"}`},
		{"execute unknown confirmation", exe.Handle, `{"confirmation_id":"cf_nope"}`},
		{"execute a rejected batch", exe.Handle, `{"confirmation_id":"` + rejected.ID + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := invoke(t, tt.handler, tt.payload)
			if err == nil {
				t.Fatal("err = nil")
			}
			if got := errorType(err); got != "TaskError" {
				t.Errorf("Lambda errorType %q (%T: %v), want TaskError", got, err, err)
			}
			var te *tasks.TaskError
			if !errors.As(err, &te) || te.Unwrap() == nil {
				t.Errorf("%v is not a *tasks.TaskError with a cause", err)
			}
		})
	}
	t.Run("the cause keeps the lifecycle code", func(t *testing.T) {
		_, err := invoke(t, e.notifyTask().Handle, `{"confirmation_id":"cf_nope","task_token":"tok"}`)
		if fault.CodeOf(err) != fault.UnknownConfirmation || !strings.Contains(err.Error(), "cf_nope") {
			t.Errorf("err %v, want unknown_confirmation naming cf_nope", err)
		}
	})
}

func TestFinalize(t *testing.T) {
	t.Run("expired sends one expired event per channel", func(t *testing.T) {
		e := newEnv(t)
		fin := &tasks.Finalize{Confirm: e.announcing()}
		c := e.create(t, countersign.KindCall, deleteOp(t))
		e.clock.Advance(600 * time.Second)
		for range 2 { // the task may run twice; the second sends nothing
			out, err := invoke(t, fin.Handle, `{"confirmation_id":"`+c.ID+`","outcome":"expired"}`)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != `{"status":"expired"}` {
				t.Errorf("output %s", out)
			}
		}
		for _, ch := range e.channels {
			evs := ch.events()
			if len(evs) != 1 || evs[0].Type != notify.TypeExpired || evs[0].Status != "expired" || evs[0].Confirmation.ID != c.ID || len(evs[0].Links) != 0 {
				t.Errorf("channel %s events %+v, want one expired event without links", ch.name, evs)
			}
		}
	})
	t.Run("a decided record stays decided and sends nothing", func(t *testing.T) {
		e := newEnv(t)
		fin := &tasks.Finalize{Confirm: e.announcing()}
		c := e.create(t, countersign.KindCall, deleteOp(t))
		if _, _, err := e.svc.AttachToken(e.ctx, c.ID, "tok"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		out, err := invoke(t, fin.Handle, `{"confirmation_id":"`+c.ID+`","outcome":"expired"}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `{"status":"approved"}` {
			t.Errorf("output %s, want approved", out)
		}
		if st := e.get(t, c.ID).Status; st != countersign.StatusApproved {
			t.Errorf("stored %s", st)
		}
		for _, ch := range e.channels {
			if n := len(ch.events()); n != 0 {
				t.Errorf("channel %s got %d events", ch.name, n)
			}
		}
	})
	t.Run("an approval the gateway runs itself says execute", func(t *testing.T) {
		e := newEnv(t)
		fin := &tasks.Finalize{Confirm: e.announcing()}
		for _, kind := range []countersign.Kind{countersign.KindScript, countersign.KindCall} {
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: kind, Credential: "chat-user", Reason: "needs a person",
				Operations: []countersign.Operation{deleteOp(t)}, GatewayRuns: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.svc.AttachToken(e.ctx, c.ID, "tok-"+c.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
				t.Fatal(err)
			}
			out, err := invoke(t, fin.Handle, `{"confirmation_id":"`+c.ID+`","outcome":"expired"}`)
			if err != nil || string(out) != `{"status":"approved","execute":true}` {
				t.Errorf("%s: output %s, %v; want approved with execute", kind, out, err)
			}
		}
	})
	t.Run("rejected sends nothing", func(t *testing.T) {
		e := newEnv(t)
		fin := &tasks.Finalize{Confirm: e.announcing()}
		c := e.create(t, countersign.KindCall, deleteOp(t))
		out, err := invoke(t, fin.Handle, `{"confirmation_id":"`+c.ID+`","outcome":"failed"}`)
		if err != nil || string(out) != `{"status":"failed"}` {
			t.Errorf("finalize failed = %s, %v", out, err)
		}
		for _, ch := range e.channels {
			if n := len(ch.events()); n != 0 {
				t.Errorf("channel %s got %d events", ch.name, n)
			}
		}
	})
}

// upstreamCall is one request the test upstream saw.
type upstreamCall struct {
	Method, Path, Query, Key, Token, ContentType, Body string
}

type recordingUpstream struct {
	mu    sync.Mutex
	calls []upstreamCall
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.calls = append(u.calls, upstreamCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Key: r.Header.Get("Idempotency-Key"),
		Token: r.Header.Get("X-Upstream-Token"), ContentType: r.Header.Get("Content-Type"), Body: string(b)})
	u.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"99","amount":12.50}`))
	}
}

func (u *recordingUpstream) seen() []upstreamCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamCall(nil), u.calls...)
}

func TestExecute(t *testing.T) {
	e := newEnv(t)
	up := &recordingUpstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cfg := &config.Config{Connections: map[string]*config.Connection{
		"crm": {Name: "crm", BaseURL: srv.URL, Headers: map[string]string{"X-Upstream-Token": "upstream-secret"}},
	}}
	exe := &tasks.Execute{Calls: e.calls(cfg)}
	post := newOp(t, "POST", "/payments", "/payments", countersign.Args{Query: map[string]any{"dry": "no", "tag": []any{"a", "b"}}, Body: json.RawMessage(`{"amount":12.50}`)})
	skipped := newOp(t, "DELETE", "/contacts/13", "/contacts/{id}", countersign.Args{Path: map[string]string{"id": "13"}})
	// A batch the gateway runs itself (the card); script batches go to
	// their script (TestExecuteScript).
	c := e.createRequest(t, confirm.Request{Kind: countersign.KindCall, GatewayRuns: true, Credential: "chat-user", Reason: "card",
		Operations: []countersign.Operation{deleteOp(t), skipped, post}})
	if _, _, err := e.svc.AttachToken(e.ctx, c.ID, "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Keep: []int{0, 2}}); err != nil {
		t.Fatal(err)
	}
	payload := `{"confirmation_id":"` + c.ID + `"}`
	out, err := invoke(t, exe.Handle, payload)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if string(out) != `{"status":"executed"}` {
		t.Errorf("output %s", out)
	}
	want := []upstreamCall{
		{Method: "DELETE", Path: "/contacts/12", Key: c.ID + ":0", Token: "upstream-secret"},
		{Method: "POST", Path: "/payments", Query: "dry=no&tag=a&tag=b", Key: c.ID + ":2", Token: "upstream-secret", ContentType: "application/json", Body: `{"amount":12.50}`},
	}
	if diff := cmp.Diff(want, up.seen()); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
	stored := e.get(t, c.ID)
	if o := stored.Operations[0].Outcome; o == nil || o.Status != 204 || o.Error != "" {
		t.Errorf("outcome 0 %+v, want 204", o)
	}
	if o := stored.Operations[2].Outcome; o == nil || o.Status != 201 || string(o.Body) != `{"amount":12.50,"id":"99"}` && string(o.Body) != `{"id":"99","amount":12.50}` {
		t.Errorf("outcome 2 %+v, want 201 with the JSON body", o)
	}
	if stored.Operations[1].Outcome != nil || stored.Operations[1].State != countersign.OpWaiting {
		t.Errorf("the operation left out ran: %+v", stored.Operations[1])
	}

	// A retried invocation replays: the upstream is not called again.
	out2, err := invoke(t, exe.Handle, payload)
	if err != nil {
		t.Fatalf("retried execute: %v", err)
	}
	if string(out2) != string(out) {
		t.Errorf("retry output %s, want %s", out2, out)
	}
	if n := len(up.seen()); n != 2 {
		t.Errorf("upstream called %d times after a retry, want 2", n)
	}
	for _, ch := range e.channels {
		evs := ch.events()
		if len(evs) == 0 || evs[0].Type != notify.TypeExecuted || evs[0].Status != "executed" {
			t.Fatalf("channel %s events %+v, want executed", ch.name, evs)
		}
		if ops := evs[0].Confirmation.Operations; len(ops) != 3 || len(ops[0].Outcome) == 0 || len(ops[1].Outcome) != 0 {
			t.Errorf("executed event operations %+v, want outcomes for the operations that ran", ops)
		}
	}
}

// scriptRunner records the script batches it is asked to run again.
type scriptRunner struct {
	mu  sync.Mutex
	ids []string
}

func (r *scriptRunner) Rerun(_ context.Context, id string) (*countersign.Confirmation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	return &countersign.Confirmation{ID: id, Status: countersign.StatusExecuted}, nil
}

// TestExecuteScript: a script batch runs its script again; its operations
// never run on their own, and without a script runner the task fails.
func TestExecuteScript(t *testing.T) {
	e := newEnv(t)
	up := &recordingUpstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cfg := &config.Config{Connections: map[string]*config.Connection{"crm": {Name: "crm", BaseURL: srv.URL}}}
	c := e.create(t, countersign.KindScript, deleteOp(t))
	if _, _, err := e.svc.AttachToken(e.ctx, c.ID, "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
		t.Fatal(err)
	}
	payload := `{"confirmation_id":"` + c.ID + `"}`

	scripts := &scriptRunner{}
	out, err := invoke(t, (&tasks.Execute{Calls: e.calls(cfg), Scripts: scripts}).Handle, payload)
	if err != nil || string(out) != `{"status":"executed"}` {
		t.Fatalf("execute: %s, %v", out, err)
	}
	if len(scripts.ids) != 1 || scripts.ids[0] != c.ID {
		t.Errorf("script runner asked for %v", scripts.ids)
	}
	_, err = invoke(t, (&tasks.Execute{Calls: e.calls(cfg)}).Handle, payload)
	if err == nil || !strings.Contains(err.Error(), "script runner") || errorType(err) != "TaskError" {
		t.Fatalf("execute without a script runner: %v (%s)", err, errorType(err))
	}
	if n := len(up.seen()); n != 0 {
		t.Errorf("the batch's operation ran outside its script: upstream called %d times", n)
	}
	_, err = invoke(t, (&tasks.Execute{Calls: e.calls(cfg), Scripts: scripts}).Handle, `{"confirmation_id":"cf_missing"}`)
	if err == nil || errorType(err) != "TaskError" {
		t.Fatalf("unknown confirmation: %v", err)
	}
}
