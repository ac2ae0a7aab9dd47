package mcpapi

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/fault"
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
