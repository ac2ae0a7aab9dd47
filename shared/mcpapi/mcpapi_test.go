package mcpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/policy"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newTestHandler is a Handler over a one-connection configuration, with a
// clock the test moves.
func newTestHandler(tb testing.TB, workspace string, now *time.Time) *Handler {
	tb.Helper()
	dir := tb.TempDir()
	files := map[string]string{
		"settings.json":    `{"workspace": {"name": ` + workspace + `, "accent_color": "#fde047"}, "timeouts": {"call_seconds": 600}}`,
		"credentials.json": `[{"id": "chat-user", "key": "k", "choice": "ask_person"}]`,
		"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:9", "endpoints": [
  {"method": "GET", "path": "/contacts/{id}"},
  {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
  {"method": "POST", "path": "/search/{query}"}]}`,
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := links.NewSigner(links.Key{ID: "k1", Secret: bytes.Repeat([]byte{'s'}, 32)})
	if err != nil {
		tb.Fatal(err)
	}
	clock := func() time.Time { return *now }
	return New(Options{Calls: (&calls.Service{Now: clock}).WithConfig(cfg), Signer: signer, Now: clock})
}

func TestBuiltInToolNamesAreReserved(t *testing.T) {
	for _, n := range []string{ToolReviewPending, ToolCardDecide, ToolConfirmationStatus, ToolRunScript} {
		if !slices.Contains(config.ReservedToolNames, n) {
			t.Errorf("%s is not in policy.ReservedToolNames", n)
		}
	}
}

func TestClientOf(t *testing.T) {
	apps := &mcp.ClientCapabilities{}
	apps.AddExtension(AppsExtension, map[string]any{"mimeTypes": []any{AppsMIMEType}})
	tests := []struct {
		name   string
		params *mcp.InitializeParams
		want   Client
	}{
		{"form elicitation on 2026-07-28", &mcp.InitializeParams{ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "cc", Version: "2"},
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}},
			Client{Name: "cc", Version: "2", Protocol: "2026-07-28", Elicit: true}},
		{"empty elicitation means form", &mcp.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}},
			Client{Protocol: "2026-07-28", Elicit: true}},
		{"url elicitation only", &mcp.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}},
			Client{Protocol: "2026-07-28", URL: true}},
		{"form and url elicitation ask in the form", &mcp.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}},
			Client{Protocol: "2026-07-28", Elicit: true}},
		{"elicitation before 2026-07-28 asks out of band", &mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}},
			Client{Protocol: "2025-11-25", OutOfBand: true}},
		{"MCP Apps", &mcp.InitializeParams{ProtocolVersion: "2025-06-18", Capabilities: apps}, Client{Protocol: "2025-06-18", Apps: true}},
		{"MCP Apps without HTML views", &mcp.InitializeParams{ProtocolVersion: "2026-07-28",
			Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{AppsExtension: map[string]any{"mimeTypes": []any{"text/uri-list"}}}}},
			Client{Protocol: "2026-07-28"}},
		{"nothing", &mcp.InitializeParams{ProtocolVersion: "2026-07-28"}, Client{Protocol: "2026-07-28"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Capabilities arrive decoded from JSON, as on the wire.
			b, _ := json.Marshal(tt.params)
			var p mcp.InitializeParams
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if got := clientOf(&mcp.InitializeRequest{Params: &p}); got != tt.want {
				t.Errorf("clientOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCallOf(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	ops := map[string]operation{}
	for _, op := range visibleOperations(h.o.Calls.Current(), &countersign.Credential{ID: "c", Choice: countersign.AskPerson}) {
		ops[op.name] = op
	}
	tests := []struct {
		name, tool, args string
		meta             mcp.Meta
		want             string // "" is an error
		path, query      string
		body             string
		delegated        bool
		err              string
	}{
		{name: "path parameter escaped", tool: "get_contacts_by_id", args: `{"id": "a b:c"}`, path: "/contacts/a%20b:c"},
		{name: "a slash in a path parameter", tool: "get_contacts_by_id", args: `{"id": "12/owner"}`, err: `argument "id" must not contain /`},
		{name: "number as id", tool: "get_contacts_by_id", args: `{"id": 12, "query": {"limit": 5, "q": "x"}}`, path: "/contacts/12", query: "limit=5&q=x"},
		{name: "delegated and idempotency key", tool: "delete_contacts_by_id", args: `{"id": "3"}`, meta: mcp.Meta{MetaDelegated: true, MetaIdempotencyKey: "k"},
			path: "/contacts/3", delegated: true},
		{name: "a path parameter named query wins", tool: "post_search_by_query", args: `{"query": "cats", "body": {"a": 1}}`, path: "/search/cats", body: `{"a": 1}`},
		{name: "missing parameter", tool: "get_contacts_by_id", args: `{}`, err: `argument "id" is required`},
		{name: "empty parameter", tool: "get_contacts_by_id", args: `{"id": ""}`, err: `"id" must be a non-empty string`},
		{name: "object parameter", tool: "get_contacts_by_id", args: `{"id": {"x": 1}}`, err: `"id" must be a non-empty string`},
		{name: "dot segment", tool: "get_contacts_by_id", args: `{"id": ".."}`, err: ". or .. segments"},
		{name: "body on a GET", tool: "get_contacts_by_id", args: `{"id": "1", "body": {}}`, err: `unknown argument "body"`},
		{name: "query not an object", tool: "get_contacts_by_id", args: `{"id": "1", "query": "a=b"}`, err: "object of strings"},
		{name: "arguments not an object", tool: "get_contacts_by_id", args: `[1]`, err: "must be a JSON object"},
		{name: "delegated not a boolean", tool: "delete_contacts_by_id", args: `{"id": "3"}`, meta: mcp.Meta{MetaDelegated: "yes"}, err: "must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, ok := ops[tt.tool]
			if !ok {
				t.Fatalf("no tool %s in %v", tt.tool, ops)
			}
			c, err := callOf(op, json.RawMessage(tt.args), tt.meta)
			if tt.err != "" {
				if fault.CodeOf(err) != fault.InvalidRequest || !strings.Contains(fault.ReasonOf(err), tt.err) {
					t.Fatalf("callOf = %v, want invalid_request ~%q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Path != tt.path || c.Query.Encode() != tt.query || string(c.Body) != tt.body || c.Delegated != tt.delegated {
				t.Errorf("call %s ?%s body %s delegated %v", c.Path, c.Query.Encode(), c.Body, c.Delegated)
			}
			if policy.IsMutating(c.Method) != (c.Intent == policy.IntentWrite) {
				t.Errorf("intent %v for %s", c.Intent, c.Method)
			}
			if tt.meta[MetaIdempotencyKey] != nil && c.IdempotencyKey != "k" {
				t.Errorf("idempotency key %q", c.IdempotencyKey)
			}
		})
	}
}

// TestAnswer: a request state opens only for its credential and tool,
// unaltered and unexpired, and the answer is read from the elicitation.
func TestAnswer(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	cred := &countersign.Credential{ID: "chat-user", Choice: countersign.AskPerson, Issuer: "https://idp.example", Subject: "ann"}
	ops := []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/1", Binding: "b1"}, {Connection: "crm", Method: "DELETE", Path: "/contacts/2", Binding: "b2"}}
	asked := h.Ask(cred, Client{Name: "cc"}, "run_script", countersign.KindScript, ops, "")
	ep := asked.InputRequests[inputKey].(*mcp.ElicitParams)
	if !strings.Contains(ep.Message, "Approve 2 operations? (Acme)") || !strings.Contains(ep.Message, "2. DELETE /contacts/2 on crm") {
		t.Errorf("message %q", ep.Message)
	}
	schema, _ := json.Marshal(ep.RequestedSchema)
	if !strings.Contains(string(schema), `"op0":{"default":true`) || !strings.Contains(string(schema), `"op1":{"default":true`) {
		t.Errorf("schema %s", schema)
	}
	state := asked.RequestState
	params := func(state string, r *mcp.ElicitResult) *mcp.CallToolParamsRaw {
		return &mcp.CallToolParamsRaw{RequestState: state, InputResponses: mcp.InputResponseMap{inputKey: r}}
	}
	acceptOne := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": false, "op1": true}}

	a, err := h.Answer(cred, Client{Name: "cc"}, "run_script", params(state, acceptOne))
	if err != nil {
		t.Fatal(err)
	}
	if a.Declined || !slices.Equal(a.Approved, []bool{false, true}) || a.By != "client:cc" || a.Kind != countersign.KindScript ||
		!a.ExpiresAt.Equal(t0.Add(1800*time.Second)) || !slices.Equal(a.Bindings, []string{"b1", "b2"}) {
		t.Errorf("answer %+v", a)
	}
	if a, _ := h.Answer(cred, Client{}, "run_script", params(state, &mcp.ElicitResult{Action: "cancel"})); !a.Declined {
		t.Errorf("a dismissed question is declined: %+v", a)
	}
	if a, _ := h.Answer(cred, Client{}, "run_script", params(state, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": false, "op1": false}})); !a.Declined {
		t.Errorf("nothing selected is declined: %+v", a)
	}
	// Only an explicit true approves (issue 15 finding 12): an accept
	// without content, or with a value that is not a boolean, runs nothing.
	for _, content := range []map[string]any{nil, {}, {"op0": "true", "op1": "yes"}, {"op0": 1, "op1": nil}} {
		if a, _ := h.Answer(cred, Client{}, "run_script", params(state, &mcp.ElicitResult{Action: "accept", Content: content})); !a.Declined || anyTrue(a.Approved) {
			t.Errorf("accept with %v: %+v, want declined", content, a)
		}
	}
	if a, _ := h.Answer(cred, Client{}, "run_script", params(state, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op1": true}})); a.Declined || !slices.Equal(a.Approved, []bool{false, true}) {
		t.Errorf("a missing op0 is left out: %+v", a)
	}

	cardTok := h.o.Signer.Seal(cardPurpose, []byte(`{"id":"x","cred":"chat-user"}`), t0.Add(time.Hour))
	tests := []struct {
		name  string
		cred  string
		tool  string
		state string
		resp  *mcp.ElicitResult
		at    time.Time
		code  fault.Code
	}{
		{"another credential", "other", "run_script", state, acceptOne, t0, fault.ConfirmationMismatch},
		{"another tool", "chat-user", "crm__x", state, acceptOne, t0, fault.ConfirmationMismatch},
		{"a card token is no state", "chat-user", "run_script", cardTok, acceptOne, t0, fault.BadSignature},
		{"garbage", "chat-user", "run_script", "x.y.z.w", acceptOne, t0, fault.BadSignature},
		{"expired", "chat-user", "run_script", state, acceptOne, t0.Add(1800 * time.Second), fault.ConfirmationExpired},
		{"no answer", "chat-user", "run_script", state, nil, t0, fault.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = tt.at
			defer func() { now = t0 }()
			p := params(tt.state, tt.resp)
			if tt.resp == nil {
				p.InputResponses = nil
			}
			_, err := h.Answer(&countersign.Credential{ID: tt.cred, Subject: "ann"}, Client{}, tt.tool, p)
			if fault.CodeOf(err) != tt.code {
				t.Errorf("Answer = %v, want %s", err, tt.code)
			}
		})
	}
	t.Run("a key cannot answer in the client", func(t *testing.T) {
		// The right state, the right credential ID, but a key without
		// ask_in_client: a program cannot answer its own question.
		_, err := h.Answer(&countersign.Credential{ID: "chat-user"}, Client{}, "run_script", params(state, acceptOne))
		if fault.CodeOf(err) != fault.ConfirmationMismatch || !strings.Contains(err.Error(), "not a person") {
			t.Errorf("Answer for a key = %v, want confirmation_mismatch naming the key", err)
		}
	})
}

// TestCardTime: the card shows the time left and, after 10 minutes for a
// call and 30 for a script, "This confirmation expired". The clock is a
// synctest bubble's, so the waits take no time.
func TestCardTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now().UTC()
		start := now
		h := newTestHandler(t, `"Acme"`, &now)
		h.o.Now = func() time.Time { return time.Now().UTC() }
		for _, c := range []struct {
			kind countersign.Kind
			wait time.Duration
		}{{countersign.KindCall, 10 * time.Minute}, {countersign.KindScript, 30 * time.Minute}} {
			conf := &countersign.Confirmation{ID: "cf_1", Kind: c.kind, Status: countersign.StatusPending, GatewayRuns: true, CreatedAt: start, ExpiresAt: start.Add(c.wait),
				Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/1", Selected: true}}}
			v := h.cardOf(conf, countersign.StatusPending)
			if v.State != "pending" || v.Title != "Approve this operation?" || v.SecondsLeft != int(c.wait/time.Second) || v.Workspace != "Acme" || v.Accent != "#fde047" {
				t.Errorf("%s at start: %+v", c.kind, v)
			}
			time.Sleep(c.wait - time.Minute)
			if v := h.cardOf(conf, countersign.StatusPending); v.TimeLeft != "1 minute left" {
				t.Errorf("%s a minute before: %q", c.kind, v.TimeLeft)
			}
			time.Sleep(time.Minute)
			v = h.cardOf(conf, countersign.StatusExpired)
			if v.State != "expired" || !strings.HasPrefix(v.Message, "This confirmation expired") || !strings.HasPrefix(cardText(v), "This confirmation expired") {
				t.Errorf("%s after %s: %+v", c.kind, c.wait, v)
			}
			start = time.Now().UTC()
		}
	})
}

func TestCardTitleForSeveral(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	conf := &countersign.Confirmation{ID: "cf_1", Kind: countersign.KindScript, Status: countersign.StatusPending, GatewayRuns: true, ExpiresAt: t0.Add(time.Minute),
		Operations: []countersign.Operation{{Method: "DELETE", Path: "/a"}, {Method: "DELETE", Path: "/b"}, {Method: "POST", Path: "/c"}}}
	if v := h.cardOf(conf, countersign.StatusPending); v.Title != "Approve 3 operations?" || len(v.Operations) != 3 {
		t.Errorf("card %+v", v)
	}
}

// TestRenderCard: the workspace name is escaped, the accent is a checked
// colour, and the card's HTML holds no token placeholder left unfilled.
func TestRenderCard(t *testing.T) {
	b, err := renderCard(config.Workspace{Name: `<script>alert("x")</script> & Co`, AccentColor: "red; background: url(x)"})
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if strings.Contains(html, `<script>alert`) || !strings.Contains(html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Co") {
		t.Errorf("the workspace name is not escaped")
	}
	if !strings.Contains(html, "--accent: #5b21b6; --on-accent: #ffffff;") || strings.Contains(html, "url(x)") {
		t.Errorf("an invalid accent is not replaced by the default")
	}
	for _, want := range []string{`var TOOL = "card_decide";`, `var EXPIRED = "This confirmation expired";`, "Approve</button>", "Reject all</button>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the card lacks %q", want)
		}
	}
	if strings.Contains(html, "__") {
		t.Errorf("a placeholder is left: %s", html[strings.Index(html, "__")-20:strings.Index(html, "__")+20])
	}
}

// TestJoinRepeated: /mcp reads a repeated header as API Gateway delivers
// it, one value joined with commas, on a listener too: two Authorization
// headers are one value no key matches, never the first key.
func TestJoinRepeated(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Add("Authorization", "Bearer k")
	r.Header.Add("Authorization", "Bearer other")
	r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	j := joinRepeated(r)
	if got := j.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer k,Bearer other" {
		t.Errorf("Authorization %q", got)
	}
	if k := bearerKey(j.Header.Get("Authorization")); k == "k" {
		t.Errorf("the first of two keys was taken")
	}
	if j.Header.Get("Mcp-Protocol-Version") != "2025-06-18" || len(r.Header.Values("Authorization")) != 2 {
		t.Errorf("other headers %v; the request itself changed: %v", j.Header, r.Header)
	}
	if single := httptest.NewRequest(http.MethodPost, "/mcp", nil); joinRepeated(single) != single {
		t.Error("a request without repeated headers was copied")
	}
}
