package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/reqlog"
)

// TestLogCallLine: a call's line has the same fields it always had, the
// request id once (reqlog adds it to other lines), through any handler.
func TestLogCallLine(t *testing.T) {
	cred := &countersign.Credential{ID: "chat-user"}
	p := &prepared{Call: &Call{Connection: "crm", Method: "GET", Path: "/contacts/12"}}
	d := policy.Decision{Tier: policy.Auto, Rule: "connections/crm/policy.json endpoints[2]"}
	want := map[string]any{
		"level": "INFO", "msg": "call", "credential": "chat-user", "connection": "crm", "method": "GET",
		"path": "/contacts/12", "tier": "auto", "outcome": "executed", "code": "", "escalated": false,
		"rule": "connections/crm/policy.json endpoints[2]", "confirmation": "",
	}
	for _, id := range []string{"req-42", ""} {
		var buf bytes.Buffer
		s := &Service{Logger: reqlog.Logger(slog.New(slog.NewJSONHandler(&buf, nil)))}
		s.logCall(reqlog.With(context.Background(), id), cred, p, d, &Result{Outcome: Executed, Decision: d}, nil)
		if n := bytes.Count(buf.Bytes(), []byte(`"request_id"`)); id != "" && n != 1 {
			t.Errorf("request_id %d times: %s", n, buf.Bytes())
		}
		var got map[string]any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%v: %s", err, buf.Bytes())
		}
		if _, ok := got["time"].(string); !ok {
			t.Errorf("no time: %s", buf.Bytes())
		}
		delete(got, "time")
		w := maps.Clone(want)
		if id != "" {
			w["request_id"] = id
		}
		if !maps.Equal(got, w) {
			t.Errorf("request id %q: fields %v\nwant %v", id, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(w)))
			t.Errorf("line %s", buf.Bytes())
		}
	}
}

// TestLogCallAllocations bounds the work of a call's line at the default
// level (JSON at info, with a request id): the record's attributes past
// the fifth are its one allocation. Below the level it is free.
func TestLogCallAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	cred := &countersign.Credential{ID: "chat-user"}
	p := &prepared{Call: &Call{Connection: "crm", Method: "GET", Path: "/contacts/12"}}
	d := policy.Decision{Tier: policy.Auto, Rule: "connections/crm/policy.json endpoints[2]"}
	res := &Result{Outcome: Executed, Decision: d}
	ctx := reqlog.With(context.Background(), "0123456789abcdef")
	for _, tt := range []struct {
		level slog.Level
		max   float64
	}{{slog.LevelInfo, 1}, {slog.LevelError, 0}} {
		s := &Service{Logger: reqlog.Logger(slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: tt.level})))}
		if n := testing.AllocsPerRun(100, func() { s.logCall(ctx, cred, p, d, res, nil) }); n > tt.max {
			t.Errorf("level %v: %.0f allocations, want at most %.0f", tt.level, n, tt.max)
		}
	}
}
