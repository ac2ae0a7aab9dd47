package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/mcpapi"
)

// bearer adds the credential's key to every request of the MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// clientKind is what a test client declares.
type clientKind struct {
	name string
	// elicit answers form elicitations (nil: the client declares none).
	elicit func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// apps declares MCP Apps with HTML views.
	apps bool
	// protocol forces a protocol revision; empty is the newest.
	protocol string
	// url declares URL-mode elicitation (and not form mode).
	url bool
	// manual turns the SDK's automatic multi round-trip handling off.
	manual bool
}

// mcpSession connects an SDK client to the stack's /mcp with a key,
// through transport (nil: real HTTP).
func (h *harness) mcpSession(key string, k clientKind, transport http.RoundTripper) *mcp.ClientSession {
	h.t.Helper()
	if transport == nil {
		transport = http.DefaultTransport
	}
	if k.name == "" {
		k.name = "test-client"
	}
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if k.elicit != nil {
		elicit := k.elicit
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return elicit(r) }
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	if k.url {
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}
	}
	if k.apps {
		opts.Capabilities.AddExtension(mcpapi.AppsExtension, map[string]any{"mimeTypes": []any{mcpapi.AppsMIMEType}})
	}
	if k.manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: k.name, Version: "1.2.3"}, opts)
	t := &mcp.StreamableClientTransport{Endpoint: h.stack.URL + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{key: key, next: transport}, Timeout: 30 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: k.protocol})
	if err != nil {
		h.t.Fatalf("connect %s: %v", k.name, err)
	}
	h.t.Cleanup(func() { _ = s.Close() })
	return s
}

// seen records every tool result a model would read (content and
// structured content, not _meta), for the leak check.
type seen struct {
	mu   sync.Mutex
	text []string
}

func (s *seen) add(tb testing.TB, r *mcp.CallToolResult) {
	tb.Helper()
	if r == nil {
		return
	}
	b, err := json.Marshal(struct {
		Content    []mcp.Content `json:"content"`
		Structured any           `json:"structuredContent"`
	}{r.Content, r.StructuredContent})
	if err != nil {
		tb.Fatal(err)
	}
	s.mu.Lock()
	s.text = append(s.text, string(b))
	s.mu.Unlock()
}

// modelSees is every result the model read, as one string.
func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.text, "\n")
}

// callTool calls a tool and fails the test on a protocol error.
func callTool(tb testing.TB, s *mcp.ClientSession, name string, args any, sn *seen) *mcp.CallToolResult {
	tb.Helper()
	return callToolParams(tb, s, &mcp.CallToolParams{Name: name, Arguments: args}, sn)
}

func callToolParams(tb testing.TB, s *mcp.ClientSession, p *mcp.CallToolParams, sn *seen) *mcp.CallToolResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.CallTool(ctx, p)
	if err != nil {
		tb.Fatalf("call %s: %v", p.Name, err)
	}
	if sn != nil && !r.NeedsInput() {
		sn.add(tb, r)
	}
	return r
}

// text is the text of a result's content blocks.
func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes a result's structured content into a map.
func structured(tb testing.TB, r *mcp.CallToolResult) map[string]any {
	tb.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func accept(approve bool) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
	}
}

func decline(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}
