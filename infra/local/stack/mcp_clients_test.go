package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/mcpapi"
)

// mcpBlock is settings.json's mcp block for harnessOptions.mcp.
func mcpBlock(b string) string {
	if b == "" {
		return ""
	}
	return ",\n  \"mcp\": " + b
}

// rawMCP is one POST to /mcp as a client that is not the SDK sends it.
type rawMCP struct {
	key, body string
	// protocol sets MCP-Protocol-Version (and, from 2026-07-28, Mcp-Method
	// and the request's _meta are the caller's).
	protocol, method string
	// host and origin set the Host and Origin headers when not empty.
	host, origin string
	session      string
	httpMethod   string
}

type rawResult struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

// json decodes the body, or the data of an event stream's last message.
func (r rawResult) json(tb testing.TB) map[string]any {
	tb.Helper()
	body := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		var last string
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				last = d
			}
		}
		body = last
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		tb.Fatalf("%d %s: not JSON: %v", r.status, r.body, err)
	}
	return m
}

func (h *harness) raw(q rawMCP) rawResult {
	h.t.Helper()
	m := q.httpMethod
	if m == "" {
		m = http.MethodPost
	}
	req, err := http.NewRequest(m, h.stack.URL+"/mcp", strings.NewReader(q.body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if q.key != "" {
		req.Header.Set("Authorization", "Bearer "+q.key)
	}
	if q.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", q.protocol)
	}
	if q.method != "" {
		req.Header.Set("Mcp-Method", q.method)
	}
	if q.origin != "" {
		req.Header.Set("Origin", q.origin)
	}
	if q.session != "" {
		req.Header.Set("Mcp-Session-Id", q.session)
	}
	if q.host != "" {
		req.Host = q.host
	}
	client := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResult{status: resp.StatusCode, header: resp.Header, body: string(b), elapsed: time.Since(start)}
}

// meta2026 is the _meta a 2026-07-28 request carries.
const meta2026 = `"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
  "io.modelcontextprotocol/clientCapabilities": {}}`

// TestMCPListen: server/discover promises no list-changed notifications,
// and subscriptions/listen is acknowledged and ended at once (a stateless
// server has nothing to send on it), well under 2 s, so a client waiting
// for its acknowledgement connects at once and a Lambda invocation ends.
func TestMCPListen(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	d := h.raw(rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "server/discover",
		body: `{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {` + meta2026 + `}}`})
	caps, _ := d.json(t)["result"].(map[string]any)["capabilities"].(map[string]any)
	if d.status != http.StatusOK || caps == nil {
		t.Fatalf("discover: %d %s", d.status, d.body)
	}
	for _, k := range []string{"tools", "resources", "prompts"} {
		if c, ok := caps[k].(map[string]any); !ok || c["listChanged"] == true {
			t.Errorf("discover %s: %v, want declared without listChanged", k, caps[k])
		}
	}
	if _, ok := caps["logging"]; !ok {
		t.Errorf("discover does not declare logging, which is served: %s", d.body)
	}
	for _, k := range []string{"completions"} {
		if _, ok := caps[k]; ok {
			t.Errorf("discover declares %s, which is not served: %s", k, d.body)
		}
	}

	l := h.raw(rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "subscriptions/listen",
		body: `{"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true, "resourcesListChanged": true}, ` + meta2026 + `}}`})
	t.Logf("subscriptions/listen answered in %s", l.elapsed)
	if l.elapsed > 2*time.Second {
		t.Errorf("listen answered after %s, want under 2 s", l.elapsed)
	}
	if l.status != http.StatusOK || !strings.Contains(l.body, `"method":"notifications/subscriptions/acknowledged"`) ||
		!strings.Contains(l.body, `"notifications":{}`) {
		t.Fatalf("listen: %d %s", l.status, l.body)
	}
	if res, ok := l.json(t)["result"].(map[string]any); !ok || l.json(t)["id"] != float64(2) {
		t.Errorf("listen did not end with its result: %s (%v)", l.body, res)
	}

	// An SDK client that wants list-changed notifications connects at once
	// and subscribes to nothing.
	c := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.stack.URL + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{key: "cs_test_ask", next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.ListTools(ctx, nil)
	t.Logf("an SDK client with a list-changed handler connected and listed in %s", time.Since(start))
	if err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("connect and list: %v after %s", err, time.Since(start))
	}
}

