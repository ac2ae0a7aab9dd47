package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/notify"
)

// mcpBatchScript reads a contact and deletes two (confirm tier).
const mcpBatchScript = `
const a = call('crm', 'GET', '/contacts/1');
const d3 = call('crm', 'DELETE', '/contacts/3');
const d4 = call('crm', 'DELETE', '/contacts/4');
console.log('read', a.body.name);
({name: a.body.name, d3, d4})`

// runScript calls run_script.
func runScript(tb testing.TB, s *mcp.ClientSession, src, confirmationID string, sn *seen) *mcp.CallToolResult {
	tb.Helper()
	args := map[string]any{"script": src}
	if confirmationID != "" {
		args["confirmation_id"] = confirmationID
	}
	return callTool(tb, s, mcpapi.ToolRunScript, args, sn)
}

// wantCounts fails unless the upstream saw each "METHOD /path" as often as given.
func wantCounts(tb testing.TB, h *harness, want map[string]int) {
	tb.Helper()
	for line, n := range want {
		method, path, _ := strings.Cut(line, " ")
		if got := h.upstream.Count(method, path); got != n {
			tb.Errorf("upstream saw %s %d times, want %d", line, got, n)
		}
	}
}

// batchRequested waits for the first confirmation.requested event and
// returns its confirmation id (an input request does not name its batch).
func batchRequested(tb testing.TB, h *harness) string {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		h.webhook.mu.Lock()
		for _, ev := range h.webhook.events {
			if ev.Type == notify.TypeRequested {
				h.webhook.mu.Unlock()
				return ev.Confirmation.ID
			}
		}
		h.webhook.mu.Unlock()
	}
	tb.Fatal("no confirmation.requested event")
	return ""
}

// resultOf decodes a run_script result's structured "result".
func resultOf(tb testing.TB, r *mcp.CallToolResult) any {
	tb.Helper()
	return structured(tb, r)["result"]
}

// TestMCPRunScript: a script that completes returns its result as text and
// its run as structured content; a failing script is an error with its
// line and column; the credential's choice applies inside the script.
func TestMCPRunScript(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	run := h.mcpSession("cs_test_run", clientKind{}, nil)

	tools := listTools(t, run)
	tool := tools[mcpapi.ToolRunScript]
	if tool == nil {
		t.Fatalf("run_script is not listed: %v", names(tools))
	}
	schema, _ := json.Marshal(tool.InputSchema)
	for _, want := range []string{`"required":["script"]`, `"confirmation_id":{`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("schema %s lacks %s", schema, want)
		}
	}
	for _, want := range []string{"call(connection, method, path, {query, body})", "{pending: true}", "Connections: billing, crm, hooked",
		"5000 ms, 100 calls", "65536 bytes"} {
		if !strings.Contains(tool.Description, want) {
			t.Errorf("description lacks %q: %s", want, tool.Description)
		}
	}

	r := runScript(t, run, "const c = call('crm', 'GET', '/contacts/1'); console.log('hi'); ({name: c.body.name, status: c.status})", "", nil)
	sc := structured(t, r)
	if r.IsError || r.Content[0].(*mcp.TextContent).Text != `{"name":"Ada Lovelace","status":200}` || sc["status"] != "completed" {
		t.Fatalf("completed: %q %v", text(r), sc)
	}
	if calls, _ := sc["calls"].([]any); len(calls) != 1 || calls[0].(map[string]any)["state"] != "ran" {
		t.Errorf("calls %v", sc["calls"])
	}
	if !cmp.Equal(sc["logs"], []any{"hi"}) || len(r.Content) != 2 || r.Content[1].(*mcp.TextContent).Text != "Logs:\nhi" {
		t.Errorf("logs %v, content %d blocks", sc["logs"], len(r.Content))
	}

	r = runScript(t, run, "const x = 1;\nx.first.second", "", nil)
	if sc := structured(t, r); !r.IsError || !strings.HasPrefix(text(r), "Error (script_error): ") || !strings.Contains(text(r), "(line 2, column") ||
		sc["code"] != "script_error" || sc["line"] != 2.0 {
		t.Errorf("script error: %q %v", text(r), sc)
	}

	for _, c := range []struct {
		key, want string
		runs      int
	}{
		{"cs_test_refuse", `{"denied":true,"code":"requires_confirmation"`, 0},
		{"cs_test_agent", `{"status":204`, 1},
	} {
		h.upstream.Reset()
		r := runScript(t, h.mcpSession(c.key, clientKind{}, nil), "call('crm', 'DELETE', '/contacts/5')", "", nil)
		if r.IsError || !strings.HasPrefix(text(r), c.want) {
			t.Errorf("%s: %q", c.key, text(r))
		}
		wantCounts(t, h, map[string]int{"DELETE /contacts/5": c.runs})
	}
}

