package calls_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// headerRecorder is an upstream that keeps the headers of every request, as a
// CGI-style server files them: HTTP_<NAME> with every character other than a
// letter or digit read as "_" (WSGI's environ, Rack's env, PHP's $_SERVER).
type headerRecorder struct {
	mu  sync.Mutex
	got []map[string]string
}

func (u *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	env := map[string]string{}
	for k, vs := range r.Header {
		env[cgiName(k)] = strings.Join(vs, ",")
	}
	u.mu.Lock()
	u.got = append(u.got, env)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}

func (u *headerRecorder) last(tb testing.TB) map[string]string {
	tb.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		tb.Fatal("the upstream received nothing")
	}
	return u.got[len(u.got)-1]
}

func (u *headerRecorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

func cgiName(header string) string {
	b := []byte(strings.ToUpper(header))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return "HTTP_" + string(b)
}

// headerEnv is a pipeline whose crm connection forwards X-Tenant-Id, X-Dry-Run
// and X-Cascade, in front of a headerRecorder.
type headerEnv struct {
	*env
	// up shadows env's: this upstream records headers.
	up *headerRecorder
}

func newHeaderEnv(tb testing.TB) *headerEnv {
	tb.Helper()
	up := &headerRecorder{}
	srv := httptest.NewServer(up)
	tb.Cleanup(srv.Close)
	dir := tb.TempDir()
	files := map[string]string{
		"settings.json":    `{"approvers": {"console": true}}`,
		"credentials.json": testCredentials,
		"connections/crm/policy.json": fmt.Sprintf(`{
  "base_url": %q,
  "forward_headers": ["X-Tenant-Id", "x-dry-run", "X-Cascade", "Prefer"],
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}
  ]
}`, srv.URL),
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return &headerEnv{env: loadPipeline(tb, dir, nil), up: up}
}

// agentHeaders is what an agent sends, by lower-case name as events carry it:
// the allowed headers and everything an attacker would add.
func agentHeaders(extra map[string]string) map[string]string {
	h := map[string]string{
		"x_http_method_override": "DELETE",
		"x-http_method-override": "DELETE",
		"x_forwarded_for":        "10.0.0.1",
		"x-original-url":         "/accounts/2",
		"x-tenant_id":            "production",
		"authorization":          "Bearer k_run",
		"cookie":                 "session=1",
		"x-not-listed":           "1",
		"accept":                 "application/json",
		"accept-encoding":        "br",
	}
	maps.Copy(h, extra)
	return h
}

// TestForwardHeadersByAllowList: of everything the agent sends, the upstream gets
// the connection's forward_headers and content negotiation, and nothing a CGI-style
// server reads as a method override, a client address or a header not listed.
func TestForwardHeadersByAllowList(t *testing.T) {
	e := newHeaderEnv(t)
	res, err := e.svc.Do(e.ctx, e.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/2", Intent: policy.IntentRead,
		Forward: agentHeaders(map[string]string{"x-tenant-id": "sandbox"})}, calls.Options{})
	if err != nil || res.Outcome != calls.Executed {
		t.Fatalf("Do = %+v, %v", res, err)
	}
	got := e.up.last(t)
	for _, name := range []string{"HTTP_X_HTTP_METHOD_OVERRIDE", "HTTP_X_FORWARDED_FOR", "HTTP_X_ORIGINAL_URL", "HTTP_AUTHORIZATION", "HTTP_COOKIE", "HTTP_X_NOT_LISTED"} {
		if v, ok := got[name]; ok {
			t.Errorf("the upstream read %s = %q", name, v)
		}
	}
	if got["HTTP_X_TENANT_ID"] != "sandbox" || got["HTTP_ACCEPT"] != "application/json" || got["HTTP_ACCEPT_ENCODING"] != "gzip" {
		t.Errorf("tenant %q accept %q accept-encoding %q, want sandbox, application/json and the transport's gzip",
			got["HTTP_X_TENANT_ID"], got["HTTP_ACCEPT"], got["HTTP_ACCEPT_ENCODING"])
	}
}

// TestForwardedHeadersAreBoundAndReplayed: a pending call's forwarded headers are in
// its binding and stored operation; its redemption runs with the approved headers, the
// redeeming request's (another tenant, a header the pending call did not send, another
// Accept) ignored.
func TestForwardedHeadersAreBoundAndReplayed(t *testing.T) {
	e := newHeaderEnv(t)
	cred := e.creds["chat-user"]
	res, err := e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite,
		Forward: agentHeaders(map[string]string{"x-tenant-id": "sandbox", "x-dry-run": "true"})}, calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("Do = %+v, %v", res, err)
	}
	op := res.Operation
	if want := map[string]string{"X-Tenant-Id": "sandbox", "X-Dry-Run": "true"}; !maps.Equal(op.Args.Headers, want) {
		t.Errorf("bound headers = %v, want %v", op.Args.Headers, want)
	}
	if want := map[string]string{"Accept": "application/json"}; !maps.Equal(op.Negotiation, want) {
		t.Errorf("negotiation = %v, want %v", op.Negotiation, want)
	}
	stored, err := e.svc.Confirm.Get(e.ctx, res.Confirmation.ID)
	if err != nil || !maps.Equal(stored.Operations[0].Args.Headers, op.Args.Headers) {
		t.Fatalf("stored operation headers = %v, %v", stored.Operations[0].Args.Headers, err)
	}
	// The same call with another tenant binds differently.
	other, err := e.svc.Bind(cred, &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite,
		Forward: map[string]string{"x-tenant-id": "production", "x-dry-run": "true"}})
	if err != nil || other.Binding == op.Binding {
		t.Fatalf("another tenant binds %s (err %v), the approved call %s: want different", other.Binding, err, op.Binding)
	}

	e.approve(t, res.Confirmation.ID)
	before := e.up.count()
	red, err := e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentConfirmedWrite,
		ConfirmationID: res.Confirmation.ID,
		Forward:        map[string]string{"x-tenant-id": "production", "x-cascade": "all", "accept": "text/html"}}, calls.Options{})
	if err != nil || red.Outcome != calls.Executed {
		t.Fatalf("redeem = %+v, %v", red, err)
	}
	if n := e.up.count() - before; n != 1 {
		t.Fatalf("the redemption reached the upstream %d times", n)
	}
	got := e.up.last(t)
	if got["HTTP_X_TENANT_ID"] != "sandbox" || got["HTTP_X_DRY_RUN"] != "true" || got["HTTP_ACCEPT"] != "application/json" {
		t.Errorf("the upstream got tenant %q dry-run %q accept %q, want the approved sandbox, true, application/json",
			got["HTTP_X_TENANT_ID"], got["HTTP_X_DRY_RUN"], got["HTTP_ACCEPT"])
	}
	if v, ok := got["HTTP_X_CASCADE"]; ok {
		t.Errorf("the redeeming request's X-Cascade reached the upstream: %q", v)
	}
}

