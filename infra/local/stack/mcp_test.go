package stack

import (
	"strings"
	"testing"
)

func TestMCPSmoke(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_run", clientKind{}, nil)
	r := callTool(t, s, "crm__get_contacts_by_id", map[string]any{"id": "12"}, nil)
	if r.IsError || !strings.Contains(text(r), "200 OK") {
		t.Fatalf("result %q isError %v", text(r), r.IsError)
	}
}
