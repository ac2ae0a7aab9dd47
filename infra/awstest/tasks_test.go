package awstest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// taskCaps are a 2026-07-28 client's capabilities with the MCP tasks
// extension (as Claude Code declares them).
const taskCaps = `{"elicitation": {"form": {}, "url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}`

// mcp posts one 2026-07-28 request to /mcp as the ask_person key, with
// the routing headers name (Mcp-Name) and method, and returns the JSON-RPC
// result; anything else fails the flow.
func (f *flow) mcp(method, name, params string) map[string]any {
	f.Helper()
	body := `{"jsonrpc": "2.0", "id": 1, "method": "` + method + `", "params": ` + params + `}`
	a := f.do(http.MethodPost, "/mcp", http.Header{"Authorization": {"Bearer " + askKey}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}}, body)
	res, ok := a.Body["result"].(map[string]any)
	if a.Status != http.StatusOK || !ok {
		f.Fatalf("/mcp %s: %d %s", method, a.Status, a.Raw)
	}
	return res
}

// taskMeta is a request's _meta on 2026-07-28 with the tasks extension.
const taskMeta = `"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": {"name": "awstest", "version": "1"},
  "io.modelcontextprotocol/clientCapabilities": ` + taskCaps + `}`

// mcpTaskApproved: on /mcp, a key's confirm-tier call from a client that
// declared the MCP tasks extension answers with a task; tasks/get says it
// works while the approver decides; the approver approves by the signed
// link, and the task completes with the upstream's answer (polled on
// whichever function instance answers: nothing of the task is held in
// memory), the DELETE having run once.
func mcpTaskApproved(f *flow) {
	res := f.mcp("tools/call", "crm__delete_contacts_by_id", `{"name": "crm__delete_contacts_by_id", "arguments": {"id": "81"}, `+taskMeta+`}`)
	taskID, _ := res["taskId"].(string)
	meta, _ := res["_meta"].(map[string]any)
	id, _ := meta["countersign/confirmation_id"].(string)
	if res["resultType"] != "task" || res["status"] != "working" || taskID == "" || id == "" {
		f.Fatalf("tools/call answered %v, want a working task", res)
	}
	f.Logf("tools/call: task %s (%s), %s", taskID, id, res["statusMessage"])
	get := func() map[string]any {
		tid, _ := json.Marshal(taskID)
		return f.mcp("tasks/get", taskID, `{"taskId": `+string(tid)+`, `+taskMeta+`}`)
	}
	if st := get(); st["status"] != "working" || !strings.HasPrefix(st["statusMessage"].(string), "waiting for approval") {
		f.Fatalf("tasks/get before the decision: %v", st)
	}
	if hits := f.s.Upstream.Hits("DELETE /contacts/81"); len(hits) != 0 {
		f.Fatalf("the upstream got %v before the approval", hits)
	}
	link := f.link(id)
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	var st map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if st = get(); st["status"] != "working" {
			break
		}
	}
	result, _ := st["result"].(map[string]any)
	sc, _ := result["structuredContent"].(map[string]any)
	if st["status"] != "completed" || result["isError"] == true || sc["status"] != float64(http.StatusNoContent) {
		f.Fatalf("tasks/get after the approval: %v, want completed with the upstream's 204", st)
	}
	f.Logf("tasks/get: completed, %v", sc)
	f.upstreamOnce("DELETE", "/contacts/81", id)
	if again := get(); again["status"] != "completed" {
		f.Fatalf("tasks/get again: %v", again)
	}
	f.upstreamOnce("DELETE", "/contacts/81", id)
}
