package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/infra/local/democrm"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/upstream"
	"github.com/countersign/countersign/shared/workflow"
	"github.com/countersign/countersign/shared/workflow/local"
	"github.com/countersign/countersign/statemachines"
)

// This file is the fault-injection rig: the whole graph of the local stack
// (app.New, the local ASL engine running the real state machines and task
// handlers, the embedded store, the HTTP handlers) built in one
// testing/synctest bubble, with decorators on the three interfaces where
// the world can fail: the store (faultStore), the workflow (faultWorkflow)
// and the upstream's transport (faultUpstream). Requests go to the handlers
// in memory, so the bubble's clock can jump past every window in an instant.

// faultMode is how an injected write fault behaves.
type faultMode int

const (
	// before: the write fails and nothing is written.
	before faultMode = iota + 1
	// after: the write is applied, then the caller gets an error (a
	// response lost on the way back).
	after
	// afterConflict: the write is applied, then the caller gets
	// store.ErrConflict: what DynamoDB's SDK answers when it retries a
	// conditional write whose first response was lost.
	afterConflict
	// afterDown: the write is applied, then the caller gets an error, and
	// so does its next read of the record: it cannot tell.
	afterDown
)

func (m faultMode) String() string {
	switch m {
	case before:
		return "fails before it is applied"
	case after:
		return "applied, then an error"
	case afterConflict:
		return "applied, then a conflict (SDK retry)"
	case afterDown:
		return "applied, then an error, and the read back fails"
	}
	return "no fault"
}

// errInjected is every injected store and workflow failure.
var errInjected = errors.New("injected fault")

// step is a lifecycle step, as the store sees it: which write is being made.
type step string

const (
	stepCreate      step = "create"
	stepAttach      step = "attach token"
	stepDecide      step = "decide"
	stepClaim       step = "redeem/claim"
	stepComplete    step = "complete"
	stepFinalize    step = "finalize"
	stepSettle      step = "settle"
	stepIdemClaim   step = "idempotency claim"
	stepIdemAnswer  step = "idempotency answer"
	stepQuota       step = "quota"
	stepReview      step = "review"
	stepOtherUpdate step = "other update"
)

// classify names the step an update of a confirmation makes, from the
// stored record and the one being written.
func classify(old, cur *countersign.Confirmation) step {
	switch {
	case old.Status == countersign.StatusPending && old.DecidedAt == nil && cur.DecidedAt != nil:
		return stepDecide
	case old.Status == countersign.StatusPending && cur.Status != countersign.StatusPending:
		return stepFinalize
	}
	for i := range cur.Operations {
		if i >= len(old.Operations) {
			break
		}
		switch o, c := old.Operations[i].State, cur.Operations[i].State; {
		case o == countersign.OpWaiting && c == countersign.OpClaimed:
			return stepClaim
		case o == countersign.OpClaimed && c == countersign.OpDone:
			return stepComplete
		}
	}
	if old.Status != cur.Status {
		return stepSettle
	}
	return stepOtherUpdate
}

// faultStore is the embedded store with chosen writes failing.
type faultStore struct {
	*embedded.Store

	mu    sync.Mutex
	step  step
	mode  faultMode
	left  int
	fired []string
	// readsDown fails the next reads of a confirmation (afterDown).
	readsDown int
	// created lists every confirmation id a create was tried for, whether
	// or not it failed (an applied create whose answer was lost leaves a
	// record the agent never hears of).
	created []string
}

var _ app.Store = (*faultStore)(nil)

// fail makes the next n writes of step fail in mode.
func (f *faultStore) fail(s step, m faultMode, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step, f.mode, f.left = s, m, n
}

// take reports the mode to fail the current write of s in, and logs it.
func (f *faultStore) take(s step, what string) faultMode {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == 0 || f.step != s {
		return 0
	}
	f.left--
	f.fired = append(f.fired, fmt.Sprintf("%s %s: %s", s, what, f.mode))
	return f.mode
}

