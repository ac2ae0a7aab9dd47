package mcpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/upstream"
)

// TestEditedResultTellsTheModel: a call a person edited before approving
// answers the model with what ran (text and structured content), whether
// it ran by redemption or as a task's stored outcome; an unedited one says
// nothing of edits.
func TestEditedResultTellsTheModel(t *testing.T) {
	c := &countersign.Confirmation{ID: "cf_1", Operations: []countersign.Operation{{
		Args:       countersign.Args{Body: json.RawMessage(`{"amount":900}`)},
		EditedCall: &countersign.EditedCall{Args: countersign.Args{Body: json.RawMessage(`{"amount":500}`)}, Binding: "b2"},
		Edited:     map[string]countersign.EditedField{"body.amount": {From: json.RawMessage("900"), To: json.RawMessage("500")}},
		Outcome:    &countersign.Outcome{Status: 201, Body: json.RawMessage(`{"id":"pay_1"}`)},
	}}}
	res := &calls.Result{Outcome: calls.Executed, Confirmation: c, Response: &upstream.Response{Status: 201, Header: http.Header{}, Body: []byte(`{"id":"pay_1"}`)}}
	for name, out := range map[string]*mcp.CallToolResult{"redemption": executedResult(res), "task": (&Handler{}).ranResult(context.Background(), c)} {
		var all strings.Builder
		for _, ct := range out.Content {
			all.WriteString(ct.(*mcp.TextContent).Text)
		}
		if !strings.Contains(all.String(), "A person edited this call before approving it (body.amount 900 → 500)") ||
			!strings.Contains(all.String(), `"body":{"amount":500}`) {
			t.Errorf("%s: the model reads %q", name, all.String())
		}
		v, ok := out.StructuredContent.(upstreamView)
		if !ok || !v.Edited || string(v.Arguments.Body) != `{"amount":500}` || string(v.Edits["body.amount"].To) != "500" {
			t.Errorf("%s: structured %+v", name, out.StructuredContent)
		}
	}
	c.Operations[0].EditedCall, c.Operations[0].Edited = nil, nil
	if out := executedResult(res); len(out.Content) != 1 || out.StructuredContent.(upstreamView).Edited {
		t.Errorf("an unedited call: %+v", out.Content)
	}
}
