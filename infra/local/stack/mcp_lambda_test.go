package stack

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/mcpapi"
)

// lambdaTransport carries the MCP client's requests to the gateway
// Lambda's handler exactly as API Gateway would: each request becomes an
// API Gateway v2 event, invoked through aws-lambda-go's handler and the
// edge adapter (httpapi.Lambda), and the event response becomes the HTTP
// response.
type lambdaTransport struct{ h lambda.Handler }

// lambdaHandler is the gateway as its Lambda runs it.
func lambdaHandler(gw http.Handler) lambda.Handler { return lambda.NewHandler(httpapi.Lambda(gw)) }

// eventOf is the API Gateway v2 event of r: header names in lower case,
// repeated values joined with commas, cookies apart, the body as text or
// in base64.
func eventOf(r *http.Request) (events.APIGatewayV2HTTPRequest, error) {
	var b []byte
	if r.Body != nil {
		var err error
		if b, err = io.ReadAll(r.Body); err != nil {
			return events.APIGatewayV2HTTPRequest{}, err
		}
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{"host": cmp.Or(r.Host, r.URL.Host)},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "lambda-test", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.9"}}}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			ev.Cookies = append(ev.Cookies, vs...)
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if utf8.Valid(b) {
		ev.Body = string(b)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return ev, nil
}

func (lt lambdaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ev, err := eventOf(r)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	out, err := lt.h.Invoke(r.Context(), payload)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("response event: %w", err)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return nil, err
		}
	}
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: resp.StatusCode, Status: http.StatusText(resp.StatusCode), Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// TestMCPOnTheGatewayLambda runs the MCP flows through the gateway
// Lambda's handler (lambda.NewHandler(...).Invoke with API Gateway v2
// events): the same answers as over the local server.
func TestMCPOnTheGatewayLambda(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	gw := gatewayapp.Gateway(h.stack.app)
	lt := lambdaTransport{h: lambdaHandler(gw)}

	t.Run("sample event", func(t *testing.T) {
		raw, err := os.ReadFile("../../../events/mcp-tools-list.json")
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.ReplaceAll(raw, []byte("cs_demo_ask"), []byte("cs_test_ask"))
		out, err := lambdaHandler(gw).Invoke(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Headers["Content-Type"], "application/json") ||
			!strings.Contains(resp.Body, `"name":"crm__deleteContact"`) || strings.Contains(resp.Body, `"review_pending"`) {
			t.Errorf("tools/list event: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
		}
	})

	t.Run("auto call", func(t *testing.T) {
		s := h.mcpSession("cs_test_run", clientKind{}, lt)
		if r := callTool(t, s, "crm__get_contacts_by_id", map[string]any{"id": "5"}, nil); r.IsError || !strings.HasPrefix(text(r), "200 OK") {
			t.Errorf("result %q", text(r))
		}
	})

	t.Run("input request accepted runs once", func(t *testing.T) {
		s := h.mcpSession("cs_test_ask", clientKind{elicit: accept(true)}, lt)
		if r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "14"}, nil); r.IsError || !strings.HasPrefix(text(r), "204") {
			t.Errorf("result %q", text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/14"); n != 1 {
			t.Errorf("DELETE ran %d times", n)
		}
	})

	t.Run("card approve runs once", func(t *testing.T) {
		s := h.mcpSession("cs_test_ask", clientKind{apps: true}, lt)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "15"}, nil)
		id, _ := structured(t, r)["confirmation_id"].(string)
		token := cardToken(t, callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil))
		d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve"}, nil)
		if structured(t, d)["status"] != "executed" {
			t.Errorf("approve: %q", text(d))
		}
		if n := h.upstream.Count("DELETE", "/contacts/15"); n != 1 {
			t.Errorf("DELETE ran %d times", n)
		}
	})

	t.Run("run_script accepted runs the batch once", func(t *testing.T) {
		s := h.mcpSession("cs_test_ask", clientKind{elicit: func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}}, lt)
		r := callTool(t, s, mcpapi.ToolRunScript, map[string]any{"script": "call('crm', 'DELETE', '/contacts/17').status"}, nil)
		if r.IsError || r.Content[0].(*mcp.TextContent).Text != "204" {
			t.Errorf("result %q", text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/17"); n != 1 {
			t.Errorf("DELETE ran %d times", n)
		}
	})

	t.Run("refusal", func(t *testing.T) {
		s := h.mcpSession("cs_test_ask", clientKind{name: "Plain Client"}, lt)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "16"}, nil)
		if text(r) != "Denied (requires_confirmation): Plain Client (MCP 2026-07-28) can show neither a confirmation dialog nor a card (it declared neither form elicitation nor MCP Apps)" {
			t.Errorf("result %q", text(r))
		}
	})
}
