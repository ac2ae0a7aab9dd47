package mcpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
)

func TestScriptToolDescribesTheLimits(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	h.o.Calls.Current().Settings.Scripts = config.Scripts{TimeLimitMS: 2000, MaxCalls: 7, MaxScriptBytes: 4096, MaxResultBytes: 8192, MemoryMiB: 16}
	tool := h.scriptTool(&countersign.Credential{ID: "chat-user"})
	for _, want := range []string{"against Acme's APIs", "Connections: crm.", "2000 ms, 7 calls, scripts up to 4096 bytes, results up to 8192 bytes, 16 MiB"} {
		if !strings.Contains(tool.Description, want) {
			t.Errorf("description lacks %q: %s", want, tool.Description)
		}
	}
	if tool.Name != ToolRunScript || tool.Annotations == nil || tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint {
		t.Errorf("tool %+v", tool)
	}
}

// TestSpentAnswer: an answer whose batch is no longer pending decides and
// runs nothing, and says why.
func TestSpentAnswer(t *testing.T) {
	decided := t0
	ans := &Answer{ID: "cf_1", By: "client:Claude Code"}
	tests := []struct {
		name      string
		c         countersign.Confirmation
		effective countersign.Status
		want      fault.Code
	}{
		{"decided by this answer before", countersign.Confirmation{ID: "cf_1", DecidedAt: &decided, DecidedBy: "client:Claude Code"}, countersign.StatusExecuted, fault.ConfirmationUsed},
		{"decided by an approver first", countersign.Confirmation{ID: "cf_1", DecidedAt: &decided, DecidedBy: "ops"}, countersign.StatusRejected, fault.ConfirmationDecided},
		{"decided in the card first", countersign.Confirmation{ID: "cf_1", DecidedAt: &decided, DecidedBy: "card"}, countersign.StatusApproved, fault.ConfirmationDecided},
		{"expired undecided", countersign.Confirmation{ID: "cf_1", ExpiresAt: t0.Add(-time.Minute)}, countersign.StatusExpired, fault.ConfirmationExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := spentAnswer(&tt.c, tt.effective, ans)
			v, _ := r.StructuredContent.(faultView)
			if !r.IsError || v.Code != string(tt.want) || !strings.Contains(v.Reason, "cf_1") {
				t.Errorf("result %+v, want %s", v, tt.want)
			}
		})
	}
}

func TestSameBindings(t *testing.T) {
	ops := []countersign.Operation{{Binding: "a"}, {Binding: "b"}}
	for _, c := range []struct {
		binds []string
		want  bool
	}{{[]string{"a", "b"}, true}, {[]string{"b", "a"}, false}, {[]string{"a"}, false}, {[]string{"a", "b", "c"}, false}} {
		if got := sameBindings(ops, c.binds); got != c.want {
			t.Errorf("sameBindings(%v) = %v, want %v", c.binds, got, c.want)
		}
	}
}

// TestSameSeen: a batch's answer stands only when the question showed
// each resource as the batch stores it for the recheck.
func TestSameSeen(t *testing.T) {
	read := func(sum, etag string) *countersign.Current {
		return &countersign.Current{Status: 200, SHA256: sum, ETag: etag}
	}
	failed := &countersign.Current{Error: "no answer within 5s"}
	for _, c := range []struct {
		name   string
		stored []*countersign.Current
		seen   []*countersign.Current
		want   bool
	}{
		{"the same reads", []*countersign.Current{read("a", ""), read("b", `"1"`)}, []*countersign.Current{read("a", ""), read("b", `"1"`)}, true},
		{"nothing read, nothing shown", []*countersign.Current{nil, failed}, nil, true},
		{"one without a read", []*countersign.Current{read("a", ""), nil}, []*countersign.Current{read("a", ""), nil}, true},
		{"another body", []*countersign.Current{read("a", "")}, []*countersign.Current{read("b", "")}, false},
		{"another etag", []*countersign.Current{read("a", `"1"`)}, []*countersign.Current{read("a", `"2"`)}, false},
		{"another status", []*countersign.Current{read("a", "")}, []*countersign.Current{{Status: 404, SHA256: "a"}}, false},
		{"shown, not stored", []*countersign.Current{nil}, []*countersign.Current{read("a", "")}, false},
		{"stored, not shown", []*countersign.Current{read("a", "")}, nil, false},
		{"stored, shown failed", []*countersign.Current{read("a", ""), read("b", "")}, []*countersign.Current{read("a", ""), nil}, false},
		{"fewer shown", []*countersign.Current{read("a", ""), nil}, []*countersign.Current{read("a", "")}, false},
	} {
		ops := make([]countersign.Operation, len(c.stored))
		for i, cur := range c.stored {
			ops[i].Current = cur
		}
		if got := sameSeen(ops, c.seen); got != c.want {
			t.Errorf("%s: sameSeen = %v, want %v", c.name, got, c.want)
		}
	}
}