// TestMCPLegacyElicitation: a client on 2025-11-25 or 2025-06-18 that
// declares elicitation gets the person asked out of band: the approvers
// get their link, the model is told to call confirmation_status, and the
// gateway runs the approved DELETE once; a rejected one runs nothing. The
// client's own dialog is never opened (a stateless server cannot wait for
// its answer on these revisions).
func TestMCPLegacyElicitation(t *testing.T) {
	for _, proto := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(proto, func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			var sn seen
			dialogs := 0
			s := h.mcpSession("cs_test_ask", clientKind{name: "Legacy Client", protocol: proto, elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				dialogs++
				return accept(true)(r)
			}}, nil)
			if s.InitializeResult().ProtocolVersion != proto {
				t.Fatalf("negotiated %s, want %s", s.InitializeResult().ProtocolVersion, proto)
			}

			for i, decision := range []string{"approve", "reject"} {
				contact := []string{"7", "8"}[i]
				r := callTool(t, s, "crm__deleteContact", map[string]any{"id": contact}, &sn)
				id, _ := structured(t, r)["confirmation_id"].(string)
				if r.IsError || id == "" || !strings.Contains(text(r), "Legacy Client on MCP "+proto) ||
					!strings.Contains(text(r), "the approvers were sent a link") || !strings.Contains(text(r), `call confirmation_status with {"confirmation_id": "`+id+`"`) {
					t.Fatalf("first call: %q", text(r))
				}
				if n := h.upstream.Count("DELETE", "/contacts/"+contact); n != 0 {
					t.Fatalf("the DELETE ran %d times before a decision", n)
				}
				if res := h.post(h.approvalLink(id), decision, nil, "application/json"); res.status != http.StatusOK {
					t.Fatalf("%s: %d %s", decision, res.status, res.body)
				}
				want := map[string]string{"approve": "executed", "reject": "rejected"}[decision]
				var st *mcp.CallToolResult
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					st = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, &sn)
					if structured(t, st)["status"] == want {
						break
					}
				}
				if got := structured(t, st)["status"]; got != want {
					t.Fatalf("%s: status %v (%q), want %s", decision, got, text(st), want)
				}
				time.Sleep(50 * time.Millisecond)
				if n, want := h.upstream.Count("DELETE", "/contacts/"+contact), map[string]int{"approve": 1, "reject": 0}[decision]; n != want {
					t.Errorf("%s: the DELETE ran %d times, want %d", decision, n, want)
				}
			}
			if dialogs != 0 {
				t.Errorf("the client's dialog was opened %d times", dialogs)
			}
			assertNoSecrets(t, h, sn.all(), "")
		})
	}
}

// TestMCPLegacyRunScript: a script's batch, on a 2025-11-25 client that
// declares elicitation, waits for the approvers, and the gateway runs the
// script again once it is approved.
func TestMCPLegacyRunScript(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Legacy Client", protocol: "2025-11-25", elicit: accept(true)}, nil)
	r := runScript(t, s, `call('crm', 'DELETE', '/contacts/5')`, "", nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if r.IsError || id == "" || !strings.Contains(text(r), "The approvers were sent a link") {
		t.Fatalf("run_script: %q", text(r))
	}
	if n := h.upstream.Count("DELETE", "/contacts/5"); n != 0 {
		t.Fatalf("the DELETE ran %d times before approval", n)
	}
	if res := h.post(h.approvalLink(id), "approve", nil, "application/json"); res.status != http.StatusOK {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	var st *mcp.CallToolResult
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		st = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, nil)
		if structured(t, st)["status"] == "executed" {
			break
		}
	}
	if structured(t, st)["status"] != "executed" {
		t.Fatalf("status %q", text(st))
	}
	if n := h.upstream.Count("DELETE", "/contacts/5"); n != 1 {
		t.Errorf("the DELETE ran %d times, want 1", n)
	}
}

