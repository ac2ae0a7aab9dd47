package calls_test

import (
	"context"
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
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/store/storetest"
	"github.com/countersign/countersign/shared/workflow"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// nopWorkflow accepts every start and answer.
type nopWorkflow struct{}

var _ workflow.Workflow = nopWorkflow{}

func (nopWorkflow) Start(context.Context, workflow.Machine, string, []byte) (string, error) {
	return "exec", nil
}
func (nopWorkflow) SendTaskSuccess(context.Context, string, []byte) error         { return nil }
func (nopWorkflow) SendTaskFailure(context.Context, string, string, string) error { return nil }

// received is one request the recording upstream saw.
type received struct {
	Method, URI, ContentType, Key string
	Body                          []byte
}

// recorder is an upstream that records every request and answers 200 JSON
// (body, when set, instead of {"ok":true}).
type recorder struct {
	mu   sync.Mutex
	got  []received
	body string
}

func (u *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, received{Method: r.Method, URI: r.URL.RequestURI(), ContentType: r.Header.Get("Content-Type"),
		Key: r.Header.Get("Idempotency-Key"), Body: b})
	answer := u.body
	u.mu.Unlock()
	if answer == "" {
		answer = `{"ok":true}`
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/big") {
		answer = bigAnswer
	}
	_, _ = io.WriteString(w, answer)
}

// bigAnswer is a 1 MB JSON answer, over a store item's 400 KB.
var bigAnswer = `{"rows":"` + strings.Repeat("r", 1<<20) + `"}`

func (u *recorder) seen() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

// testStore is what the tests need of a store adapter.
type testStore interface {
	calls.Store
	confirm.Store
	PutCredential(ctx context.Context, c countersign.Credential) error
}

// env is a pipeline over a real store (embedded unless given), a no-op
// workflow, a fixed clock and a recording upstream.
type env struct {
	ctx   context.Context
	clock *storetest.Clock
	st    testStore
	up    *recorder
	svc   *calls.Service
	creds map[string]*countersign.Credential
}

const testCredentials = `[
  {"id": "chat-user", "key": "k_ask",    "choice": "ask_person"},
  {"id": "agent",     "key": "k_agent",  "choice": "ask_agent"},
  {"id": "runner",    "key": "k_run",    "choice": "run_without_asking"},
  {"id": "ops-key",   "key": "k_refuse", "origin": "operator"}
]`

func newEnv(tb testing.TB) *env { return newEnvWith(tb, nil) }

// newEnvWith builds the env over the store open returns (nil: embedded).
func newEnvWith(tb testing.TB, open func(now func() time.Time) testStore) *env {
	tb.Helper()
	up := &recorder{}
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
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "POST",   "path": "/notes", "confirm": true},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"}
  ]
}`, srv.URL))
	e := loadPipeline(tb, dir, open)
	e.up = up
	return e
}

// loadPipeline loads the configuration directory dir and builds the
// pipeline over the store open returns (nil: embedded), with the
// configuration's credentials stored, a no-op workflow and a fixed clock.
func loadPipeline(tb testing.TB, dir string, open func(now func() time.Time) testStore) *env {
	tb.Helper()
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	clock := storetest.NewClock(t0)
	var st testStore
	if open != nil {
		st = open(clock.Now)
	} else {
		es, err := embedded.Open(filepath.Join(tb.TempDir(), "db"), &embedded.Options{Now: clock.Now})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = es.Close() })
		st = es
	}
	e := &env{ctx: context.Background(), clock: clock, st: st, creds: map[string]*countersign.Credential{}}
	for _, c := range cfg.Credentials {
		if err := st.PutCredential(e.ctx, c); err != nil {
			tb.Fatal(err)
		}
		e.creds[c.ID] = &c
	}
	conf := &confirm.Service{Store: st, Workflow: nopWorkflow{}, Now: clock.Now, Credentials: st}
	e.svc = (&calls.Service{Store: st, Confirm: conf, Now: clock.Now}).WithConfig(cfg)
	return e
}

// approve attaches a task token and approves the confirmation, as the
// notify task and an approver would.
func (e *env) approve(tb testing.TB, id string) {
	tb.Helper()
	if _, _, err := e.svc.Confirm.AttachToken(e.ctx, id, "tok-"+id); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.svc.Answer(e.ctx, id, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
		tb.Fatal(err)
	}
}