// write runs apply as mode says; restore undoes what apply changed on the
// caller's copy (its version), as an adapter that failed would not have.
func (f *faultStore) write(mode faultMode, apply func() error, restore func()) error {
	if mode == afterDown {
		f.mu.Lock()
		f.readsDown = 1
		f.mu.Unlock()
	}
	return write(mode, apply, restore)
}

func write(mode faultMode, apply func() error, restore func()) error {
	switch mode {
	case before:
		return fmt.Errorf("%w: %s", errInjected, mode)
	case after, afterConflict, afterDown:
		if err := apply(); err != nil {
			return err
		}
		restore()
		if mode == afterConflict {
			return fmt.Errorf("%w: %s: %w", errInjected, mode, store.ErrConflict)
		}
		return fmt.Errorf("%w: %s", errInjected, mode)
	}
	return apply()
}

func (f *faultStore) CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	if c.Kind == countersign.KindReview {
		// A review item is a confirmation of kind review.
		return write(f.take(stepReview, c.ID), func() error { return f.Store.CreateConfirmation(ctx, c) }, func() {})
	}
	f.expect(c.ID)
	return f.write(f.take(stepCreate, c.ID), func() error { return f.Store.CreateConfirmation(ctx, c) }, func() {})
}

func (f *faultStore) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	f.mu.Lock()
	down := f.readsDown > 0
	if down {
		f.readsDown--
		f.fired = append(f.fired, "read "+id+": fails")
	}
	f.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%w: read", errInjected)
	}
	return f.Store.GetConfirmation(ctx, id)
}

// TaskToken reads the token record, failing while reads are down (a
// read back after a lost answer).
func (f *faultStore) TaskToken(ctx context.Context, id string) (string, error) {
	f.mu.Lock()
	down := f.readsDown > 0
	if down {
		f.readsDown--
		f.fired = append(f.fired, "read token "+id+": fails")
	}
	f.mu.Unlock()
	if down {
		return "", fmt.Errorf("%w: read", errInjected)
	}
	return f.Store.TaskToken(ctx, id)
}

func (f *faultStore) UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	old, err := f.Store.GetConfirmation(ctx, c.ID)
	if err != nil {
		return f.Store.UpdateConfirmation(ctx, c)
	}
	v := c.Version
	return f.write(f.take(classify(old, c), c.ID), func() error { return f.Store.UpdateConfirmation(ctx, c) }, func() { c.Version = v })
}

// PutTaskToken is the notify task's write (the token is a record of its own).
func (f *faultStore) PutTaskToken(ctx context.Context, id, token string, ttl int64) error {
	return f.write(f.take(stepAttach, id), func() error { return f.Store.PutTaskToken(ctx, id, token, ttl) }, func() {})
}

func (f *faultStore) CreateIdempotency(ctx context.Context, r *countersign.Idempotency) error {
	return write(f.take(stepIdemClaim, r.Key), func() error { return f.Store.CreateIdempotency(ctx, r) }, func() {})
}

func (f *faultStore) UpdateIdempotency(ctx context.Context, r *countersign.Idempotency) error {
	v := r.Version
	return write(f.take(stepIdemAnswer, r.Key), func() error { return f.Store.UpdateIdempotency(ctx, r) }, func() { r.Version = v })
}

// TakeQuotaAlong carries nothing, so the pause counts the quota on its own
// through TakeQuota, where its faults are injected.
func (f *faultStore) TakeQuotaAlong(ctx context.Context, _ string, _ int, _, _ time.Time) (context.Context, *store.Along) {
	return ctx, nil
}

func (f *faultStore) TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error {
	return write(f.take(stepQuota, key), func() error { return f.Store.TakeQuota(ctx, key, limit, now, until) }, func() {})
}

// expect adds an id the flow knows of before any create (a grant's).
func (f *faultStore) expect(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.created, id) {
		f.created = append(f.created, id)
	}
}

