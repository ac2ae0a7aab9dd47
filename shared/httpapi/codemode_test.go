package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/httpapi"
)

// TestCodeModeServesItsRoutesAlone: Gateway.CodeMode hands /mcp to the
// attached MCP handler with the credential the gateway found, as
// ServeHTTP does, and answers every other route, the gateway's own among
// them, with ServeHTTP's 404 for an unknown route, running nothing.
func TestCodeModeServesItsRoutesAlone(t *testing.T) {
	e := newEnv(t)
	var seen []string
	e.gateway.MCP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, ok := httpapi.Preauthenticated(r.Context())
		if !ok {
			t.Error("/mcp got no credential")
		} else {
			seen = append(seen, cred.ID)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := e.gateway.CodeMode()

	mcp := loadEvent(t, "mcp-tools-list.json")
	mcp.Headers["authorization"] = "Bearer cs_demo_ask"
	if r := invoke(t, h, mcp); r.StatusCode != http.StatusNoContent || len(seen) != 1 {
		t.Fatalf("/mcp: %d %s, MCP saw %v", r.StatusCode, r.Body, seen)
	}

	// The gateway's own routes, and code mode's while it is not attached.
	scripts := loadEvent(t, "calls-delete-contact.json")
	scripts.RawPath, scripts.RequestContext.HTTP.Path, scripts.Body = "/v1/scripts", "/v1/scripts", `{"script": "1"}`
	for _, req := range []Request{loadEvent(t, "calls-delete-contact.json"), loadEvent(t, "rest-get-contact.json"),
		loadEvent(t, "confirmation-status.json"), loadEvent(t, "healthz.json"), scripts} {
		unknown := req
		unknown.RawPath, unknown.RequestContext.HTTP.Path = "/no/such/route", "/no/such/route"
		want := invoke(t, e.gateway, unknown)
		want.Body = strings.Replace(want.Body, "/no/such/route", req.RawPath, 1)
		got := invoke(t, h, req)
		expect(t, got, http.StatusNotFound, "not_found")
		if got.Body != want.Body || got.json["reason"] != "no route "+req.RequestContext.HTTP.Method+" "+req.RawPath {
			t.Errorf("%s %s: %s, want %s", req.RequestContext.HTTP.Method, req.RawPath, got.Body, want.Body)
		}
	}
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	if len(e.wf.starts) != 0 {
		t.Errorf("a workflow was started: %v", e.wf.starts)
	}
}
