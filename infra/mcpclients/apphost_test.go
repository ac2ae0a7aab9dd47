package mcpclients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/mcpapi"
)

// appHostPage runs the bundled official host (apphost/host.js).
const appHostPage = `<!doctype html><html><head><meta charset="utf-8"><title>MCP Apps host</title></head>
<body><script src="/host.js"></script></body></html>`

// bundleAppHost bundles apphost/host.js and the ext-apps AppBridge it
// imports into one browser script, in a temporary directory, with the
// pinned esbuild.
func bundleAppHost(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "host.js")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join("node_modules", ".bin", "esbuild"), filepath.Join("apphost", "host.js"),
		"--bundle", "--format=iife", "--platform=browser", "--target=es2022", "--log-level=warning", "--outfile="+out)
	cmd.WaitDelay = 5 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild apphost/host.js: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appsSession is a client that declares MCP Apps with HTML views, on the
// demo key that asks the person in its own client.
func appsSession(t *testing.T, e *env) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(mcpapi.AppsExtension, map[string]any{"mimeTypes": []any{mcpapi.AppsMIMEType}})
	c := mcp.NewClient(&mcp.Implementation{Name: "countersign-test-host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	tr := &mcp.StreamableClientTransport{Endpoint: e.mcpURL, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: keyed{key: demoKey}, Timeout: 30 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keyed adds the key's Authorization header.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// forward makes the tools/call p on the session, bounded.
func forward(s *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.CallTool(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", p.Name, err)
	}
	return r, nil
}

// hostLog is what the host page recorded (window.hostLog).
type hostLog struct {
	Initialized bool     `json:"initialized"`
	Calls       []string `json:"calls"`
	Messages    []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	Contexts []json.RawMessage `json:"contexts"`
	Errors   []struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// TestCardInAppBridge: the confirmation card in the official MCP Apps host,
// the AppBridge of @modelcontextprotocol/ext-apps 2.0.4 in Chromium, the card
// an iframe from another origin in a sandbox. A confirm-tier DELETE pauses;
// the host renders review_pending's card, hands it the call's input and
// result, and forwards the card's tools/call to the stack. The card shows
// the contact under Now; Approve runs the DELETE once; the bridge accepts
// the card's ui/message (content an array of content blocks; it answers
// -32602 otherwise) and ui/update-model-context. When the host refuses the
// message (a JSON-RPC error, or a result with isError) the card says so.
// A person edits a payment's amount in the card (cardEditInAppBridge).
func TestCardInAppBridge(t *testing.T) {
	need(t)
	bin := chromiumPath(t)
	bundle := bundleAppHost(t)
	e := startStack(t)
	s := appsSession(t, e)

	card, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpapi.CardURI})
	if err != nil || len(card.Contents) != 1 || card.Contents[0].MIMEType != mcpapi.AppsMIMEType {
		t.Fatalf("resources/read %s: %v", mcpapi.CardURI, err)
	}
	// The card's own origin: another port is another origin, as a host's
	// sandbox domain is.
	cardSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, card.Contents[0].Text)
	}))
	t.Cleanup(cardSrv.Close)

	ctx := startBrowser(t, bin)
	t.Run("a person edits the amount", func(t *testing.T) { cardEditInAppBridge(t, ctx, bundle, cardSrv.URL) })
	for _, tc := range []struct {
		name, contact, who, refuse string
		// said is what the card must say after Approve ("" none).
		said string
	}{
		{name: "accepted", contact: "12", who: "John McCarthy <john.mccarthy@example.com>"},
		{name: "refused with an error", contact: "7", who: "Margaret Hamilton <margaret.hamilton@example.com>", refuse: "error",
			said: "The host did not take the message: this conversation is closed"},
		{name: "refused with isError", contact: "3", who: "Grace Hopper <grace.hopper@example.com>", refuse: "result",
			said: "The host did not take the message: it could not deliver it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/contacts/" + tc.contact
			args := map[string]any{"id": tc.contact}
			paused, err := forward(s, &mcp.CallToolParams{Name: "deleteContact", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := paused.StructuredContent.(map[string]any)
			id, _ := sc["confirmation_id"].(string)
			if id == "" {
				t.Fatalf("deleteContact did not pause: %+v", paused)
			}
			host, calls := newAppHost(t, s, bundle, id)

			sctx, cancel := context.WithTimeout(ctx, 45*time.Second)
			defer cancel()
			page := host.URL + "/?refuse=" + tc.refuse + "&card=" + url.QueryEscape(cardSrv.URL+"/card")
			var frames []*chromedp.Node
			var summary, now, said, logged string
			// in polls expr in the card's iframe, once it is found.
			in := func(expr string) chromedp.Action[string] {
				return func(ctx context.Context, tg *chromedp.Target) (string, error) {
					return chromedp.Poll[string](expr, chromedp.WithPollingInFrame(frames[0]), chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
				}
			}
			click := func(sel string) chromedp.Action[chromedp.Void] {
				return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
					return chromedp.Click(sel, chromedp.FromNode(frames[0]))(ctx, tg)
				}
			}
			// saying is the card's message once it says what happened: with
			// the outcome, and the host's refusal when it refuses.
			saying := `document.querySelector("p.state") && document.getElementById("message").innerText + "|"`
			if tc.refuse != "" {
				saying = `document.getElementById("message").innerText.includes("The host did not take") && document.getElementById("message").innerText`
			}
			steps := []struct {
				what string
				a    chromedp.Action[chromedp.Void]
			}{
				{"open the host", chromedp.Navigate(page)},
				{"the bridge is initialized", chromedp.Poll[chromedp.Void](`window.hostLog && (window.hostLog.initialized || window.hostLog.errors.length > 0)`)},
				{"the card's iframe", into(&frames, chromedp.Nodes("iframe#card"))},
				{"the card shows the confirmation", into(&summary, in(`!document.getElementById("actions").hidden && document.querySelector("p.summary").innerText`))},
				{"under Now", into(&now, in(`document.querySelector("h2.now ~ pre").innerText`))},
				{"approve", click("#approve")},
				{"the bridge answered the message", chromedp.Poll[chromedp.Void](`window.hostLog.answered.length > 0`)},
				{"the card says what happened", into(&said, in(saying))},
				{"the host's log", into(&logged, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`))},
			}
			for _, st := range steps {
				if err := chromedp.Do(sctx, st.a); err != nil {
					var l string
					_ = chromedp.Do(ctx, into(&l, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`)))
					t.Fatalf("%s: %v\nhost log: %s", st.what, err, l)
				}
				if st.what == "the card's iframe" && len(frames) != 1 {
					t.Fatalf("%d card iframes", len(frames))
				}
			}
			said = strings.TrimSuffix(said, "|")
			var log hostLog
			if err := json.Unmarshal([]byte(logged), &log); err != nil {
				t.Fatal(err)
			}
			t.Logf("card: %q; says %q; bridge errors: %+v", summary, said, log.Errors)

			if want := "Delete contact " + tc.contact + ", " + tc.who; summary != want {
				t.Errorf("the card shows %q, want %q", summary, want)
			}
			if !strings.Contains(now, `"open_payments"`) {
				t.Errorf("under Now:\n%s", now)
			}
			// The bridge answered the card with no error of its own (-32602
			// for params that do not match the MCP Apps types); the only
			// error is the host's refusal, when it refuses with one.
			for i, e := range log.Errors {
				if tc.refuse != "error" || i > 0 || e.Message != "this conversation is closed" {
					t.Errorf("the bridge answered the card with error %d %q", e.Code, e.Message)
				}
			}
			if tc.refuse == "error" && len(log.Errors) != 1 {
				t.Errorf("the host's refusal was not sent to the card: %+v", log.Errors)
			}
			if len(log.Messages) != 1 || log.Messages[0].Role != "user" || len(log.Messages[0].Content) != 1 {
				t.Fatalf("ui/message: %s", logged)
			}
			var block struct{ Type, Text string }
			if err := json.Unmarshal(log.Messages[0].Content[0], &block); err != nil || block.Type != "text" ||
				!strings.HasPrefix(block.Text, "Confirmation card: ") || !strings.Contains(block.Text, "204") {
				t.Errorf("ui/message content %s, want a text block with the outcome", log.Messages[0].Content[0])
			}
			if len(log.Contexts) != 1 {
				t.Errorf("%d model context updates, want 1", len(log.Contexts))
			}
			switch {
			case tc.said == "" && strings.Contains(said, "The host did not take"):
				t.Errorf("the card says %q though the host took everything", said)
			case tc.said != "" && !strings.Contains(said, tc.said):
				t.Errorf("the card says %q, want %q", said, tc.said)
			}
			if calls := calls(); len(calls) != 1 || calls[0] != mcpapi.ToolCardDecide || len(log.Calls) != 1 {
				t.Errorf("the card called %v (host log %v), want card_decide once", calls, log.Calls)
			}
			if n := e.upstreamCount("DELETE", path); n != 1 {
				t.Errorf("DELETE %s ran %d times, want once", path, n)
			}
		})
	}
}

// newAppHost serves the host page for the confirmation id: the bundled
// host script, review_pending's result as a host fetches it, and the
// card's tools/call forwarded to the stack over s. calls lists the tools
// the card called.
func newAppHost(t *testing.T, s *mcp.ClientSession, bundle []byte, id string) (host *httptest.Server, calls func() []string) {
	t.Helper()
	var mu sync.Mutex
	var called []string
	host = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, appHostPage)
		case "/host.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Write(bundle)
		case "/pending":
			in := map[string]any{"confirmation_id": id}
			res, err := forward(s, &mcp.CallToolParams{Name: mcpapi.ToolReviewPending, Arguments: in})
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"arguments": in, "result": res})
		case "/call":
			var p mcp.CallToolParams
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&p); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			called = append(called, p.Name)
			mu.Unlock()
			res, err := forward(s, &p)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_ = json.NewEncoder(w).Encode(res)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(host.Close)
	return host, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(called)
	}
}

// startBrowser is headless Chromium for the test, closed at its end.
func startBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 1600),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// into runs a into the variable dst.
func into[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v, err := a(ctx, tg)
		*dst = v
		return err
	})
}