func (f *faultStore) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

func (f *faultStore) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fired)
}

// wfCall names a workflow call that can fail.
type wfCall string

const (
	wfStart   wfCall = "Start"
	wfSuccess wfCall = "SendTaskSuccess"
	wfFailure wfCall = "SendTaskFailure"
)

// faultWorkflow is the local engine with chosen calls failing before they
// reach it, or after it acted on them.
type faultWorkflow struct {
	*local.Engine

	mu    sync.Mutex
	call  wfCall
	mode  faultMode
	left  int
	fired []string
}

var _ workflow.Workflow = (*faultWorkflow)(nil)

func (f *faultWorkflow) fail(c wfCall, m faultMode, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call, f.mode, f.left = c, m, n
}

func (f *faultWorkflow) take(c wfCall) faultMode {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == 0 || f.call != c {
		return 0
	}
	f.left--
	f.fired = append(f.fired, fmt.Sprintf("%s: %s", c, f.mode))
	return f.mode
}

// act runs fn unless the fault comes first; an "after" fault lets it act.
func (f *faultWorkflow) act(c wfCall, fn func() error) error {
	switch f.take(c) {
	case before:
		return fmt.Errorf("%w: %s not delivered", errInjected, c)
	case after, afterConflict:
		_ = fn()
		return fmt.Errorf("%w: %s delivered, answer lost", errInjected, c)
	}
	return fn()
}

func (f *faultWorkflow) Start(ctx context.Context, m workflow.Machine, name string, input []byte) (string, error) {
	var id string
	err := f.act(wfStart, func() (err error) {
		id, err = f.Engine.Start(ctx, m, name, input)
		return err
	})
	return id, err
}

// StartAlong starts on its own, through Start, so that its faults are
// injected: the engine's StartAlong would write the execution with the
// confirmation, past them.
func (f *faultWorkflow) StartAlong(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, func(context.Context) (string, error)) {
	return ctx, func(ctx context.Context) (string, error) { return f.Start(ctx, m, name, input) }
}

// StartAlongToken is StartAlong: no token goes with the confirmation, so
// the notify task attaches it, past the faults injected on the start.
func (f *faultWorkflow) StartAlongToken(ctx context.Context, m workflow.Machine, name string, input []byte) (context.Context, string, func(context.Context) (string, error)) {
	ctx, start := f.StartAlong(ctx, m, name, input)
	return ctx, "", start
}

// AnswerAlong sends on its own, through SendTaskSuccess and
// SendTaskFailure, so that their faults are injected.
func (f *faultWorkflow) AnswerAlong(ctx context.Context, token string, answer func() ([]byte, string, string, bool)) (context.Context, func(context.Context) error) {
	return ctx, func(ctx context.Context) error {
		output, errorName, cause, ok := answer()
		switch {
		case !ok:
			return nil
		case errorName == "":
			return f.SendTaskSuccess(ctx, token, output)
		}
		return f.SendTaskFailure(ctx, token, errorName, cause)
	}
}

func (f *faultWorkflow) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	return f.act(wfSuccess, func() error { return f.Engine.SendTaskSuccess(ctx, token, output) })
}

func (f *faultWorkflow) SendTaskFailure(ctx context.Context, token, name, cause string) error {
	return f.act(wfFailure, func() error { return f.Engine.SendTaskFailure(ctx, token, name, cause) })
}

// upFault is how the upstream misbehaves on a write.
type upFault string

const (
	// upTimeout: the upstream acts on the request and never answers.
	upTimeout upFault = "timeout"
	// upReset: the upstream acts on the request, then the connection is reset.
	upReset upFault = "reset"
	// up5xx: the upstream answers 503 without acting.
	up5xx upFault = "503"
	// upRefused: the connection is refused; nothing reaches the upstream.
	upRefused upFault = "refused"
)