// TestGatewayRunReplaysForwardedHeaders: an approval the gateway runs itself (the MCP
// card) sends the approved headers.
func TestGatewayRunReplaysForwardedHeaders(t *testing.T) {
	e := newHeaderEnv(t)
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/7", Intent: policy.IntentWrite,
		Forward: map[string]string{"x-tenant-id": "sandbox"}}, calls.Options{Pause: calls.PauseGatewayRuns})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("Do = %+v, %v", res, err)
	}
	e.approve(t, res.Confirmation.ID)
	if _, err := e.svc.Execute(e.ctx, res.Confirmation.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.up.last(t)["HTTP_X_TENANT_ID"]; got != "sandbox" {
		t.Errorf("the gateway's run sent X-Tenant-Id %q, want the approved sandbox", got)
	}
}

// TestBindingWithoutForwardedHeadersIsUnchanged: a call that forwards no bound header
// binds exactly as before headers were bound (no "headers" member), so approvals made
// before stay redeemable.
func TestBindingWithoutForwardedHeadersIsUnchanged(t *testing.T) {
	e := newHeaderEnv(t)
	op, err := e.svc.Bind(e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite,
		Forward: map[string]string{"accept": "application/json", "x-tenant-id": ""}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := canon.Binding("chat-user", "crm", "DELETE", "/contacts/{id}",
		map[string]any{"path": map[string]string{"id": "12"}, "query": map[string]any{}, "body": nil})
	if err != nil {
		t.Fatal(err)
	}
	if op.Binding != want || op.Args.Headers != nil {
		t.Errorf("binding %s (headers %v), want %s as without headers", op.Binding, op.Args.Headers, want)
	}
}

// TestForwardedHeaderValuesAreChecked: a forwarded value with a control character or
// over the limits is refused with 400 before anything is decided or sent.
func TestForwardedHeaderValuesAreChecked(t *testing.T) {
	e := newHeaderEnv(t)
	for name, h := range map[string]map[string]string{
		"control character": {"x-tenant-id": "a\x01b"},
		"too long":          {"x-tenant-id": strings.Repeat("a", 5000)},
		"too much in all":   {"x-tenant-id": strings.Repeat("a", 4000), "x-dry-run": strings.Repeat("b", 4000), "x-cascade": strings.Repeat("c", 4000), "accept": strings.Repeat("d", 4000), "accept-language": strings.Repeat("e", 4000)},
	} {
		_, err := e.svc.Do(e.ctx, e.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/2", Intent: policy.IntentRead, Forward: h}, calls.Options{})
		if fault.CodeOf(err) != fault.InvalidRequest {
			t.Errorf("%s: err = %v, want invalid_request", name, err)
		}
	}
	if n := e.up.count(); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// TestForwardedPreferLeavesRespondAsyncOut: respond-async asks countersign to wait for a
// person; a listed Prefer carries the rest of the agent's preferences, bound as sent.
func TestForwardedPreferLeavesRespondAsyncOut(t *testing.T) {
	e := newHeaderEnv(t)
	for prefer, want := range map[string]string{
		"respond-async, return=minimal":         "return=minimal",
		"return=minimal;x=1, Respond-Async;w=5": "return=minimal;x=1",
		"respond-async":                         "",
		"handling=strict":                       "handling=strict",
	} {
		op, err := e.svc.Bind(e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite,
			Forward: map[string]string{"prefer": prefer}})
		if err != nil {
			t.Fatal(err)
		}
		if got := op.Args.Headers["Prefer"]; got != want {
			t.Errorf("Prefer %q binds as %q, want %q", prefer, got, want)
		}
	}
}
