package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/notify"
)

// cardHost is a host page for the card, as an MCP Apps host embeds it:
// the card in an iframe, its JSON-RPC over postMessage. It answers
// ui/initialize, hands the card the review_pending result, forwards
// tools/call to the test's MCP session, refuses ui/update-model-context
// (so the card must say so), and takes ui/message only with content as
// an array of content blocks, as the MCP Apps types want it (-32602
// otherwise, as the official bridge answers).
const cardHostPage = `<!doctype html><html><body>
<iframe id="card" style="width:800px;height:1400px"></iframe>
<script>
var frame = document.getElementById("card");
window.messages = [];
function reply(id, result, error) {
  var m = {jsonrpc: "2.0", id: id};
  if (error) m.error = error; else m.result = result;
  frame.contentWindow.postMessage(m, "*");
}
window.addEventListener("message", function (ev) {
  if (ev.source !== frame.contentWindow) return;
  var m = ev.data;
  switch (m.method) {
  case "ui/initialize":
    reply(m.id, {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"}, hostCapabilities: {}, hostContext: {}});
    break;
  case "ui/notifications/initialized":
    fetch("/pending").then(function (r) { return r.json(); }).then(function (res) {
      frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: res}, "*");
    });
    break;
  case "tools/call":
    fetch("/call", {method: "POST", body: JSON.stringify(m.params)}).then(function (r) { return r.json(); }).then(function (res) { reply(m.id, res); });
    break;
  case "ui/update-model-context":
    reply(m.id, null, {code: -32601, message: "this host keeps no model context"});
    break;
  case "ui/message":
    window.messages.push(m.params);
    if (!Array.isArray(m.params.content)) reply(m.id, null, {code: -32602, message: "content: expected array"});
    else reply(m.id, {});
    break;
  }
});
fetch("/card").then(function (r) { return r.text(); }).then(function (html) { frame.srcdoc = html; });
</script></body></html>`

// TestShowCardInBrowser: the card, in a host page in Chromium, shows the
// contact under Now and what will happen in words; Approve runs it once,
// the card posts the outcome to the conversation as an array of content
// blocks, and says so when the host refuses the model context update.
func TestShowCardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts chromium")
	}
	bin := chromium(t)
	shots := artifacts(t)
	h := showHarness(t)
	s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
	r := callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	h.webhook.waitEvent(t, notify.TypeRequested, id)
	res, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpapi.CardURI})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read card: %v", err)
	}
	var mu sync.Mutex
	var calls []string
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, cardHostPage)
		case "/card":
			io.WriteString(w, res.Contents[0].Text)
		case "/pending":
			rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
			_ = json.NewEncoder(w).Encode(rp)
		case "/call":
			var p mcp.CallToolParams
			_ = json.NewDecoder(req.Body).Decode(&p)
			mu.Lock()
			calls = append(calls, p.Name)
			mu.Unlock()
			_ = json.NewEncoder(w).Encode(callToolParams(t, s, &p, nil))
		}
	}))
	defer host.Close()

	ctx := startChrome(t, bin, shots).ctx
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const doc = `document.getElementById("card").contentDocument`
	var summary, now, message, posted string
	var shot []byte
	var clicked bool
	err = chromedp.Do(sctx, chromedp.Navigate(host.URL+"/"),
		poll(`!!`+doc+` && !!`+doc+`.querySelector("h2.now") && !`+doc+`.getElementById("actions").hidden`),
		into(&summary, chromedp.Evaluate[string](doc+`.querySelector("p.summary").innerText`)),
		into(&now, chromedp.Evaluate[string](doc+`.querySelector("h2.now ~ pre").innerText`)),
		into(&shot, chromedp.FullScreenshot(100)),
		into(&clicked, chromedp.Evaluate[bool](doc+`.getElementById("approve").click() || true`)),
		poll(`window.messages.length > 0 && !`+doc+`.getElementById("message").hidden`),
		into(&message, chromedp.Evaluate[string](doc+`.getElementById("message").innerText`)),
		into(&posted, chromedp.Evaluate[string](`JSON.stringify(window.messages)`)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("card shot: %d bytes", len(shot))
	if summary != "Delete contact 12, John McCarthy <john.mccarthy@example.com>" || !strings.Contains(now, `"inv_103"`) {
		t.Errorf("the card shows %q and under Now:\n%s", summary, now)
	}
	if !strings.HasPrefix(posted, `[{"role":"user","content":[{"type":"text","text":"Confirmation card: `) || !strings.Contains(posted, "ran: the upstream answered 204") {
		t.Errorf("ui/message params %s, want content as an array of text blocks with the outcome", posted)
	}
	if !strings.Contains(message, "The host did not take the outcome for the model: this host keeps no model context") {
		t.Errorf("the card says %q, want the host's refusal", message)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0] != "card_decide" {
		t.Errorf("the card called %v", calls)
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}
