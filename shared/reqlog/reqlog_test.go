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

// TestRequestIDNotTwice: a record that carries the request id already
// (the call's line adds it itself) is passed as it is.
func TestRequestIDNotTwice(t *testing.T) {
	var buf bytes.Buffer
	l := Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx := With(context.Background(), "req-42")
	l.LogAttrs(ctx, slog.LevelInfo, "call", slog.String("credential", "chat-user"), slog.String(Attr, "req-42"))
	if n := bytes.Count(buf.Bytes(), []byte(`"request_id":"req-42"`)); n != 1 {
		t.Errorf("request_id %d times: %s", n, buf.Bytes())
	}
}