// TestMCPLegacyApps: a 2025-11-25 client that declares MCP Apps gets the
// card: its tools are listed, and approving in the card runs the DELETE
// once.
func TestMCPLegacyApps(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Apps Host", protocol: "2025-11-25", apps: true}, nil)
	if tools := listTools(t, s); tools["review_pending"] == nil || tools["card_decide"] == nil {
		t.Fatalf("tools %v lack the card's", names(tools))
	}
	r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "9"}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if r.IsError || id == "" || !strings.Contains(text(r), "review_pending") {
		t.Fatalf("first call: %q", text(r))
	}
	card := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": cardToken(t, card), "decision": "approve"}, nil)
	if d.IsError {
		t.Fatalf("card_decide: %q", text(d))
	}
	if n := h.upstream.Count("DELETE", "/contacts/9"); n != 1 {
		t.Errorf("the DELETE ran %d times, want 1", n)
	}
}

// TestMCPSessionID: on the older revisions the session id is what
// initialize gave this key; another key's, or a changed one, is 404 and
// runs nothing.
func TestMCPSessionID(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	init := h.raw(rawMCP{key: "cs_test_run", body: `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
  "capabilities": {"elicitation": {}}, "clientInfo": {"name": "raw", "version": "1"}}}`})
	sid := init.header.Get("Mcp-Session-Id")
	if init.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %v %s", init.status, init.header, init.body)
	}
	del := `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "4"}}}`
	for _, c := range []struct{ name, key, session string }{
		{"another key", "cs_test_ask", sid},
		{"changed", "cs_test_run", sid[:len(sid)-2] + "AA"},
		{"garbage", "cs_test_run", "abc"},
	} {
		r := h.raw(rawMCP{key: c.key, protocol: "2025-06-18", session: c.session, body: del})
		if m := r.json(t); r.status != http.StatusNotFound || m["id"] != float64(2) || !strings.Contains(r.body, "initialize again") {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	if r := h.raw(rawMCP{key: "cs_test_run", protocol: "2025-06-18", session: sid, body: del}); r.status != http.StatusOK || strings.Contains(r.body, `"isError":true`) {
		t.Errorf("own session: %d %s", r.status, r.body)
	}
	if n := h.upstream.Count("DELETE", "/contacts/4"); n != 1 {
		t.Errorf("the DELETE ran %d times, want 1 (with the key's own session only)", n)
	}
}

// TestMCPOrigin: a page on a foreign origin, or one that rebinds its own
// name to 127.0.0.1, is refused with 403 and a JSON-RPC error, and the
// upstream gets nothing; loopback origins and requests without Origin
// are served.
func TestMCPOrigin(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	del := `{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "6"}}}`
	for _, c := range []struct{ name, origin, host string }{
		{"foreign origin and host", "http://evil.example:8080", "evil.example:8080"},
		{"foreign origin", "https://evil.example", ""},
		{"rebound host", "", "evil.example"},
		{"opaque origin", "null", ""},
	} {
		r := h.raw(rawMCP{key: "cs_test_run", protocol: "2025-06-18", origin: c.origin, host: c.host, body: del})
		m := r.json(t)
		e, _ := m["error"].(map[string]any)
		if r.status != http.StatusForbidden || e == nil || e["code"] != float64(-32003) || !strings.Contains(e["message"].(string), "nothing ran") {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	if n := h.upstream.Count("DELETE", "/contacts/6"); n != 0 {
		t.Fatalf("a refused request ran the DELETE %d times", n)
	}
	for _, origin := range []string{"", "http://localhost:6274", "http://127.0.0.1:3000"} {
		r := h.raw(rawMCP{key: "cs_test_run", protocol: "2025-06-18", origin: origin,
			body: `{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}`})
		if r.status != http.StatusOK || !strings.Contains(r.body, `"tools"`) {
			t.Errorf("origin %q: %d %s", origin, r.status, r.body)
		}
	}
}

// TestMCPAllowedOrigins: settings.json's mcp.allowed_origins replaces the
// loopback default.
func TestMCPAllowedOrigins(t *testing.T) {
	h := newHarness(t, harnessOptions{mcp: `{"allowed_origins": ["https://app.example.com"]}`})
	list := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	for origin, want := range map[string]int{"https://app.example.com": 200, "http://localhost:6274": 403, "https://evil.example": 403} {
		if r := h.raw(rawMCP{key: "cs_test_run", protocol: "2025-06-18", origin: origin, body: list}); r.status != want {
			t.Errorf("origin %s: %d %s, want %d", origin, r.status, r.body, want)
		}
	}
}

// TestMCPProtocolHygiene: every answer is JSON-RPC; batches, versions
// not documented and methods not served are refused as such; results
// are private to the key; input requests carry content [].
func TestMCPProtocolHygiene(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	rpcError := func(tb testing.TB, r rawResult, status int, code float64) {
		tb.Helper()
		m := r.json(tb)
		e, _ := m["error"].(map[string]any)
		if r.status != status || e == nil || e["code"] != code || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			tb.Errorf("%d %s %s, want %d with JSON-RPC error %v", r.status, r.header.Get("Content-Type"), r.body, status, code)
		}
	}
	t.Run("initialize in a batch", func(t *testing.T) {
		r := h.raw(rawMCP{key: "cs_test_ask", body: `[{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}]`})
		rpcError(t, r, http.StatusBadRequest, -32600)
	})
	t.Run("unknown and undeclared methods", func(t *testing.T) {
		for _, m := range []string{"foo/bar", "completion/complete", "resources/subscribe"} {
			r := h.raw(rawMCP{key: "cs_test_ask", protocol: "2025-06-18", body: `{"jsonrpc": "2.0", "id": 7, "method": "` + m + `", "params": {}}`})
			rpcError(t, r, http.StatusOK, -32601)
			if r.json(t)["id"] != float64(7) {
				t.Errorf("%s: id not echoed: %s", m, r.body)
			}
		}
		r := h.raw(rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "completion/complete",
			body: `{"jsonrpc": "2.0", "id": 8, "method": "completion/complete", "params": {` + meta2026 + `}}`})
		rpcError(t, r, http.StatusNotFound, -32601)
		if r := h.raw(rawMCP{key: "cs_test_ask", protocol: "2025-06-18", body: `{"jsonrpc": "2.0", "method": "notifications/whatever"}`}); r.status != http.StatusAccepted {
			t.Errorf("unknown notification: %d %s", r.status, r.body)
		}
	})
	t.Run("versions", func(t *testing.T) {
		r := h.raw(rawMCP{key: "cs_test_ask", body: `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}`})
		res, _ := r.json(t)["result"].(map[string]any)
		if res["protocolVersion"] != "2025-11-25" {
			t.Errorf("2024-11-05 negotiated %v, want 2025-11-25: %s", res["protocolVersion"], r.body)
		}
		for _, v := range []string{"2024-11-05"} {
			rpcError(t, h.raw(rawMCP{key: "cs_test_ask", protocol: v, body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`}), http.StatusBadRequest, -32600)
		}
		if !slices.Equal(mcpapi.Protocols, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}) {
			t.Errorf("protocols %v", mcpapi.Protocols)
		}
	})
	t.Run("prompts and logging are declared and answered", func(t *testing.T) {
		r := h.raw(rawMCP{key: "cs_test_ask", body: `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}`})
		res, _ := r.json(t)["result"].(map[string]any)
		caps, _ := res["capabilities"].(map[string]any)
		if caps["prompts"] == nil || caps["logging"] == nil {
			t.Errorf("capabilities %v, want prompts and logging declared", caps)
		}
		sid := r.header.Get("Mcp-Session-Id")
		r = h.raw(rawMCP{key: "cs_test_ask", protocol: "2025-06-18", session: sid, body: `{"jsonrpc": "2.0", "id": 2, "method": "prompts/list", "params": {}}`})
		res, _ = r.json(t)["result"].(map[string]any)
		if p, ok := res["prompts"].([]any); r.status != http.StatusOK || !ok || len(p) != 0 {
			t.Errorf("prompts/list: %d %s, want an empty list", r.status, r.body)
		}
		r = h.raw(rawMCP{key: "cs_test_ask", protocol: "2025-06-18", session: sid, body: `{"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "info"}}`})
		if m := r.json(t); r.status != http.StatusOK || m["error"] != nil {
			t.Errorf("logging/setLevel: %d %s", r.status, r.body)
		}
	})
	t.Run("GET is a JSON-RPC error", func(t *testing.T) {
		rpcError(t, h.raw(rawMCP{key: "cs_test_ask", httpMethod: http.MethodGet}), http.StatusMethodNotAllowed, -32600)
	})
	t.Run("private lists", func(t *testing.T) {
		r := h.raw(rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "tools/list",
			body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {` + meta2026 + `}}`})
		res, _ := r.json(t)["result"].(map[string]any)
		if res["cacheScope"] != "private" {
			t.Errorf("tools/list cacheScope %v: %s", res["cacheScope"], r.body)
		}
		var body map[string]any
		for _, tool := range res["tools"].([]any) {
			if tm := tool.(map[string]any); tm["name"] == "crm__post_payments" {
				body, _ = tm["inputSchema"].(map[string]any)["properties"].(map[string]any)["body"].(map[string]any)
			}
		}
		if body["type"] != "object" {
			t.Errorf("body schema %v, want a type", body)
		}
	})
	t.Run("input_required has content []", func(t *testing.T) {
		meta := strings.Replace(meta2026, `"io.modelcontextprotocol/clientCapabilities": {}`, `"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}`, 1)
		q := rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "tools/call",
			body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "2"}, ` + meta + `}}`}
		r := h.rawCall(q, "crm__deleteContact")
		res, _ := r.json(t)["result"].(map[string]any)
		if res["resultType"] != "input_required" || res["content"] == nil {
			t.Errorf("result %s, want input_required with content []", r.body)
		}
		if c, ok := res["content"].([]any); !ok || len(c) != 0 {
			t.Errorf("content %v, want []", res["content"])
		}
	})
	t.Run("401 points at the OAuth metadata", func(t *testing.T) {
		r := h.raw(rawMCP{body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`})
		www := r.header.Get("WWW-Authenticate")
		if r.status != http.StatusUnauthorized || !strings.HasPrefix(www, "Bearer ") ||
			!strings.Contains(www, `resource_metadata="`+h.stack.URL+`/.well-known/oauth-protected-resource/mcp"`) ||
			!strings.Contains(string(r.body), "API key") {
			t.Errorf("%d WWW-Authenticate %q", r.status, www)
		}
		rpcError(t, r, http.StatusUnauthorized, -32001)
	})
}

