package stack

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/display"
)

// overrideArgs is a payment whose account reads ACME-5678-1234 when its
// bytes are drawn as they are.
var overrideArgs = map[string]any{"body": map[string]any{"to_account": "ACME-\u202e4321-8765\u202c", "amount": 5}}

// shown fails if text holds a hidden character as it is, or lacks the
// override as escapes.
func shown(t *testing.T, what, text string) {
	t.Helper()
	if !strings.Contains(text, `ACME-\u202E4321-8765\u202C`) {
		t.Errorf("%s does not show the override as escapes:\n%s", what, text)
	}
	for _, r := range text {
		if display.Hidden(r) && r != '\n' {
			t.Errorf("%s holds U+%04X as it is:\n%s", what, r, text)
		}
	}
}

// TestDisplayInMCP: the MCP form a client shows the person, and the MCP
// Apps card, show the override in the arguments as escapes.
func TestDisplayInMCP(t *testing.T) {
	t.Run("form elicitation", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		var asked []*mcp.ElicitParams
		s := h.mcpSession("cs_test_ask", clientKind{elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params)
			return decline(r)
		}}, nil)
		callTool(t, s, "crm__post_payments", overrideArgs, nil)
		if len(asked) != 1 {
			t.Fatalf("asked %d times", len(asked))
		}
		shown(t, "the form's message", asked[0].Message)
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})
	t.Run("card", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		s := h.mcpSession("cs_test_ask", clientKind{apps: true}, nil)
		r := callTool(t, s, "crm__post_payments", overrideArgs, nil)
		id, _ := structured(t, r)["confirmation_id"].(string)
		rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
		ops, _ := structured(t, rp)["operations"].([]any)
		if len(ops) != 1 {
			t.Fatalf("card operations %v", structured(t, rp))
		}
		args, _ := ops[0].(map[string]any)["args"].(string)
		shown(t, "the card's arguments", args)
	})
}