// arrival is one request that reached the upstream.
type arrival struct {
	Method, Path, Key string
	// Applied is set when the upstream acted on it (the demo CRM ran it).
	Applied bool
}

// faultUpstream is the transport to the demo CRM, in memory, with chosen
// writes misbehaving. It records every request that reached the upstream.
type faultUpstream struct {
	crm *democrm.Server

	mu       sync.Mutex
	fault    upFault
	left     int
	arrivals []arrival
}

func (u *faultUpstream) failWrites(f upFault, n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fault, u.left = f, n
}

func (u *faultUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	// The upstream sees the request as a server parses it: header names
	// canonical (the client keeps Idempotency-Key under a lower-case key,
	// see upstream.sendOnce), and a body, if empty.
	sent := r
	r = r.Clone(r.Context())
	r.Header = http.Header{}
	for k, v := range sent.Header {
		r.Header[textproto.CanonicalMIMEHeaderKey(k)] = v
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	var f upFault
	u.mu.Lock()
	if r.Method != http.MethodGet && u.left > 0 {
		u.left--
		f = u.fault
	}
	u.mu.Unlock()
	if f == upRefused {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	a := arrival{Method: r.Method, Path: r.URL.EscapedPath(), Key: r.Header.Get("Idempotency-Key"), Applied: f != up5xx}
	u.mu.Lock()
	u.arrivals = append(u.arrivals, a)
	u.mu.Unlock()
	if f == up5xx {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"error":"try later"}`)), Request: r}, nil
	}
	rec := httptest.NewRecorder()
	u.crm.ServeHTTP(rec, r)
	switch f {
	case upTimeout:
		<-r.Context().Done()
		return nil, r.Context().Err()
	case upReset:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	resp := rec.Result()
	resp.Request = sent
	return resp, nil
}

// received returns the requests that reached the upstream with key.
func (u *faultUpstream) received(key string) []arrival {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []arrival
	for _, a := range u.arrivals {
		if a.Key == key {
			out = append(out, a)
		}
	}
	return out
}

// inbox is the approvers' channel: it keeps every event.
type inbox struct {
	mu     sync.Mutex
	events []notify.Event
}

func (i *inbox) Name() string { return "ops" }

func (i *inbox) Send(_ context.Context, ev notify.Event) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.events = append(i.events, ev)
	return nil
}

// link returns the approval link sent for id, as a request URI.
func (i *inbox) link(id string) (string, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, ev := range i.events {
		if ev.Type == notify.TypeRequested && ev.Confirmation.ID == id && len(ev.Links) > 0 {
			u, err := url.Parse(ev.Links[0].URL)
			if err != nil {
				return "", false
			}
			return u.RequestURI(), true
		}
	}
	return "", false
}

// faultStack is the local stack's graph in a synctest bubble, with its three
// fault decorators.
type faultStack struct {
	t        *testing.T
	st       *faultStore
	wf       *faultWorkflow
	up       *faultUpstream
	inbox    *inbox
	app      *app.App
	gateway  http.Handler
	approver http.Handler
}

const faultTimeouts = `"timeouts": {"call_seconds": 600, "script_seconds": 1800, "redeem_seconds": 600}`

// newFaultStack builds the graph; call it inside synctest.Test. It closes
// everything when the test ends (still inside the bubble).
func newFaultStack(t *testing.T) *faultStack {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, "config", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("settings.json", `{"public_url": "http://countersign.test", "approvers": {"console": true}, `+faultTimeouts+`}`)
	write("credentials.json", `[{"id": "chat-user", "key": "cs_test_ask", "choice": "ask_person"},
  {"id": "runner", "key": "cs_test_run", "choice": "run_without_asking"}]`)
	write("connections/crm/policy.json", `{
  "base_url": "http://crm.test",
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "PATCH",  "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"}
  ]
}`)
	cfg, err := config.Load(filepath.Join(dir, "config"), nil)
	if err != nil {
		t.Fatal(err)
	}
	es, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := links.LoadOrCreateKey(filepath.Join(dir, "signing-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := links.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultStack{t: t, st: &faultStore{Store: es}, up: &faultUpstream{crm: democrm.New()}, inbox: &inbox{}}
	client := &upstream.Client{HTTP: &http.Client{Transport: f.up}}
	f.app = app.New(cfg, app.Adapters{Store: f.st, Signer: signer, Channels: []notify.Channel{f.inbox}, Upstream: client},
		app.Options{PublicURL: "http://countersign.test"})
	if _, err := f.app.SeedCredentials(context.Background()); err != nil {
		t.Fatal(err)
	}
	defs, err := statemachines.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	engine, err := local.New(local.Options{
		DB: es.DB(), Definitions: defs, Substitutions: substitutions,
		Functions: map[string]local.LambdaFunc{
			"notify":   invoke(f.app.NotifyTask().Handle),
			"execute":  invoke(gatewayapp.ExecuteTask(f.app).Handle),
			"finalize": invoke(f.app.FinalizeTask().Handle),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.wf = &faultWorkflow{Engine: engine}
	f.app.SetWorkflow(f.wf)
	f.gateway, f.approver = gatewayapp.Gateway(f.app), f.app.Approver()
	t.Cleanup(func() {
		_ = engine.Close()
		_ = f.app.Close(context.Background())
		_ = es.Close()
	})
	return f
}

// serve sends one request to a handler in memory.
func (f *faultStack) serve(h http.Handler, method, target, key string, body []byte, headers map[string]string) result {
	f.t.Helper()
	req := httptest.NewRequest(method, "http://countersign.test"+target, bytes.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	r := result{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	_ = json.Unmarshal(r.body, &r.json)
	return r
}

// call posts a call to /v1/calls as the agent.
func (f *faultStack) call(key string, body map[string]any, headers ...string) result {
	f.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		f.t.Fatal(err)
	}
	hs := map[string]string{"Content-Type": "application/json"}
	for i := 0; i+1 < len(headers); i += 2 {
		hs[headers[i]] = headers[i+1]
	}
	return f.serve(f.gateway, http.MethodPost, "/v1/calls", key, b, hs)
}

// decide posts the approver's decision on the link, as the page's button does.
func (f *faultStack) decide(link, decision string) result {
	f.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		f.t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", decision)
	return f.serve(f.approver, http.MethodPost, u.Path, "", []byte(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
}

// pauseGatewayRuns makes a call the gateway runs itself once approved (the
// MCP card's mode), through the pipeline.
func (f *faultStack) pauseGatewayRuns(path string) (*calls.Result, error) {
	ctx := context.Background()
	cred, err := f.app.Calls.Authenticate(ctx, "cs_test_ask")
	if err != nil {
		f.t.Fatal(err)
	}
	return f.app.Calls.Do(ctx, cred, &calls.Call{Connection: "crm", Method: http.MethodDelete, Path: path, Intent: policy.IntentWrite},
		calls.Options{Pause: calls.PauseGatewayRuns})
}

// record reads a confirmation from the store underneath the faults.
func (f *faultStack) record(id string) *countersign.Confirmation {
	f.t.Helper()
	c, err := f.st.Store.GetConfirmation(context.Background(), id)
	if err != nil {
		f.t.Fatalf("read %s: %v", id, err)
	}
	return c
}

// execution reads the workflow execution of a single-call confirmation.
func (f *faultStack) execution(id string) (local.ExecutionInfo, bool) {
	info, err := f.wf.Execution(context.Background(), "local:"+string(workflow.Confirm)+":"+id)
	return info, err == nil
}

// settled is what a confirmation came to once every window passed.
type settled struct {
	ID     string
	Status countersign.Status
	// Sent counts the requests with its Idempotency-Key that reached the
	// upstream; Applied those the upstream acted on.
	Sent, Applied int
}

func (s settled) String() string {
	return fmt.Sprintf("%s, upstream got %d (applied %d)", s.Status, s.Sent, s.Applied)
}

// truth checks, after every window has passed, what the fault tests
// promise of every confirmation the stack tried to create:
//   - no operation reached the upstream twice;
//   - none reached it without a recorded approval that selected it;
//   - the status tells the truth: nothing reads pending or approved any more
//     (an approval nobody redeemed reads expired), executed and
//     partially_executed mean the upstream got the call and its answer is
//     stored, expired and rejected mean it got nothing, failed means nothing
//     was sent or the stored outcome holds the error, and redeemed
//     ("claimed, outcome unknown") is the only status an operation that may or
//     may not have run can have without an outcome;
//   - every workflow execution ended.
//
// It returns what each confirmation came to, in creation order.
func (f *faultStack) truth() []settled {
	f.t.Helper()
	now := time.Now()
	var out []settled
	for _, id := range f.st.ids() {
		c, err := f.st.Store.GetConfirmation(context.Background(), id)
		if errors.Is(err, store.ErrNotFound) {
			if n := len(f.up.received(confirm.IdempotencyKey(id, 0))); n != 0 {
				f.t.Errorf("%s: never stored, but the upstream got it %d times", id, n)
			}
			continue
		}
		if err != nil {
			f.t.Fatal(err)
		}
		st := confirm.Effective(c, now)
		s := settled{ID: id, Status: st}
		for i, op := range c.Operations {
			got := f.up.received(confirm.IdempotencyKey(id, i))
			s.Sent += len(got)
			for _, a := range got {
				if a.Applied {
					s.Applied++
				}
			}
			switch {
			case len(got) > 1:
				f.t.Errorf("%s op %d reached the upstream %d times: %+v", id, i, len(got), got)
			case len(got) == 1 && (c.DecidedAt == nil || !op.Selected || c.Status == countersign.StatusRejected):
				f.t.Errorf("%s op %d reached the upstream without an approval (decided_at %v, selected %v, status %s)", id, i, c.DecidedAt, op.Selected, c.Status)
			case len(got) == 1 && op.State == countersign.OpWaiting:
				f.t.Errorf("%s op %d reached the upstream but was never claimed", id, i)
			}
			if op.State == countersign.OpDone && op.Outcome != nil && op.Outcome.Error == "" && len(got) == 0 {
				f.t.Errorf("%s op %d has an upstream answer stored (%d) but the upstream got nothing", id, i, op.Outcome.Status)
			}
		}
		switch st {
		case countersign.StatusPending, countersign.StatusApproved:
			f.t.Errorf("%s still reads %s after every window passed (gateway_runs %v)", id, st, c.GatewayRuns)
		case countersign.StatusExecuted, countersign.StatusPartiallyExecuted:
			if s.Sent == 0 {
				f.t.Errorf("%s reads %s but the upstream got nothing", id, st)
			}
		case countersign.StatusExpired, countersign.StatusRejected:
			if s.Sent != 0 {
				f.t.Errorf("%s reads %s but the upstream got it", id, st)
			}
		case countersign.StatusFailed:
			for i, op := range c.Operations {
				if n := len(f.up.received(confirm.IdempotencyKey(id, i))); n > 0 && (op.Outcome == nil || op.Outcome.Error == "") {
					f.t.Errorf("%s reads failed, the upstream got op %d, and no error is stored", id, i)
				}
			}
		case countersign.StatusRedeemed:
			for i, op := range c.Operations {
				if op.Selected && op.State != countersign.OpClaimed && op.State != countersign.OpDone {
					f.t.Errorf("%s reads redeemed but op %d is %q", id, i, op.State)
				}
			}
		}
		if info, ok := f.execution(id); ok && info.Status == local.StatusRunning {
			f.t.Errorf("%s: its workflow is still running in %s", id, info.State)
		}
		out = append(out, s)
	}
	return out
}