// TestMCPRunScriptElicitation: a client with form elicitation is asked
// about the script's batch in its own dialog, one checkbox per operation;
// the retried call decides the batch, the script runs again, and its
// result comes back. Nothing runs twice.
func TestMCPRunScriptElicitation(t *testing.T) {
	t.Run("accept one, clear the other", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		var sn seen
		var asked []*mcp.ElicitParams
		s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": true, "op1": false}}, nil
		}}, nil)
		r := runScript(t, s, mcpBatchScript, "", &sn)
		if len(asked) != 1 {
			t.Fatalf("asked %d times", len(asked))
		}
		msg := asked[0].Message
		for _, want := range []string{"Approve 2 operations?", "1. DELETE /contacts/3 on crm", `{"body":null,"path":{"id":"3"},"query":{}}`,
			"2. DELETE /contacts/4 on crm", `{"body":null,"path":{"id":"4"},"query":{}}`} {
			if !strings.Contains(msg, want) {
				t.Errorf("the dialog lacks %q:\n%s", want, msg)
			}
		}
		props, _ := json.Marshal(asked[0].RequestedSchema)
		for _, want := range []string{`"op0":{"default":true`, `"op1":{"default":true`} {
			if !strings.Contains(string(props), want) {
				t.Errorf("schema %s lacks %s", props, want)
			}
		}
		want := map[string]any{"name": "Ada Lovelace", "d3": map[string]any{"status": 204.0, "body": nil}, "d4": map[string]any{"rejected": true}}
		if diff := cmp.Diff(want, resultOf(t, r)); r.IsError || diff != "" {
			t.Fatalf("result %q (-want +got):\n%s", text(r), diff)
		}
		sc := structured(t, r)
		id, _ := sc["confirmation_id"].(string)
		if sc["status"] != "completed" || id == "" {
			t.Errorf("structured %v", sc)
		}
		var states []string
		for _, c := range sc["calls"].([]any) {
			states = append(states, c.(map[string]any)["state"].(string))
		}
		if diff := cmp.Diff([]string{"replayed", "ran", "rejected"}, states); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 1, "DELETE /contacts/4": 0})
		for _, rq := range h.upstream.Requests() {
			if rq.Method == "DELETE" && rq.IdempotencyKey != id+":0" {
				t.Errorf("the approved delete went with Idempotency-Key %q", rq.IdempotencyKey)
			}
		}
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
		if st.str("status") != "executed" || st.str("kind") != "script" {
			t.Errorf("status %s", st.body)
		}
		// The workflow's Execute task ran too: still once each.
		h.webhook.waitEvent(t, notify.TypeExecuted, id)
		time.Sleep(200 * time.Millisecond)
		wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 1, "DELETE /contacts/4": 0})
		// Resubmitting with the id returns the stored result.
		again := runScript(t, s, mcpBatchScript, id, &sn)
		if diff := cmp.Diff(want, resultOf(t, again)); again.IsError || diff != "" {
			t.Errorf("resubmission %q (-want +got):\n%s", text(again), diff)
		}
		wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 1})
		assertNoSecrets(t, h, sn.all(), id)
	})

	t.Run("declined runs nothing", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		for _, answer := range []func(*mcp.ElicitRequest) (*mcp.ElicitResult, error){
			decline,
			func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": false, "op1": false}}, nil
			},
		} {
			h.upstream.Reset()
			r := runScript(t, h.mcpSession("cs_test_ask", clientKind{elicit: answer}, nil), mcpBatchScript, "", nil)
			if !r.IsError || !strings.HasPrefix(text(r), "Denied (confirmation_rejected): the person declined the script's 2 calls") {
				t.Errorf("declined: %q", text(r))
			}
			id, _ := structured(t, r)["confirmation_id"].(string)
			if st := h.statusOf("cs_test_ask", id); st != "rejected" {
				t.Errorf("the batch is %s", st)
			}
			time.Sleep(100 * time.Millisecond)
			wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 0})
		}
	})

	t.Run("the state decides once, and is refused when altered, foreign or for another script", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		var sn seen
		s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: accept(true), manual: true}, nil)
		other := h.mcpSession("cs_test_ask2", clientKind{elicit: accept(true), manual: true}, nil)
		first := runScript(t, s, mcpBatchScript, "", nil)
		if !first.NeedsInput() || first.RequestState == "" {
			t.Fatalf("first call: %+v, want an input request", first)
		}
		if n := h.upstream.Count("GET", "/contacts/1"); n != 1 {
			t.Fatalf("the first run read %d times", n)
		}
		answers := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": true, "op1": true}}}
		retry := func(sess *mcp.ClientSession, tool string, args map[string]any, state string) *mcp.CallToolResult {
			return callToolParams(t, sess, &mcp.CallToolParams{Name: tool, Arguments: args, RequestState: state, InputResponses: answers}, &sn)
		}
		same := map[string]any{"script": mcpBatchScript}
		altered := []byte(first.RequestState)
		altered[strings.LastIndexByte(first.RequestState, '.')-3] ^= 1
		// A state an operation tool was given.
		del := callTool(t, s, "crm__deleteContact", map[string]any{"id": "9"}, nil)
		for _, c := range []struct {
			name  string
			sess  *mcp.ClientSession
			tool  string
			args  map[string]any
			state string
			want  string
		}{
			{"altered", s, mcpapi.ToolRunScript, same, string(altered), "Denied (bad_signature): "},
			{"another credential", other, mcpapi.ToolRunScript, same, first.RequestState, "Denied (confirmation_mismatch): the requestState was issued to another credential"},
			{"another script", s, mcpapi.ToolRunScript, map[string]any{"script": mcpBatchScript + ";1"}, first.RequestState, "Denied (confirmation_mismatch): "},
			{"another tool's state", s, mcpapi.ToolRunScript, same, del.RequestState, "Denied (confirmation_mismatch): the requestState was issued for the tool \"crm__deleteContact\""},
			{"the script's state on a tool", s, "crm__deleteContact", map[string]any{"id": "3"}, first.RequestState, "Denied (confirmation_mismatch): "},
		} {
			if r := retry(c.sess, c.tool, c.args, c.state); !r.IsError || !strings.HasPrefix(text(r), c.want) {
				t.Errorf("%s: %q, want %q...", c.name, text(r), c.want)
			}
		}
		if n := h.upstream.Count("DELETE", "/contacts/3") + h.upstream.Count("DELETE", "/contacts/4"); n != 0 {
			t.Fatalf("a delete ran %d times before a valid answer", n)
		}

		// The accepted call, retried three times: decided and run once.
		r := retry(s, mcpapi.ToolRunScript, same, first.RequestState)
		want := map[string]any{"name": "Ada Lovelace", "d3": map[string]any{"status": 204.0, "body": nil}, "d4": map[string]any{"status": 204.0, "body": nil}}
		if diff := cmp.Diff(want, resultOf(t, r)); r.IsError || diff != "" {
			t.Fatalf("accepted: %q (-want +got):\n%s", text(r), diff)
		}
		id, _ := structured(t, r)["confirmation_id"].(string)
		for range 2 {
			again := retry(s, mcpapi.ToolRunScript, same, first.RequestState)
			if !again.IsError || !strings.HasPrefix(text(again), "Refused (confirmation_used): the answer to "+id+" was already used") ||
				!strings.Contains(text(again), `"confirmation_id": "`+id+`"`) {
				t.Errorf("replayed state: %q", text(again))
			}
		}
		time.Sleep(200 * time.Millisecond)
		wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 1, "DELETE /contacts/4": 1})
		assertNoSecrets(t, h, sn.all(), id)
	})
}

