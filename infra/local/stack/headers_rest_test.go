package stack

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// cgiUpstream reads requests as a CGI-style server does (WSGI's environ, Rack's env,
// PHP's $_SERVER): each header becomes HTTP_<NAME>, upper case, every character other
// than a letter or digit read as "_", so X_HTTP_METHOD_OVERRIDE, X-Http_method-Override
// and X-HTTP-Method-Override are one variable. In front of the demo CRM it applies a
// method override from that variable, as the middleware Flask's documentation shows
// does, and keeps each request's environment.
type cgiUpstream struct {
	mu   sync.Mutex
	seen []cgiRequest
}

type cgiRequest struct {
	method, path string
	env          map[string]string
}

func cgiVar(header string) string {
	b := []byte(strings.ToUpper(header))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return "HTTP_" + string(b)
}

// gate is harnessOptions.gate: it sees each upstream request before the CRM.
func (u *cgiUpstream) gate(r *http.Request) {
	env := map[string]string{}
	for k, vs := range r.Header {
		// WSGI servers join repeated headers with commas; either way one variable.
		if was, ok := env[cgiVar(k)]; ok {
			env[cgiVar(k)] = was + "," + strings.Join(vs, ",")
			continue
		}
		env[cgiVar(k)] = strings.Join(vs, ",")
	}
	if m := env["HTTP_X_HTTP_METHOD_OVERRIDE"]; m != "" {
		r.Method = strings.ToUpper(m)
	}
	u.mu.Lock()
	u.seen = append(u.seen, cgiRequest{method: r.Method, path: r.URL.EscapedPath(), env: env})
	u.mu.Unlock()
}

// requests returns the requests seen so far.
func (u *cgiUpstream) requests() []cgiRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]cgiRequest(nil), u.seen...)
}

// last returns the last request seen for method and path.
func (u *cgiUpstream) last(tb testing.TB, method, path string) cgiRequest {
	tb.Helper()
	reqs := u.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].method == method && reqs[i].path == path {
			return reqs[i]
		}
	}
	tb.Fatalf("the upstream received no %s %s (got %+v)", method, path, reqs)
	return cgiRequest{}
}

// tenantedPolicy is a connection that forwards the tenant, dry-run and cascade headers.
const tenantedPolicy = `{
  "base_url": "%UPSTREAM%",
  "forward_headers": ["X-Tenant-Id", "X-Dry-Run", "X-Cascade"],
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "GET",    "path": "/accounts/{id}"},
    {"method": "DELETE", "path": "/accounts/{id}", "confirm": "never"}
  ]
}`

func newHeadersHarness(t *testing.T) (*harness, *cgiUpstream) {
	up := &cgiUpstream{}
	h := newHarness(t, harnessOptions{gate: up.gate, files: map[string]string{"connections/tenanted/policy.json": tenantedPolicy}})
	return h, up
}