// rawCall posts a tools/call with the Mcp-Name header 2026-07-28 asks for.
func (h *harness) rawCall(q rawMCP, name string) rawResult {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.stack.URL+"/mcp", strings.NewReader(q.body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + q.key, "MCP-Protocol-Version": q.protocol, "Mcp-Method": q.method, "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResult{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// TestMCPAcceptWithoutApproval: an accepted form whose content does not
// say approve: true (none, empty, false, a string) runs nothing (issue 15
// finding 12); approve: true runs once. The client is driven by hand, as
// a client that skips the form's schema would answer.
func TestMCPAcceptWithoutApproval(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Hand Client", elicit: accept(true), manual: true}, nil)
	answer := func(content map[string]any) *mcp.CallToolResult {
		first := callTool(t, s, "crm__deleteContact", map[string]any{"id": "11"}, nil)
		if !first.NeedsInput() {
			t.Fatalf("first call: %q, want an input request", text(first))
		}
		return callToolParams(t, s, &mcp.CallToolParams{Name: "crm__deleteContact", Arguments: map[string]any{"id": "11"},
			RequestState: first.RequestState, InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: content}}}, nil)
	}
	for _, content := range []map[string]any{nil, {}, {"approve": false}, {"approve": "true"}, {"approve": 1}} {
		if r := answer(content); !r.IsError || !strings.Contains(text(r), "confirmation_rejected") {
			t.Errorf("accept with %v: %q, want declined", content, text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/11"); n != 0 {
			t.Fatalf("accept with %v: the DELETE ran %d times", content, n)
		}
	}
	if r := answer(map[string]any{"approve": true}); r.IsError {
		t.Errorf("approve: true: %q", text(r))
	}
	if n := h.upstream.Count("DELETE", "/contacts/11"); n != 1 {
		t.Errorf("the DELETE ran %d times, want 1", n)
	}
}

// docTools reads docs/mcp.md's table of cs_demo_ask_in_client's tools: each row's
// tool name and whether it is listed only for MCP Apps clients.
var docToolRow = regexp.MustCompile("^\\| `([a-zA-Z0-9_]+)` \\|(.*)\\|$")

// TestMCPDocsToolTable: docs/mcp.md lists exactly the tools tools/list
// gives cs_demo_ask_in_client on the shipped configuration, with and without MCP
// Apps, each operation with its method and path.
func TestMCPDocsToolTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	var plain, appsOnly []string
	rows := map[string]string{}
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			in = strings.Contains(line, "Tools of `cs_demo_ask_in_client`")
			continue
		}
		m := docToolRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		rows[m[1]] = m[2]
		if strings.Contains(m[2], "MCP Apps clients only") {
			appsOnly = append(appsOnly, m[1])
		} else {
			plain = append(plain, m[1])
		}
	}
	if len(plain) == 0 {
		t.Fatal("docs/mcp.md has no table under a heading naming \"Tools of `cs_demo_ask_in_client`\"")
	}
	s, err := Start(context.Background(), Options{ConfigDir: "../../config", Addr: "127.0.0.1:0", DataDir: t.TempDir(), DemoUpstream: "127.0.0.1:0", Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	h := &harness{t: t, stack: s}
	slices.Sort(plain)
	want := slices.Sorted(slices.Values(append(slices.Clone(plain), appsOnly...)))
	for _, apps := range []bool{false, true} {
		tools := listTools(t, h.mcpSession("cs_demo_ask_in_client", clientKind{apps: apps}, nil))
		w := plain
		if apps {
			w = want
		}
		if diff := cmp.Diff(w, names(tools)); diff != "" {
			t.Errorf("docs/mcp.md vs tools/list (apps %v) (-doc +server):\n%s", apps, diff)
		}
		for name, tool := range tools {
			// An operation's description says "METHOD /path on crm"; the row names them.
			if i := strings.Index(tool.Description, " on crm."); i >= 0 {
				op := tool.Description[:i]
				if j := strings.LastIndex(op, ". "); j >= 0 {
					op = op[j+2:]
				}
				if !strings.Contains(rows[name], "`"+op+"`") {
					t.Errorf("docs/mcp.md row of %s does not name `%s`: %q", name, op, rows[name])
				}
			}
		}
	}
}

// TestMCPLambdaClients: on the gateway Lambda's handler (API Gateway v2
// events, no listener address), a 2025-11-25 client's session id carries
// its capabilities across invocations, listen ends in its invocation, and
// a foreign Origin is refused with 403 and runs nothing.
func TestMCPLambdaClients(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	lt := lambdaTransport{h: lambdaHandler(gatewayapp.Gateway(h.stack.app))}

	s := h.mcpSession("cs_test_ask", clientKind{name: "Legacy Client", protocol: "2025-11-25", elicit: accept(true)}, lt)
	r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "15"}, nil)
	if r.IsError || !strings.Contains(text(r), "Legacy Client on MCP 2025-11-25") || !strings.Contains(text(r), "confirmation_status") {
		t.Errorf("legacy elicitation on the Lambda: %q", text(r))
	}

	post := func(body string, headers map[string]string) (*http.Response, string, time.Duration) {
		req, _ := http.NewRequest(http.MethodPost, "https://gateway.example/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer cs_test_run"} {
			req.Header.Set(k, v)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := lt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), time.Since(start)
	}
	resp, body, _ := post(`{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "16"}}}`,
		map[string]string{"MCP-Protocol-Version": "2025-06-18", "Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":-32003`) {
		t.Errorf("foreign origin on the Lambda: %d %s", resp.StatusCode, body)
	}
	if n := h.upstream.Count("DELETE", "/contacts/16"); n != 0 {
		t.Errorf("the DELETE ran %d times", n)
	}
	resp, body, took := post(`{"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true}, `+meta2026+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
	if resp.StatusCode != http.StatusOK || took > 2*time.Second || !strings.Contains(body, "notifications/subscriptions/acknowledged") || !strings.Contains(body, `"id":2`) {
		t.Errorf("listen on the Lambda: %d after %s: %s", resp.StatusCode, took, body)
	}
}