// TestMCPRunScriptAskAgain: run_script with the confirmation id of a
// pending batch asks again the way the client can; the batch is still
// decided once.
func TestMCPRunScriptAskAgain(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: accept(true), manual: true}, nil)
	first := runScript(t, s, mcpBatchScript, "", nil)
	id := batchRequested(t, h)
	if !first.NeedsInput() || id == "" {
		t.Fatalf("first call: %+v (batch %q)", first, id)
	}
	card := runScript(t, h.mcpSession("cs_test_ask", clientKind{apps: true}, nil), mcpBatchScript, id, nil)
	if !strings.Contains(text(card), "review_pending") || structured(t, card)["confirmation_id"] != id {
		t.Errorf("asked again with a card: %q", text(card))
	}
	again := runScript(t, s, mcpBatchScript, id, nil)
	if !again.NeedsInput() {
		t.Fatalf("asked again: %+v", again)
	}
	answers := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": false, "op1": true}}}
	r := callToolParams(t, s, &mcp.CallToolParams{Name: mcpapi.ToolRunScript, Arguments: map[string]any{"script": mcpBatchScript, "confirmation_id": id},
		RequestState: again.RequestState, InputResponses: answers}, nil)
	if got := resultOf(t, r); r.IsError || !cmp.Equal(got, map[string]any{"name": "Ada Lovelace", "d3": map[string]any{"rejected": true},
		"d4": map[string]any{"status": 204.0, "body": nil}}) {
		t.Fatalf("answered: %q", text(r))
	}
	old := callToolParams(t, s, &mcp.CallToolParams{Name: mcpapi.ToolRunScript, Arguments: map[string]any{"script": mcpBatchScript},
		RequestState: first.RequestState, InputResponses: answers}, nil)
	if !strings.HasPrefix(text(old), "Refused (confirmation_used): ") {
		t.Errorf("the first question's state: %q", text(old))
	}
	time.Sleep(200 * time.Millisecond)
	wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 1})
}

