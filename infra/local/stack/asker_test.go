package stack

import (
	"net/http"
	"strings"
	"testing"
)

// TestApprovalPageNamesTheAskingClient: the approval page shows the client
// that made this confirmation's call as it described itself then, not the
// client last seen with the key (another agent sharing it), and nothing in
// the agent's words when the call named no client.
func TestApprovalPageNamesTheAskingClient(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	pageOf := func(client map[string]string) string {
		t.Helper()
		args := map[string]any{"connection": "crm", "method": "POST", "path": "/contacts/4/archive", "intent": "write", "body": map[string]any{}}
		if client != nil {
			args["client"] = client
		}
		r := h.call("cs_test_ask", args)
		expect(t, r, http.StatusAccepted, "")
		page := h.do(http.MethodGet, h.approvalLink(r.str("confirmation.id")), "", nil, nil)
		expect(t, page, http.StatusOK, "")
		return string(page.body)
	}
	// Agent Two is recorded as the key's last client; Agent One asks within
	// the minute, so the key's last client stays Agent Two.
	pageOf(map[string]string{"name": "Agent Two", "version": "9"})
	one := pageOf(map[string]string{"name": "Agent One", "version": "1.0"})
	if !strings.Contains(one, "<bdi>Agent One 1.0</bdi>") || strings.Contains(one, "Agent Two") {
		t.Errorf("the page of Agent One's confirmation does not name Agent One:\n%s", one)
	}
	if none := pageOf(nil); strings.Contains(none, "The agent says it is") || strings.Contains(none, "Agent ") {
		t.Errorf("the page of a call without a client shows an agent's words:\n%s", none)
	}
}

// TestApprovalPageNamesTheScriptClient: a code-mode batch asked through
// MCP records the client that ran the script, whatever client the key
// saw last.
func TestApprovalPageNamesTheScriptClient(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	two := h.mcpSession("cs_test_ask", clientKind{name: "Agent Two", elicit: accept(true), manual: true}, nil)
	if r := runScript(t, two, `call('crm', 'GET', '/contacts/1').status`, "", nil); r.IsError {
		t.Fatalf("Agent Two's read: %q", text(r))
	}
	one := h.mcpSession("cs_test_ask", clientKind{name: "Agent One", elicit: accept(true), manual: true}, nil)
	if r := runScript(t, one, mcpBatchScript, "", nil); !r.NeedsInput() {
		t.Fatalf("Agent One's batch: %q, want an input request", text(r))
	}
	page := h.do(http.MethodGet, h.approvalLink(batchRequested(t, h)), "", nil, nil)
	expect(t, page, http.StatusOK, "")
	if body := string(page.body); !strings.Contains(body, "<bdi>Agent One") || strings.Contains(body, "Agent Two") {
		t.Errorf("the page of Agent One's batch does not name Agent One:\n%s", body)
	}
}