// doLines sends a request whose headers may repeat a name on several lines.
func (h *harness) doLines(method, path, key string, lines [][2]string) result {
	h.t.Helper()
	req, err := http.NewRequest(method, h.stack.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for _, l := range lines {
		req.Header[l[0]] = append(req.Header[l[0]], l[1]) // as written, not canonicalised
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(b, &r.json)
	}
	return r
}

// overrides are spellings of a method override, each with a client address claim,
// that a CGI-style server reads as X-HTTP-Method-Override and X-Forwarded-For.
var overrides = [][][2]string{
	{{"X_HTTP_METHOD_OVERRIDE", "DELETE"}, {"X_forwarded_for", "10.0.0.1"}},
	{{"X-Http_method-Override", "DELETE"}, {"X_Forwarded-For", "10.0.0.1"}},
	{{"x_http_method_override", "DELETE"}, {"X-Forwarded_For", "10.0.0.1"}},
}

// TestHeadersMethodOverrideNeverReachesTheUpstream: a GET carrying a method override
// spelled with "_" runs as a GET for a run_without_asking key, an ask_person key and
// the read-only key: the CGI-style upstream, which honours overrides, never sees one,
// and nothing is deleted.
func TestHeadersMethodOverrideNeverReachesTheUpstream(t *testing.T) {
	h, up := newHeadersHarness(t)
	for _, tt := range []struct{ key, path string }{
		{"cs_test_run", "/accounts/2"}, // a never-tier DELETE
		{"cs_test_ask", "/contacts/3"}, // a confirm-tier DELETE, no approval
		{"cs_test_ro", "/contacts/4"},  // a read-only key
		{"cs_test_run", "/contacts/5"},
	} {
		for _, conn := range []string{"crm", "tenanted"} {
			for _, lines := range overrides {
				r := h.doLines(http.MethodGet, "/v1/rest/"+conn+tt.path, tt.key, lines)
				if r.status != http.StatusOK {
					t.Errorf("%s GET %s with %s: %d %s, want 200 (a read)", tt.key, tt.path, lines[0][0], r.status, r.body)
				}
			}
		}
	}
	for _, r := range up.requests() {
		if r.method != http.MethodGet {
			t.Errorf("the upstream ran %s %s", r.method, r.path)
		}
		for _, v := range []string{"HTTP_X_HTTP_METHOD_OVERRIDE", "HTTP_X_FORWARDED_FOR"} {
			if got, ok := r.env[v]; ok {
				t.Errorf("the upstream read %s = %q on %s %s", v, got, r.method, r.path)
			}
		}
	}
	for _, p := range []string{"/accounts/2", "/contacts/3", "/contacts/4", "/contacts/5"} {
		if n := h.upstream.Count(http.MethodDelete, p); n != 0 {
			t.Errorf("DELETE %s reached the CRM %d times", p, n)
		}
	}
	if _, ok := h.upstream.Contact(3); !ok {
		t.Error("contact 3 was deleted")
	}
}

// TestHeadersNotListedNeverReachTheUpstream: only content negotiation and a
// connection's forward_headers reach the upstream; a listed name spelled with "_" is
// not the listed header and does not reach it either.
func TestHeadersNotListedNeverReachTheUpstream(t *testing.T) {
	h, up := newHeadersHarness(t)
	lines := [][2]string{
		{"X-Tenant-Id", "sandbox"}, {"X_Tenant_Id", "production"}, {"X-Tenant_id", "production"},
		{"X-Not-Listed", "1"}, {"X-Original-URL", "/accounts/2"}, {"Cookie", "session=1"},
		{"Accept", "application/json"}, {"Accept-Language", "de-CH"},
	}
	expect(t, h.doLines(http.MethodGet, "/v1/rest/crm/contacts/6", "cs_test_run", lines), http.StatusOK, "")
	expect(t, h.doLines(http.MethodGet, "/v1/rest/tenanted/contacts/6", "cs_test_run", lines), http.StatusOK, "")
	crm, tenanted := up.requests()[0].env, up.requests()[1].env
	for _, env := range []map[string]string{crm, tenanted} {
		for _, v := range []string{"HTTP_X_NOT_LISTED", "HTTP_X_ORIGINAL_URL", "HTTP_COOKIE", "HTTP_AUTHORIZATION"} {
			if got, ok := env[v]; ok {
				t.Errorf("the upstream read %s = %q", v, got)
			}
		}
		if env["HTTP_ACCEPT"] != "application/json" || env["HTTP_ACCEPT_LANGUAGE"] != "de-CH" {
			t.Errorf("content negotiation did not arrive: %v", env)
		}
	}
	if got, ok := crm["HTTP_X_TENANT_ID"]; ok {
		t.Errorf("crm forwards no X-Tenant-Id, the upstream read %q", got)
	}
	if got := tenanted["HTTP_X_TENANT_ID"]; got != "sandbox" {
		t.Errorf("the upstream read X-Tenant-Id %q, want only the listed spelling's sandbox", got)
	}
}

// TestHeadersBoundShownAndReplayed: a pending DELETE made for tenant sandbox as a dry
// run shows its headers to the person (page and webhook), and its redemption with
// another tenant and a cascade runs with the approved headers only. Repeated lines of a
// header are one value, shown as the upstream receives it.
func TestHeadersBoundShownAndReplayed(t *testing.T) {
	h, up := newHeadersHarness(t)
	r := h.doLines(http.MethodDelete, "/v1/rest/tenanted/contacts/12", "cs_test_ask",
		[][2]string{{"Prefer", "respond-async"}, {"X-Tenant-Id", "sandbox"}, {"X-Dry-Run", "true"}})
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")

	// The webhook's operation carries args.headers.
	link := h.approvalLink(id)
	ev := h.webhook.waitEvent(t, "confirmation.requested", id)
	var args struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(ev.Confirmation.Operations[0].Args, &args); err != nil ||
		args.Headers["X-Tenant-Id"] != "sandbox" || args.Headers["X-Dry-Run"] != "true" || len(args.Headers) != 2 {
		t.Errorf("webhook args = %s, want headers X-Tenant-Id sandbox and X-Dry-Run true", ev.Confirmation.Operations[0].Args)
	}
	// The page shows them.
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	shown := visibleText(page.body)
	for _, want := range []string{`"X-Tenant-Id": "sandbox"`, `"X-Dry-Run": "true"`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the approval page does not show %s:\n%s", want, shown)
		}
	}
	expect(t, h.press(page, "approve"), http.StatusOK, "")

	red := h.doLines(http.MethodDelete, "/v1/rest/tenanted/contacts/12", "cs_test_ask",
		[][2]string{{"Countersign-Confirmation", id}, {"X-Tenant-Id", "production"}, {"X-Cascade", "all"}})
	expect(t, red, http.StatusNoContent, "")
	got := up.last(t, http.MethodDelete, "/contacts/12")
	if got.env["HTTP_X_TENANT_ID"] != "sandbox" || got.env["HTTP_X_DRY_RUN"] != "true" {
		t.Errorf("the upstream ran the redemption with tenant %q dry-run %q, want the approved sandbox and true",
			got.env["HTTP_X_TENANT_ID"], got.env["HTTP_X_DRY_RUN"])
	}
	if v, ok := got.env["HTTP_X_CASCADE"]; ok {
		t.Errorf("the redeeming request's X-Cascade reached the upstream: %q", v)
	}
	if n := h.upstream.Count(http.MethodDelete, "/contacts/12"); n != 1 {
		t.Errorf("DELETE /contacts/12 reached the CRM %d times, want once", n)
	}

	// Two lines of X-Tenant-Id: one value, shown and sent as one line.
	r = h.doLines(http.MethodDelete, "/v1/rest/tenanted/contacts/13", "cs_test_ask",
		[][2]string{{"Prefer", "respond-async"}, {"X-Tenant-Id", "sandbox"}, {"X-Tenant-Id", "production"}})
	expect(t, r, http.StatusAccepted, "")
	id = r.str("confirmation.id")
	page = h.do(http.MethodGet, h.approvalLink(id), "", nil, nil)
	if shown := visibleText(page.body); !strings.Contains(shown, `"X-Tenant-Id": "sandbox,production"`) {
		t.Errorf("the page does not show the joined value:\n%s", shown)
	}
	expect(t, h.press(page, "approve"), http.StatusOK, "")
	expect(t, h.doLines(http.MethodDelete, "/v1/rest/tenanted/contacts/13", "cs_test_ask", [][2]string{{"Countersign-Confirmation", id}}), http.StatusNoContent, "")
	if got := up.last(t, http.MethodDelete, "/contacts/13").env["HTTP_X_TENANT_ID"]; got != "sandbox,production" {
		t.Errorf("the upstream read X-Tenant-Id %q, want the one line shown", got)
	}
}