// TestMCPRunScriptConcurrentAnswers: the same answer sent many times at
// once decides the batch once and runs the script's approved calls once;
// every other use is refused.
func TestMCPRunScriptConcurrentAnswers(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: accept(true), manual: true}, nil)
	first := runScript(t, s, mcpBatchScript, "", nil)
	if !first.NeedsInput() {
		t.Fatalf("first call: %+v, want an input request", first)
	}
	const n = 6
	texts := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// The SDK writes to the params it sends: one each.
			p := &mcp.CallToolParams{Name: mcpapi.ToolRunScript, Arguments: map[string]any{"script": mcpBatchScript}, RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": true, "op1": true}}}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := s.CallTool(ctx, p)
			if err != nil {
				texts <- "call: " + err.Error()
				return
			}
			texts <- text(r)
		})
	}
	wg.Wait()
	close(texts)
	ran, refused := 0, 0
	for tx := range texts {
		switch {
		case strings.HasPrefix(tx, `{"name":"Ada Lovelace"`):
			ran++
		case strings.HasPrefix(tx, "Refused (confirmation_used): "):
			refused++
		default:
			t.Errorf("answer %q", tx)
		}
	}
	if ran != 1 || refused != n-1 {
		t.Errorf("%d answers ran the script and %d were refused, want 1 and %d", ran, refused, n-1)
	}
	time.Sleep(200 * time.Millisecond)
	wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 1, "DELETE /contacts/4": 1})
}

// TestMCPRunScriptCard: a client that renders MCP Apps gets the paused
// notice; the card lists the batch (30 minutes), and Approve runs the
// script again in the gateway: the kept delete once, and the card and the
// model get the script's result.
func TestMCPRunScriptCard(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var sn seen
	s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
	r := runScript(t, s, mcpBatchScript, "", &sn)
	sc := structured(t, r)
	id, _ := sc["confirmation_id"].(string)
	if r.IsError || id == "" || sc["status"] != "confirmation_required" || !strings.Contains(text(r), "review_pending") ||
		!strings.Contains(text(r), "DELETE /contacts/3 on crm\nDELETE /contacts/4 on crm") {
		t.Fatalf("paused notice %q %v", text(r), sc)
	}
	rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn)
	card := structured(t, rp)
	if card["title"] != "Approve 2 operations?" || card["kind"] != "script" || card["state"] != "pending" || card["seconds_left"].(float64) < 1790 {
		t.Errorf("card %v", card)
	}
	token := cardToken(t, rp)
	wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 0})

	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve", "operations": []int{1}}, nil)
	want := map[string]any{"name": "Ada Lovelace", "d3": map[string]any{"rejected": true}, "d4": map[string]any{"status": 204.0, "body": nil}}
	dc := structured(t, d)
	if diff := cmp.Diff(want, dc["result"]); d.IsError || dc["status"] != "executed" || diff != "" {
		t.Fatalf("approve: %q %v (-want +got):\n%s", text(d), dc, diff)
	}
	if !strings.Contains(text(d), `The script's result: {"name":"Ada Lovelace","d3":{"rejected":true}`) || !strings.Contains(text(d), "DELETE /contacts/4 on crm: ran: the upstream answered 204") {
		t.Errorf("the card's text %q", text(d))
	}
	if again := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve"}, nil); !strings.HasPrefix(text(again), "Refused (confirmation_decided)") {
		t.Errorf("second approve: %q", text(again))
	}
	// The model reads the same outcome, in review_pending and run_script.
	after := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn)
	if diff := cmp.Diff(want, structured(t, after)["result"]); diff != "" || after.Meta[mcpapi.MetaCard] != nil {
		t.Errorf("review_pending after: %q (-want +got):\n%s", text(after), diff)
	}
	if res := runScript(t, s, mcpBatchScript, id, &sn); !cmp.Equal(want, resultOf(t, res)) {
		t.Errorf("run_script with the id: %q", text(res))
	}
	time.Sleep(200 * time.Millisecond)
	wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 1})
	assertNoSecrets(t, h, sn.all(), id, token)

	// Reject all: the script is not run again, nothing it collected runs.
	h.upstream.Reset()
	r = runScript(t, s, mcpBatchScript, "", &sn)
	id, _ = structured(t, r)["confirmation_id"].(string)
	token = cardToken(t, callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn))
	d = callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "reject"}, nil)
	if structured(t, d)["status"] != "rejected" || !strings.Contains(text(d), "Rejected; nothing ran") {
		t.Errorf("reject: %q", text(d))
	}
	if res := runScript(t, s, mcpBatchScript, id, &sn); !strings.HasPrefix(text(res), "Denied (confirmation_rejected): ") {
		t.Errorf("run_script with the id after a rejection: %q", text(res))
	}
	time.Sleep(200 * time.Millisecond)
	wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 0})
	assertNoSecrets(t, h, sn.all(), id, token)
}

