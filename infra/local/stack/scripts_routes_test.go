package stack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/app/gatewayapp"
)

// TestScriptsFunctionRoutes: the scripts function serves code mode's
// routes alone (httpapi.Gateway.CodeMode), so that it links no other
// route's handler. For the same requests to POST /v1/scripts and /mcp
// (answered, refused, malformed) it answers what the agents' full surface
// answers, status, headers and body; every other route, including the
// gateway's own (/v1/calls, /v1/confirmations/..., /healthz) and those of
// the approve and operator functions and the OAuth server, is the 404 the
// full surface answers for a route it does not know, with nothing run.
func TestScriptsFunctionRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	fn := lambda.NewHandler(gatewayapp.Function(h.stack.app).Handle)
	full := lambdaHandler(gatewayapp.Gateway(h.stack.app))
	invoke := func(hd lambda.Handler, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		t.Helper()
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := hd.Invoke(t.Context(), payload)
		if err != nil {
			t.Fatalf("invoke %s %s: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	event := func(method, path, key, body string) events.APIGatewayV2HTTPRequest {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		ev, err := eventOf(r)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	script := func(src string) string {
		b, _ := json.Marshal(map[string]string{"script": src})
		return string(b)
	}
	raw, err := os.ReadFile("../../../events/mcp-tools-list.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.ReplaceAll(string(raw), "cs_demo_ask", "cs_test_ask"))
	var toolsList events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &toolsList); err != nil {
		t.Fatal(err)
	}
	noKey := toolsList
	noKey.Headers = map[string]string{}
	for k, v := range toolsList.Headers {
		if k != "authorization" {
			noKey.Headers[k] = v
		}
	}

	same := []struct {
		name   string
		ev     events.APIGatewayV2HTTPRequest
		status int
	}{
		{"a script that calls nothing", event(http.MethodPost, "/v1/scripts", "cs_test_run", script("({sum: 1 + 2})")), http.StatusOK},
		{"a script that reads", event(http.MethodPost, "/v1/scripts", "cs_test_run", script("call('crm', 'GET', '/contacts/1').body.name")), http.StatusOK},
		{"a script that does not parse", event(http.MethodPost, "/v1/scripts", "cs_test_run", script("({")), http.StatusUnprocessableEntity},
		{"a body that is not JSON", event(http.MethodPost, "/v1/scripts", "cs_test_run", "{"), http.StatusBadRequest},
		{"no key", event(http.MethodPost, "/v1/scripts", "", script("1")), http.StatusUnauthorized},
		{"an unknown key", event(http.MethodPost, "/v1/scripts", "cs_nope", script("1")), http.StatusUnauthorized},
		{"GET /v1/scripts", event(http.MethodGet, "/v1/scripts", "cs_test_run", ""), http.StatusMethodNotAllowed},
		{"a body over 1 MiB", event(http.MethodPost, "/v1/scripts", "cs_test_run", strings.Repeat(" ", 1<<20+1)), http.StatusRequestEntityTooLarge},
		{"MCP tools/list", toolsList, http.StatusOK},
		{"MCP without a key", noKey, http.StatusUnauthorized},
		{"MCP GET", event(http.MethodGet, "/mcp", "cs_test_ask", ""), http.StatusMethodNotAllowed},
	}
	for _, tt := range same {
		t.Run(tt.name, func(t *testing.T) {
			want, got := invoke(full, tt.ev), invoke(fn, tt.ev)
			if want.StatusCode != tt.status {
				t.Fatalf("the full surface answered %d %s, want %d", want.StatusCode, want.Body, tt.status)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the scripts function's answer differs from the full surface's (-full +scripts):\n%s", diff)
			}
		})
	}

	// The full surface's answer to a route it does not know, but for the
	// route named in its reason.
	notFound := func(method, path string) events.APIGatewayV2HTTPResponse {
		resp := invoke(full, event(method, "/no/such/route", "cs_test_run", ""))
		resp.Body = strings.Replace(resp.Body, "/no/such/route", path, 1)
		return resp
	}
	calls := h.upstream.Count("DELETE", "/contacts/3")
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/calls", `{"connection": "crm", "method": "DELETE", "path": "/contacts/3"}`},
		{http.MethodDelete, "/v1/rest/crm/contacts/3", ""},
		{http.MethodGet, "/v1/confirmations/cf_x", ""},
		{http.MethodGet, "/v1/grants", ""},
		{http.MethodGet, "/v1/credentials/me", ""},
		{http.MethodGet, "/healthz", ""},
		{http.MethodGet, "/approve/cf_x", ""},
		{http.MethodGet, "/account/passkeys", ""},
		{http.MethodGet, "/operator", ""},
		{http.MethodGet, "/v1/operator/credentials", ""},
		{http.MethodGet, "/.well-known/oauth-authorization-server", ""},
		{http.MethodGet, "/oauth/authorize", ""},
		{http.MethodPost, "/v1/scripts/x", script("1")},
		{http.MethodPost, "/mcp/x", ""},
	} {
		got := invoke(fn, event(r.method, r.path, "cs_test_run", r.body))
		if diff := cmp.Diff(notFound(r.method, r.path), got); diff != "" || got.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s on the scripts function: %d %s, want the full surface's 404 (-want +got):\n%s", r.method, r.path, got.StatusCode, got.Body, diff)
		}
	}
	if n := h.upstream.Count("DELETE", "/contacts/3"); n != calls {
		t.Errorf("a route the scripts function does not serve called the upstream (%d times)", n-calls)
	}
}
