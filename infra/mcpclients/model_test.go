package mcpclients

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedModel is a stand-in for the Anthropic Messages API on loopback
// (ANTHROPIC_BASE_URL), playing the model of a Claude Code session by a
// script: its first turn calls one tool, every later turn answers with
// text. It records what the model was sent, so a test can say what the
// model read and whether it called anything else. Requests that carry
// no tools (Claude Code's side requests: titles, summaries) get a short
// text and are not part of the conversation.
type scriptedModel struct {
	t    testing.TB
	tool string
	args map[string]any
	url  string

	mu sync.Mutex
	// turns are the conversation's requests, in order: each one's messages.
	turns [][]modelMessage
}

type modelMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func newScriptedModel(t testing.TB, tool string, args map[string]any) *scriptedModel {
	m := &scriptedModel{t: t, tool: tool, args: args}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		_ = json.NewEncoder(w).Encode(map[string]int{"input_tokens": 100})
		return
	}
	var req struct {
		Stream   bool           `json:"stream"`
		Messages []modelMessage `json:"messages"`
		Tools    []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hasTool := false
	for _, tl := range req.Tools {
		hasTool = hasTool || tl.Name == m.tool
	}
	if !hasTool {
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		m.t.Logf("model: a side request (tools %v)", names)
		m.reply(w, req.Stream, nil, "ok")
		return
	}
	m.mu.Lock()
	m.turns = append(m.turns, req.Messages)
	first := len(m.turns) == 1
	m.mu.Unlock()
	if first {
		m.reply(w, req.Stream, &toolUse{ID: "toolu_countersign_1", Name: m.tool, Input: m.args}, "")
		return
	}
	m.reply(w, req.Stream, nil, "Noted.")
}

type toolUse struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// reply answers one message: a tool call, or text.
func (m *scriptedModel) reply(w http.ResponseWriter, stream bool, call *toolUse, text string) {
	stop := "end_turn"
	var block map[string]any
	if call != nil {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": call.Input}
	} else {
		block = map[string]any{"type": "text", "text": text}
	}
	msg := map[string]any{"id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 10}}
	if !stream {
		msg["content"], msg["stop_reason"] = []any{block}, stop
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	msg["content"] = []any{}
	event("message_start", map[string]any{"type": "message_start", "message": msg})
	if call != nil {
		args, _ := json.Marshal(call.Input)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// lastMessage is the last message of the conversation's n-th request
// (from 1), as JSON; "" before that request.
func (m *scriptedModel) lastMessage(n int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n > len(m.turns) || len(m.turns[n-1]) == 0 {
		return ""
	}
	msgs := m.turns[n-1]
	return string(msgs[len(msgs)-1].Content)
}

// waitTurn waits (bounded) for the conversation's n-th request and
// returns its last message.
func (m *scriptedModel) waitTurn(t testing.TB, n int) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last := m.lastMessage(n); last != "" {
			return last
		}
	}
	t.Fatalf("the model got no request %d within 60 s", n)
	return ""
}
