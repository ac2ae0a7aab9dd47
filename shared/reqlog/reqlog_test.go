package reqlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

func TestRequestIDOnEveryLine(t *testing.T) {
	var buf bytes.Buffer
	l := Logger(slog.New(slog.NewJSONHandler(&buf, nil))).With("fn", "gateway")
	ctx := With(context.Background(), "req-42")
	l.InfoContext(ctx, "call", "credential", "chat-user")
	l.WarnContext(ctx, "hook failed")
	l.Info("no context")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), buf.Bytes())
	}
	for i, want := range []string{"req-42", "req-42", ""} {
		var rec map[string]any
		if err := json.Unmarshal(lines[i], &rec); err != nil {
			t.Fatal(err)
		}
		got, _ := rec["request_id"].(string)
		if got != want || rec["fn"] != "gateway" {
			t.Errorf("line %d: request_id %q fn %v, want %q gateway", i, got, rec["fn"], want)
		}
	}
	if Logger(l) != l {
		t.Error("wrapping twice")
	}
}