var tagRe = regexp.MustCompile(`<[^>]*>`)

// visibleText is a page's text as a person reads it: tags dropped, entities decoded.
func visibleText(page []byte) string {
	return html.UnescapeString(tagRe.ReplaceAllString(string(page), ""))
}

// TestHeadersPolicyLoadErrors: a forward_headers name that could be read as another
// header, or that is never forwarded, stops the stack from starting, naming the file,
// the JSON path and why.
func TestHeadersPolicyLoadErrors(t *testing.T) {
	for _, tt := range []struct{ name, why string }{
		{"X_HTTP_METHOD_OVERRIDE", `has "_"`},
		{"X-Tenant.Id", `has "."`},
		{"Connection", "hop-by-hop"},
		{"Host", "base_url decides the host"},
		{"Authorization", "credential"},
		{"Countersign-Confirmation", "Countersign-*"},
		{"X-Forwarded-For", "X-Forwarded-*"},
		{"X-HTTP-Method-Override", "method override"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, content := range map[string]string{
				"settings.json":    `{"approvers": {"console": true}}`,
				"credentials.json": `[{"id": "runner", "key": "cs_test_run", "choice": "run_without_asking"}]`,
				"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:1", "forward_headers": ["X-Tenant-Id", "` + tt.name + `"],
  "endpoints": [{"method": "GET", "path": "/contacts/{id}"}]}`,
			} {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Start(context.Background(), Options{ConfigDir: dir, Addr: "127.0.0.1:0", DataDir: t.TempDir(), Stdout: io.Discard})
			if err == nil {
				_ = s.Close(context.Background())
				t.Fatalf("the stack started with forward_headers %q", tt.name)
			}
			file := filepath.Join(dir, "connections", "crm", "policy.json")
			for _, want := range []string{file, "forward_headers[1]", tt.why} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestHeadersIdempotencyKeyCoversForwardedHeaders: the same Idempotency-Key with another
// tenant is another call (422), not the first tenant's answer replayed; with the same
// tenant it is the replay.
func TestHeadersIdempotencyKeyCoversForwardedHeaders(t *testing.T) {
	h, _ := newHeadersHarness(t)
	del := func(tenant string) result {
		return h.doLines(http.MethodDelete, "/v1/rest/tenanted/contacts/14", "cs_test_run",
			[][2]string{{"Idempotency-Key", "k-14"}, {"X-Tenant-Id", tenant}})
	}
	expect(t, del("sandbox"), http.StatusNoContent, "")
	expect(t, del("production"), http.StatusUnprocessableEntity, "idempotency_key_reused")
	if r := del("sandbox"); r.status != http.StatusNoContent || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same call again: %d, Idempotent-Replayed %q; want the replayed 204", r.status, r.header.Get("Idempotent-Replayed"))
	}
	if n := h.upstream.Count(http.MethodDelete, "/contacts/14"); n != 1 {
		t.Errorf("DELETE /contacts/14 reached the CRM %d times, want once", n)
	}
}
