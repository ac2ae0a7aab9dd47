package httpapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/store/storetest"
	"github.com/countersign/countersign/shared/upstream"
	"github.com/countersign/countersign/shared/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Request is an API Gateway v2 request event.
type Request = events.APIGatewayV2HTTPRequest

// t0 is the time of the sample events (30/Nov/2026:12:00:00 +0000).
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// demoCredentials are infra/config/credentials.json: the sample events use cs_demo_ask.
const demoCredentials = `[
  {"id": "chat-user", "key": "cs_demo_ask",    "choice": "ask_person"},
  {"id": "agent",     "key": "cs_demo_agent",  "choice": "ask_agent"},
  {"id": "runner",    "key": "cs_demo_run",    "choice": "run_without_asking"},
  {"id": "ops-key",   "key": "cs_demo_refuse", "origin": "operator"},
  {"id": "reader",    "key": "cs_demo_ro",     "choice": "run_without_asking", "read_only": true},
  {"id": "root",      "key": "cs_demo_op",     "role": "operator"}
]`

// fakeWorkflow records starts and task answers.
type fakeWorkflow struct {
	mu     sync.Mutex
	starts []string
	tells  []string
}

var _ workflow.Workflow = (*fakeWorkflow)(nil)

func (f *fakeWorkflow) Start(_ context.Context, m workflow.Machine, name string, _ []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, string(m)+":"+name)
	return "exec:" + name, nil
}

func (f *fakeWorkflow) SendTaskSuccess(_ context.Context, token string, output []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tells = append(f.tells, "success "+token+" "+string(output))
	return nil
}

func (f *fakeWorkflow) SendTaskFailure(_ context.Context, token, name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tells = append(f.tells, "failure "+token+" "+name)
	return nil
}

func (f *fakeWorkflow) told() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tells...)
}

// crm is the test upstream: GET /contacts/12 answers a contact.
type crm struct {
	mu    sync.Mutex
	calls []string
}

func (u *crm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.calls = append(u.calls, r.Method+" "+r.URL.RequestURI())
	u.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/contacts/12":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Crm-Version", "7")
		_, _ = io.WriteString(w, `{"id": "12", "name": "Ada Lovelace", "score": 1.50}`)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (u *crm) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.calls...)
}

// env is a gateway and an approver on a loaded config directory, a real
// embedded store, a fake workflow, a fixed clock and a test upstream.
type env struct {
	ctx      context.Context
	clock    *storetest.Clock
	st       *embedded.Store
	wf       *fakeWorkflow
	svc      *confirm.Service
	cfg      *config.Config
	up       *crm
	upURL    string
	signer   *links.Signer
	gateway  *httpapi.Gateway
	approver *httpapi.Approver
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	up := &crm{}
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
	write("settings.json", `{
  "workspace": {"name": "Test Co", "accent_color": "#0f766e"},
  "public_url": "https://gw.example.test",
  "approvers": {"console": true, "webhooks": []}
}`)
	write("credentials.json", demoCredentials)
	write("connections/crm/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "operation_id": "deleteContact"}
  ]
}`, srv.URL))
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatalf("load config: %v", err)
	}

	clock := storetest.NewClock(t0)
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "db"), &embedded.Options{Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	for _, c := range cfg.Credentials {
		if err := st.PutCredential(context.Background(), c); err != nil {
			tb.Fatal(err)
		}
	}
	signer, err := links.NewSigner(links.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		tb.Fatal(err)
	}
	wf := &fakeWorkflow{}
	var mu sync.Mutex
	n := 0
	svc := &confirm.Service{Store: st, Workflow: wf, Now: clock.Now, Credentials: st, NewID: func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("cf_test%d", n)
	}}
	pipeline := (&calls.Service{Store: st, Confirm: svc, Upstream: &upstream.Client{}, Now: clock.Now}).WithConfig(cfg)
	return &env{
		ctx: context.Background(), clock: clock, st: st, wf: wf, svc: svc, cfg: cfg, up: up, upURL: srv.URL, signer: signer,
		gateway:  &httpapi.Gateway{Calls: pipeline, PollInterval: time.Millisecond},
		approver: &httpapi.Approver{Calls: pipeline, Signer: signer, Now: clock.Now},
	}
}

// loadEvent reads a sample event from events/.
func loadEvent(tb testing.TB, name string) Request {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		tb.Fatal(err)
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return req
}

// response is an API Gateway v2 response as Lambda returns it, with the
// body decoded when it is JSON.
type response struct {
	events.APIGatewayV2HTTPResponse
	json map[string]any
}

// invoke runs h on req exactly as the Lambda runtime does, through the
// edge adapter: JSON in, JSON out.
func invoke(tb testing.TB, h http.Handler, req Request) response {
	tb.Helper()
	payload, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return invokeRaw(tb, h, payload)
}

func invokeRaw(tb testing.TB, h http.Handler, payload []byte) response {
	tb.Helper()
	out, err := lambda.NewHandler(httpapi.Lambda(h)).Invoke(context.Background(), payload)
	if err != nil {
		tb.Fatalf("invoke: %v", err)
	}
	var r response
	if err := json.Unmarshal(out, &r.APIGatewayV2HTTPResponse); err != nil {
		tb.Fatalf("response %s: %v", out, err)
	}
	if r.Headers["Content-Type"] == "application/json" {
		if err := json.Unmarshal([]byte(r.Body), &r.json); err != nil {
			tb.Fatalf("JSON body %q: %v", r.Body, err)
		}
	}
	return r
}

// expect fails unless r has the status and, when given, the code.
func expect(tb testing.TB, r response, status int, code string) {
	tb.Helper()
	if r.StatusCode != status {
		tb.Fatalf("status %d, want %d; body %s", r.StatusCode, status, r.Body)
	}
	if code != "" && r.json["code"] != code {
		tb.Fatalf("code %v, want %q; body %s", r.json["code"], code, r.Body)
	}
}

// get walks a dotted path through a decoded JSON value.
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (e *env) stored(tb testing.TB, id string) *countersign.Confirmation {
	tb.Helper()
	c, err := e.st.GetConfirmation(e.ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
