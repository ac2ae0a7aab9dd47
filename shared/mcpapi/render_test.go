package mcpapi

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// TestEveryCodeIsRendered: every code of package fault has an entry, and
// every denial reads "Denied (<code>): <reason>" with isError set.
func TestEveryCodeIsRendered(t *testing.T) {
	for _, code := range fault.All() {
		t.Run(string(code), func(t *testing.T) {
			label, ok := labelOf[code]
			if !ok {
				t.Fatalf("no entry for %s", code)
			}
			if code.Denial() != (label == labelDenied) {
				t.Errorf("%s is labelled %q, but Denial() is %v", code, label, code.Denial())
			}
			res := faultResult(code, "the reason")
			text := res.Content[0].(*mcp.TextContent).Text
			if want := label + " (" + string(code) + "): the reason"; text != want || !res.IsError {
				t.Errorf("rendered %q (isError %v), want %q", text, res.IsError, want)
			}
			if code.Denial() && !strings.HasPrefix(text, "Denied (") {
				t.Errorf("a denial reads %q", text)
			}
		})
	}
	if len(labelOf) != len(fault.All()) {
		t.Errorf("the table has %d entries for %d codes", len(labelOf), len(fault.All()))
	}
}

// TestClientNameBoundedInText: the client's name in the text the model
// reads (the paused notice of an older revision, the refusal of a client
// that can ask nobody) is cut to 64 runes and shows hidden characters as
// escapes.
func TestClientNameBoundedInText(t *testing.T) {
	c := Client{Name: "Evil\u202eClient " + strings.Repeat("x", 300), Protocol: "2025-11-25\u202e"}
	paused := approversNotice(&calls.Result{Confirmation: &countersign.Confirmation{ID: "cf_1"}, Decision: policy.Decision{Reason: "r"}}, c)
	for name, text := range map[string]string{"paused": paused.Content[0].(*mcp.TextContent).Text, "refusal": c.cannotAsk()} {
		if strings.ContainsRune(text, '\u202e') || strings.Contains(text, strings.Repeat("x", 60)) {
			t.Errorf("%s: the name is raw or unbounded: %q", name, text)
		}
		if want := `Evil\u202EClient ` + strings.Repeat("x", 64-len(`Evil\u202EClient `)) + "…"; !strings.Contains(text, want) {
			t.Errorf("%s: %q lacks %q", name, text, want)
		}
		if !strings.Contains(text, `2025-11-25\u202E`) {
			t.Errorf("%s: the protocol is not escaped: %q", name, text)
		}
	}
}
