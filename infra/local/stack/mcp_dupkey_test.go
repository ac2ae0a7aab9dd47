package stack

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMCPDuplicateKeyRefused: a message that names a key twice at any
// depth is refused with 400 and -32600 before the SDK reads it, so
// {"approve": false, "approve": true} cannot approve (encoding/json keeps
// the last); the same answer with the key once runs the DELETE once.
func TestMCPDuplicateKeyRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Hand Client", elicit: accept(true), manual: true}, nil)
	answer := func(content string) rawResult {
		first := callTool(t, s, "crm__deleteContact", map[string]any{"id": "11"}, nil)
		if !first.NeedsInput() {
			t.Fatalf("first call: %q, want an input request", text(first))
		}
		state, _ := json.Marshal(first.RequestState)
		return h.rawCall(rawMCP{key: "cs_test_ask", protocol: "2026-07-28", method: "tools/call",
			body: `{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "11"},
  "requestState": ` + string(state) + `, "inputResponses": {"confirm": {"action": "accept", "content": ` + content + `}}, ` + meta2026 + `}}`}, "crm__deleteContact")
	}
	r := answer(`{"approve": false, "approve": true}`)
	e, _ := r.json(t)["error"].(map[string]any)
	if r.status != http.StatusBadRequest || e == nil || e["code"] != float64(-32600) || !strings.Contains(e["message"].(string), `"approve" appears twice`) {
		t.Errorf("duplicate approve: %d %s", r.status, r.body)
	}
	if n := h.upstream.Count("DELETE", "/contacts/11"); n != 0 {
		t.Fatalf("duplicate approve: the DELETE ran %d times", n)
	}
	if r := answer(`{"approve": true}`); r.status != http.StatusOK || strings.Contains(r.body, `"isError":true`) {
		t.Errorf("approve once: %d %s", r.status, r.body)
	}
	if n := h.upstream.Count("DELETE", "/contacts/11"); n != 1 {
		t.Errorf("approve once: the DELETE ran %d times, want 1", n)
	}
}
