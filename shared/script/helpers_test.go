package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/script"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/workflow"
)

// nopWorkflow accepts every start and answer.
type nopWorkflow struct{}

func (nopWorkflow) Start(context.Context, workflow.Machine, string, []byte) (string, error) {
	return "exec", nil
}
func (nopWorkflow) SendTaskSuccess(context.Context, string, []byte) error         { return nil }
func (nopWorkflow) SendTaskFailure(context.Context, string, string, string) error { return nil }

// upstream records every request and answers like a small CRM: GET
// /contacts/{id} a contact, DELETE 204, POST 201, GET /big a large body.
type upstream struct {
	mu   sync.Mutex
	seen []string
	keys map[string]string
	// hold, when set, blocks requests to this path until it is closed.
	hold     string
	holdC    chan struct{}
	arrived  chan struct{}
	bigBytes int
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	line := r.Method + " " + r.URL.EscapedPath()
	u.mu.Lock()
	u.seen = append(u.seen, line)
	if u.keys == nil {
		u.keys = map[string]string{}
	}
	u.keys[line] = r.Header.Get("Idempotency-Key")
	hold, holdC, arrived := u.hold, u.holdC, u.arrived
	u.mu.Unlock()
	if hold != "" && line == hold {
		if arrived != nil {
			close(arrived)
		}
		<-holdC
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"created":true}`)
	case r.URL.Path == "/big":
		n := u.bigBytes
		if n == 0 {
			n = 300 << 10
		}
		_, _ = fmt.Fprintf(w, `{"blob":%q}`, strings.Repeat("x", n))
	default:
		_, _ = fmt.Fprintf(w, `{"path":%q,"name":"Ada"}`, r.URL.Path)
	}
}

// count is how many requests the upstream saw for "METHOD /path".
func (u *upstream) count(line string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, s := range u.seen {
		if s == line {
			n++
		}
	}
	return n
}

func (u *upstream) total() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

// events records approver events.
type events struct {
	mu  sync.Mutex
	evs []notify.Event
}

func (e *events) Notify(ev notify.Event) { _ = e.NotifyWait(context.Background(), ev) }
func (e *events) NotifyWait(_ context.Context, ev notify.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

func (e *events) count(typ, id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.evs {
		if ev.Type == typ && ev.Confirmation.ID == id {
			n++
		}
	}
	return n
}

const testCredentials = `[
  {"id": "chat-user", "key": "k_ask",    "choice": "ask_person"},
  {"id": "agent",     "key": "k_agent",  "choice": "ask_agent"},
  {"id": "runner",    "key": "k_run",    "choice": "run_without_asking"},
  {"id": "ops-key",   "key": "k_refuse", "origin": "operator"},
  {"id": "reader",    "key": "k_ro",     "choice": "run_without_asking", "read_only": true}
]`

// env is a script service over the real pipeline, an embedded store, a
// no-op workflow and a recording upstream.
type env struct {
	ctx    context.Context
	st     *embedded.Store
	up     *upstream
	calls  *calls.Service
	svc    *script.Service
	events *events
	creds  map[string]*countersign.Credential
}

func newEnv(tb testing.TB, limits script.Limits) *env {
	tb.Helper()
	up := &upstream{}
	srv := httptest.NewServer(up)
	tb.Cleanup(srv.Close)
	dir := tb.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write("settings.json", `{"approvers": {"console": true}}`)
	write("credentials.json", testCredentials)
	write("connections/crm/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET",    "path": "/contacts"},
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "POST",   "path": "/contacts"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "POST",   "path": "/payments", "confirm": true,
     "escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}]},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"},
    {"method": "GET",    "path": "/big"}
  ]
}`, srv.URL))
	write("connections/vault/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [{"method": "DELETE", "path": "/items/{id}", "confirm": true}],
  "approval": {"out_of_band_only": true}
}`, srv.URL))
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	// Benchmarks make many thousands of calls a minute with one credential.
	cfg.Settings.Limits.CallsPerMinute = 1_000_000
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	e := &env{ctx: context.Background(), st: st, up: up, events: &events{}, creds: map[string]*countersign.Credential{}}
	for _, c := range cfg.Credentials {
		if err := st.PutCredential(e.ctx, c); err != nil {
			tb.Fatal(err)
		}
		c := c
		e.creds[c.ID] = &c
	}
	conf := &confirm.Service{Store: st, Workflow: nopWorkflow{}, Events: e.events, SyncEvents: true}
	e.calls = (&calls.Service{Store: st, Confirm: conf}).WithConfig(cfg)
	// The limits are the configuration's, as a deployment's are.
	cfg.Settings.Scripts = config.Scripts{TimeLimitMS: int(limits.Time / time.Millisecond), MaxCalls: limits.Calls,
		MaxScriptBytes: limits.ScriptBytes, MaxResultBytes: limits.ResultBytes, MemoryMiB: int(limits.Memory >> 20)}
	e.svc = &script.Service{Calls: e.calls, Store: st}
	return e
}

// run runs a script for a credential.
func (e *env) run(tb testing.TB, cred, src string) (*script.Result, error) {
	tb.Helper()
	return e.svc.Run(e.ctx, e.creds[cred], script.Request{Source: src})
}

// mustRun runs a script that must not fail.
func (e *env) mustRun(tb testing.TB, cred, src string) *script.Result {
	tb.Helper()
	res, err := e.run(tb, cred, src)
	if err != nil {
		tb.Fatalf("run: %v (%+v)", err, err)
	}
	return res
}

// failure runs a script that must fail with code and returns the error.
func (e *env) failure(tb testing.TB, cred, src string, code fault.Code) *script.Error {
	tb.Helper()
	res, err := e.run(tb, cred, src)
	var se *script.Error
	if !errors.As(err, &se) {
		tb.Fatalf("run: %+v, %v; want a script error %s", res, err, code)
	}
	if se.Code != code {
		tb.Fatalf("code %s (%s), want %s", se.Code, se.Reason, code)
	}
	return se
}

// decide approves (keep; nil: all) or rejects a batch as an approver would.
func (e *env) decide(tb testing.TB, id string, approve bool, keep []int) {
	tb.Helper()
	if _, _, err := e.calls.Confirm.AttachToken(e.ctx, id, "tok-"+id); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.calls.Answer(e.ctx, id, confirm.Answer{Approve: approve, Approver: "ops", Keep: keep}); err != nil {
		tb.Fatal(err)
	}
}

// states lists the calls' states.
func states(cs []script.Call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.State))
	}
	return out
}

// value decodes JSON into any.
func value(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("%s: %v", b, err)
	}
	return v
}

// quick are small limits with a time limit ample even under the race
// detector on a busy machine; timed has a short time limit, for the tests
// of the time limit.
var (
	quick = script.Limits{Time: 20 * time.Second, Calls: 20, ScriptBytes: 64 << 10, ResultBytes: 64 << 10, Memory: 64 << 20}
	timed = script.Limits{Time: time.Second, Calls: 20, ScriptBytes: 64 << 10, ResultBytes: 64 << 10, Memory: 64 << 20}
)