// TestMCPRunScriptRefusal: a client that can ask nobody has the calls
// that need a person denied inside the script (the refusal text, nothing
// run, nothing pending); calls on an out_of_band_only connection pause for
// the approvers whatever the client, and the model reads the result once
// they approve.
func TestMCPRunScriptRefusal(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/vault/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"out_of_band_only": true}
}`}})

	t.Run("neither a dialog nor a card", func(t *testing.T) {
		var sn seen
		s := h.mcpSession("cs_test_ask", clientKind{name: "Plain Client"}, nil)
		r := runScript(t, s, mcpBatchScript, "", &sn)
		const denial = "Denied (requires_confirmation): Plain Client (MCP 2026-07-28) can show neither a confirmation dialog nor a card (it declared neither form elicitation nor MCP Apps)\n"
		sc := structured(t, r)
		if !r.IsError || !strings.HasPrefix(text(r), denial) || sc["code"] != "requires_confirmation" || sc["confirmation_id"] != nil {
			t.Errorf("result %q %v", text(r), sc)
		}
		d3, _ := resultOf(t, r).(map[string]any)["d3"].(map[string]any)
		if d3["denied"] != true || d3["reason"] != "DELETE /contacts/{id} requires confirmation, and Plain Client (MCP 2026-07-28) can show neither a confirmation dialog nor a card (it declared neither form elicitation nor MCP Apps)" {
			t.Errorf("d3 %v", d3)
		}
		wantCounts(t, h, map[string]int{"GET /contacts/1": 1, "DELETE /contacts/3": 0, "DELETE /contacts/4": 0})
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(h.console.String(), "needs approval") {
			t.Errorf("a confirmation was left pending:\n%s", h.console.String())
		}
		assertNoSecrets(t, h, sn.all(), "")
	})

	t.Run("out of band only", func(t *testing.T) {
		h.upstream.Reset()
		var sn seen
		asked := 0
		for _, client := range []clientKind{
			{name: "Both", apps: true, elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { asked++; return accept(true)(r) }},
			{name: "Plain Client"},
		} {
			s := h.mcpSession("cs_test_ask", client, nil)
			src := "const v = call('vault', 'DELETE', '/contacts/7'); ({v})"
			r := runScript(t, s, src, "", &sn)
			id, _ := structured(t, r)["confirmation_id"].(string)
			if asked != 0 || r.IsError || id == "" || !strings.Contains(text(r), "only from their approvers") ||
				!strings.Contains(text(r), `call run_script with the same script and {"confirmation_id": "`+id+`"}`) {
				t.Fatalf("%s: %q (asked %d)", client.name, text(r), asked)
			}
			if h.upstream.Count("DELETE", "/contacts/7") != 0 {
				t.Fatal("the vault delete ran before approval")
			}
			if res := h.post(h.approvalLink(id), "approve", nil, "application/json"); res.status != http.StatusOK {
				t.Fatalf("approve: %d %s", res.status, res.body)
			}
			var st *mcp.CallToolResult
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				st = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, &sn)
				if structured(t, st)["status"] == "executed" {
					break
				}
			}
			want := map[string]any{"v": map[string]any{"status": 204.0, "body": nil}}
			if diff := cmp.Diff(want, structured(t, st)["result"]); diff != "" || !strings.Contains(text(st), `The script's result: {"v":{`) {
				t.Errorf("confirmation_status %q (-want +got):\n%s", text(st), diff)
			}
			if res := runScript(t, s, src, id, &sn); !cmp.Equal(want, resultOf(t, res)) {
				t.Errorf("run_script with the id: %q", text(res))
			}
			h.upstream.Reset()
			assertNoSecrets(t, h, sn.all(), id)
		}
	})
}
