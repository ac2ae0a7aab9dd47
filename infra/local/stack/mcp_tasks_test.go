package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/store/embedded"
)

// taskCaps are the capabilities Claude Code 2.1.332 declares on
// 2026-07-28: form and URL elicitation, and the tasks extension.
const taskCaps = `{"elicitation": {"form": {}, "url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}`

// metaWith is a 2026-07-28 request's _meta with the capabilities caps.
func metaWith(caps string) string {
	return `"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": {"name": "task client", "version": "1"},
  "io.modelcontextprotocol/clientCapabilities": ` + caps + `}`
}

// taskCall calls tool with args (JSON) on 2026-07-28 as a client with
// capabilities caps, and returns the JSON-RPC result.
func (h *harness) taskCall(key, caps, tool, args string) map[string]any {
	h.t.Helper()
	r := h.rawCall(rawMCP{key: key, protocol: "2026-07-28", method: "tools/call",
		body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "` + tool + `", "arguments": ` + args + `, ` + metaWith(caps) + `}}`}, tool)
	res, ok := r.json(h.t)["result"].(map[string]any)
	if r.status != http.StatusOK || !ok {
		h.t.Fatalf("tools/call %s: %d %s", tool, r.status, r.body)
	}
	return res
}

// taskRPC sends a method of the tasks extension for taskID, with the
// Mcp-Name header the extension asks for.
func (h *harness) taskRPC(key, caps, method, taskID string) rawResult {
	h.t.Helper()
	id, _ := json.Marshal(taskID)
	return h.rawCall(rawMCP{key: key, protocol: "2026-07-28", method: method,
		body: `{"jsonrpc": "2.0", "id": 7, "method": "` + method + `", "params": {"taskId": ` + string(id) + `, ` + metaWith(caps) + `}}`}, taskID)
}

// taskGet is tasks/get's result for the task's creator.
func (h *harness) taskGet(key, taskID string) map[string]any {
	h.t.Helper()
	r := h.taskRPC(key, taskCaps, "tasks/get", taskID)
	res, ok := r.json(h.t)["result"].(map[string]any)
	if r.status != http.StatusOK || !ok {
		h.t.Fatalf("tasks/get: %d %s", r.status, r.body)
	}
	if res["resultType"] != "complete" || res["taskId"] != taskID {
		h.t.Fatalf("tasks/get: %s, want resultType complete and the same taskId", r.body)
	}
	return res
}

// taskUntil polls tasks/get until the task leaves working (bounded by a
// number of polls, not by time: each poll is one request).
func (h *harness) taskUntil(key, taskID string) map[string]any {
	h.t.Helper()
	var res map[string]any
	for range 200 {
		if res = h.taskGet(key, taskID); res["status"] != "working" {
			return res
		}
		time.Sleep(25 * time.Millisecond)
	}
	h.t.Fatalf("the task is still working after 200 polls: %v", res)
	return nil
}

// newTask calls crm__deleteContact for contact as the program's key
// (an ask_person key without ask_in_client: its approvers decide) from a
// client that declared the tasks extension, and checks the task it gets.
func newTask(t *testing.T, h *harness, contact string) (taskID, confirmationID string) {
	t.Helper()
	res := h.taskCall("cs_test_program", taskCaps, "crm__deleteContact", `{"id": "`+contact+`"}`)
	taskID, _ = res["taskId"].(string)
	msg, _ := res["statusMessage"].(string)
	if res["resultType"] != "task" || taskID == "" || res["status"] != "working" ||
		!strings.HasPrefix(msg, "waiting for approval") || !strings.Contains(msg, "DELETE /contacts/"+contact) {
		t.Fatalf("tools/call answered %v, want a working task waiting for approval", res)
	}
	if ttl, _ := res["ttlMs"].(float64); ttl <= 0 || ttl > float64(h.opts.callSeconds*1000) {
		t.Errorf("ttlMs %v, want the confirmation's wait (at most %d s)", res["ttlMs"], h.opts.callSeconds)
	}
	if res["pollIntervalMs"] != float64(mcpapi.PollInterval.Milliseconds()) {
		t.Errorf("pollIntervalMs %v", res["pollIntervalMs"])
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(res["createdAt"])); err != nil {
		t.Errorf("createdAt %v: %v", res["createdAt"], err)
	}
	if _, ok := res["content"]; ok {
		t.Errorf("the task carries the paused notice too: %v", res)
	}
	meta, _ := res["_meta"].(map[string]any)
	confirmationID, _ = meta["countersign/confirmation_id"].(string)
	if !strings.HasPrefix(confirmationID, "cf_") {
		t.Fatalf("the task names no confirmation: %v", res)
	}
	if strings.Contains(taskID, confirmationID) {
		t.Errorf("the task id %q shows the confirmation id in clear", taskID)
	}
	if n := h.upstream.Count("DELETE", "/contacts/"+contact); n != 0 {
		t.Fatalf("DELETE ran %d times before anyone approved", n)
	}
	return taskID, confirmationID
}

// TestMCPTaskApprovedByLink: a key's client that declared the tasks
// extension gets a task for a call its approvers decide; while they
// decide, tasks/get says working, and another credential reading or
// cancelling it is told there is no such task. The approver approves by
// the signed link; the next poll completes the task with the upstream's
// answer, and the DELETE ran exactly once, whatever the polls after.
func TestMCPTaskApprovedByLink(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	taskID, id := newTask(t, h, "12")

	if res := h.taskGet("cs_test_program", taskID); res["status"] != "working" || !strings.HasPrefix(fmt.Sprint(res["statusMessage"]), "waiting for approval") {
		t.Fatalf("tasks/get before the decision: %v", res)
	}
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		r := h.taskRPC("cs_test_ask", taskCaps, method, taskID)
		if e := rpcErrorOf(t, r); r.status != http.StatusBadRequest || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "Task not found") {
			t.Errorf("%s by another key: %d %s, want 400 -32602 Task not found", method, r.status, r.body)
		}
	}
	if st := h.statusOf("cs_test_program", id); st != "pending" {
		t.Fatalf("after another key's cancel: %s, want pending", st)
	}

	expect(t, h.post(h.approvalLink(id), "approve", nil, ""), http.StatusOK, "")
	res := h.taskUntil("cs_test_program", taskID)
	result, _ := res["result"].(map[string]any)
	if res["status"] != "completed" || result == nil || result["isError"] == true {
		t.Fatalf("after the approval: %v, want completed with the upstream's answer", res)
	}
	content, _ := result["content"].([]any)
	first, _ := content[0].(map[string]any)
	if sc, _ := result["structuredContent"].(map[string]any); sc["status"] != float64(http.StatusNoContent) || !strings.HasPrefix(fmt.Sprint(first["text"]), "204") {
		t.Errorf("the task's result %v, want the upstream's 204", result)
	}
	for range 3 {
		if again := h.taskGet("cs_test_program", taskID); again["status"] != "completed" {
			t.Errorf("a later poll: %v", again)
		}
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("DELETE ran %d times, want exactly once", n)
	}
}

// rpcErrorOf is a response's JSON-RPC error object.
func rpcErrorOf(tb testing.TB, r rawResult) map[string]any {
	tb.Helper()
	e, _ := r.json(tb)["error"].(map[string]any)
	return e
}

// TestMCPTaskRejected: an approver rejects with a reason; the task
// completes as a tool error naming who rejected and why, and nothing ran.
func TestMCPTaskRejected(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	taskID, id := newTask(t, h, "13")
	link := h.approvalLink(id)
	u, _ := url.Parse(link)
	form := u.Query()
	form.Set("decision", "reject")
	form.Set("reason", "not this contact")
	expect(t, h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), http.StatusOK, "")
	res := h.taskUntil("cs_test_program", taskID)
	result, _ := res["result"].(map[string]any)
	content, _ := result["content"].([]any)
	first, _ := content[0].(map[string]any)
	text := fmt.Sprint(first["text"])
	if res["status"] != "completed" || result["isError"] != true || !strings.Contains(text, "confirmation_rejected") ||
		!strings.Contains(text, "ops") || !strings.Contains(text, "not this contact") {
		t.Fatalf("after the rejection: %v, want completed with isError naming the approver and the reason", res)
	}
	if n := h.upstream.Count("DELETE", "/contacts/13"); n != 0 {
		t.Errorf("a rejected call ran %d times", n)
	}
}

// TestMCPTaskCancelled: tasks/cancel by the task's caller rejects the
// pending confirmation as cancelled by the caller; the task reads
// cancelled, an approver's later approval is refused, and nothing runs.
// Cancelling again is acknowledged and changes nothing.
func TestMCPTaskCancelled(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	taskID, id := newTask(t, h, "14")
	link := h.approvalLink(id)
	for range 2 {
		r := h.taskRPC("cs_test_program", taskCaps, "tasks/cancel", taskID)
		if res, _ := r.json(t)["result"].(map[string]any); r.status != http.StatusOK || res["resultType"] != "complete" {
			t.Fatalf("tasks/cancel: %d %s", r.status, r.body)
		}
	}
	if res := h.taskGet("cs_test_program", taskID); res["status"] != "cancelled" {
		t.Fatalf("after tasks/cancel: %v, want cancelled", res)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "rejected" || !strings.Contains(string(st.body), "caller:program") {
		t.Errorf("the confirmation after tasks/cancel: %s, want rejected by the caller", st.body)
	}
	if r := h.post(link, "approve", nil, "application/json"); r.status == http.StatusOK {
		t.Errorf("an approval after the cancellation was accepted: %d %s", r.status, r.body)
	}
	if n := h.upstream.Count("DELETE", "/contacts/14"); n != 0 {
		t.Errorf("a cancelled call ran %d times", n)
	}

	// The audit trail names the caller that cancelled, and why.
	h.stop()
	st2, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	recs, err := st2.ListAudit(context.Background(), countersign.AuditQuery{Chain: audit.ChainOf("program")})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		if r.Subject == id && r.Action == "confirmation.rejected" {
			found = r.Actor == "approver:caller:program" && strings.Contains(r.Reason, "cancelled by the caller")
			if !found {
				t.Errorf("the trail's record %+v, want the caller cancelling", r)
			}
		}
	}
	if !found {
		t.Errorf("no confirmation.rejected record for %s in %+v", id, recs)
	}
}

// TestMCPTaskExpired: nobody decides before the confirmation's wait
// (one second here) ends; the task fails with "This confirmation
// expired" and nothing ran.
func TestMCPTaskExpired(t *testing.T) {
	h := newHarness(t, harnessOptions{callSeconds: 1})
	taskID, _ := newTask(t, h, "15")
	res := h.taskUntil("cs_test_program", taskID)
	e, _ := res["error"].(map[string]any)
	if res["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(res["statusMessage"]), "This confirmation expired") || e == nil {
		t.Fatalf("after the expiry: %v, want failed: This confirmation expired", res)
	}
	if n := h.upstream.Count("DELETE", "/contacts/15"); n != 0 {
		t.Errorf("an expired call ran %d times", n)
	}
}

// TestMCPTaskBadInput: task ids that are not a task of the caller, a
// client that did not declare the extension, and methods the extension
// does not have are refused with JSON-RPC errors; a client without the
// extension, and a person asked in their own client, get no task.
func TestMCPTaskBadInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	taskID, _ := newTask(t, h, "16")
	altered := taskID[:len(taskID)-1] + map[bool]string{true: "A", false: "B"}[strings.HasSuffix(taskID, "B")]
	for name, id := range map[string]string{"empty": "", "malformed": "task-1", "altered": altered, "too long": strings.Repeat("a", 600),
		"a link token": "k1.9999999999.Y2ZfeA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		r := h.taskRPC("cs_test_program", taskCaps, "tasks/get", id)
		if e := rpcErrorOf(t, r); r.status != http.StatusBadRequest || e["code"] != float64(-32602) {
			t.Errorf("tasks/get of a task id %s: %d %s, want 400 -32602", name, r.status, r.body)
		}
	}
	r := h.taskRPC("cs_test_program", `{"elicitation": {"form": {}}}`, "tasks/get", taskID)
	if e := rpcErrorOf(t, r); r.status != http.StatusBadRequest || e["code"] != float64(-32021) || !strings.Contains(r.body, mcpapi.TasksExtension) {
		t.Errorf("tasks/get without the extension declared: %d %s, want 400 -32021 naming it", r.status, r.body)
	}
	id, _ := json.Marshal(taskID)
	r = h.raw(rawMCP{key: "cs_test_program", protocol: "2026-07-28", method: "tasks/get",
		body: `{"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"taskId": ` + string(id) + `, ` + metaWith(taskCaps) + `}}`})
	if e := rpcErrorOf(t, r); r.status != http.StatusBadRequest || e["code"] != float64(-32020) {
		t.Errorf("tasks/get without Mcp-Name: %d %s, want 400 -32020", r.status, r.body)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		r := h.taskRPC("cs_test_program", taskCaps, m, taskID)
		if e := rpcErrorOf(t, r); r.status != http.StatusNotFound || e["code"] != float64(-32601) || !strings.Contains(fmt.Sprint(e["message"]), "tasks/get") {
			t.Errorf("%s: %d %s, want 404 -32601 pointing at tasks/get", m, r.status, r.body)
		}
	}
	r = h.taskRPC("cs_test_program", taskCaps, "tasks/update", taskID)
	if res, _ := r.json(t)["result"].(map[string]any); r.status != http.StatusOK || res["resultType"] != "complete" {
		t.Errorf("tasks/update: %d %s, want an acknowledgement", r.status, r.body)
	}
	// Polling far faster than the interval is answered, each time.
	for range 20 {
		if res := h.taskGet("cs_test_program", taskID); res["status"] != "working" {
			t.Fatalf("a fast poll: %v", res)
		}
	}

	res := h.taskCall("cs_test_program", `{"elicitation": {"form": {}}}`, "crm__deleteContact", `{"id": "17"}`)
	if res["resultType"] != "complete" || !strings.Contains(fmt.Sprint(res["content"]), "Paused (confirmation_required)") {
		t.Errorf("a client without the extension: %v, want the paused notice", res)
	}
	res = h.taskCall("cs_test_ask", taskCaps, "crm__deleteContact", `{"id": "18"}`)
	if res["resultType"] != "input_required" {
		t.Errorf("a person's client with form elicitation and tasks: %v, want the client's dialog (input_required)", res)
	}
	if n := h.upstream.Count("DELETE", "/contacts/16") + h.upstream.Count("DELETE", "/contacts/17") + h.upstream.Count("DELETE", "/contacts/18"); n != 0 {
		t.Errorf("%d DELETEs ran", n)
	}
}

// TestMCPTaskRunScript: run_script's batch becomes a task too; after the
// approval by link the task completes with the script's result, and each
// approved DELETE ran once.
func TestMCPTaskRunScript(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	script, _ := json.Marshal(mcpBatchScript)
	res := h.taskCall("cs_test_program", taskCaps, mcpapi.ToolRunScript, `{"script": `+string(script)+`}`)
	taskID, _ := res["taskId"].(string)
	meta, _ := res["_meta"].(map[string]any)
	id, _ := meta["countersign/confirmation_id"].(string)
	if res["resultType"] != "task" || taskID == "" || id == "" {
		t.Fatalf("run_script answered %v, want a task", res)
	}
	wantCounts(t, h, map[string]int{"DELETE /contacts/3": 0, "DELETE /contacts/4": 0})
	expect(t, h.post(h.approvalLink(id), "approve", nil, ""), http.StatusOK, "")
	res = h.taskUntil("cs_test_program", taskID)
	result, _ := res["result"].(map[string]any)
	sc, _ := result["structuredContent"].(map[string]any)
	if res["status"] != "completed" || sc["status"] != "completed" || !strings.Contains(fmt.Sprint(sc["result"]), "d3") {
		t.Fatalf("after the approval: %v, want completed with the script's result", res)
	}
	wantCounts(t, h, map[string]int{"DELETE /contacts/3": 1, "DELETE /contacts/4": 1})
}

// TestMCPTaskRanElsewhere: the same call sent again with its
// Idempotency-Key (countersign/idempotencyKey) is the same task; after
// the approval the workflow's execute task runs the call before anyone
// polls, and tasks/get returns its stored outcome without running
// anything again.
func TestMCPTaskRanElsewhere(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	call := func() map[string]any {
		meta := strings.Replace(metaWith(taskCaps), `"_meta": {`, `"_meta": {"countersign/idempotencyKey": "delete-19", `, 1)
		r := h.rawCall(rawMCP{key: "cs_test_program", protocol: "2026-07-28", method: "tools/call",
			body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "crm__deleteContact", "arguments": {"id": "19"}, ` + meta + `}}`}, "crm__deleteContact")
		res, _ := r.json(t)["result"].(map[string]any)
		if res["resultType"] != "task" {
			t.Fatalf("tools/call: %d %s, want a task", r.status, r.body)
		}
		return res
	}
	first, again := call(), call()
	if first["taskId"] != again["taskId"] {
		t.Errorf("the call replayed is task %v, not %v", again["taskId"], first["taskId"])
	}
	taskID := first["taskId"].(string)
	id := first["_meta"].(map[string]any)["countersign/confirmation_id"].(string)
	expect(t, h.post(h.approvalLink(id), "approve", nil, ""), http.StatusOK, "")
	for i := 0; i < 200 && h.statusOf("cs_test_program", id) != "executed"; i++ {
		time.Sleep(25 * time.Millisecond)
	}
	if st := h.statusOf("cs_test_program", id); st != "executed" {
		t.Fatalf("the workflow did not run the approved call: %s", st)
	}
	res := h.taskGet("cs_test_program", taskID)
	result, _ := res["result"].(map[string]any)
	if sc, _ := result["structuredContent"].(map[string]any); res["status"] != "completed" || sc["status"] != float64(http.StatusNoContent) {
		t.Fatalf("tasks/get of a call the workflow ran: %v", res)
	}
	if n := h.upstream.Count("DELETE", "/contacts/19"); n != 1 {
		t.Errorf("DELETE ran %d times, want once", n)
	}
}

// TestMCPTaskQuorum: a call that needs two people is a task whose status
// message counts the approvals: 0 of 2, then 1 of 2 after ada's; after
// bob's the call runs once and the task completes.
func TestMCPTaskQuorum(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": quorumPolicy}})
	res := h.taskCall("cs_test_program", taskCaps, "team__delete_contacts_by_id", `{"id": "20"}`)
	taskID, _ := res["taskId"].(string)
	if res["resultType"] != "task" || !strings.HasPrefix(fmt.Sprint(res["statusMessage"]), "waiting for approval: 0 of 2") {
		t.Fatalf("tools/call: %v, want a task waiting for 0 of 2", res)
	}
	id := res["_meta"].(map[string]any)["countersign/confirmation_id"].(string)
	link := h.approvalLink(id)
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
	if got := h.taskGet("cs_test_program", taskID); got["status"] != "working" || !strings.HasPrefix(fmt.Sprint(got["statusMessage"]), "waiting for approval: 1 of 2") {
		t.Fatalf("after ada's approval: %v, want working, 1 of 2", got)
	}
	if n := h.upstream.Count("DELETE", "/contacts/20"); n != 0 {
		t.Fatalf("DELETE ran %d times after one of two approvals", n)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	got := h.taskUntil("cs_test_program", taskID)
	if got["status"] != "completed" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "bob@example.com") {
		t.Fatalf("after bob's approval: %v, want completed, approved by bob", got)
	}
	if n := h.upstream.Count("DELETE", "/contacts/20"); n != 1 {
		t.Errorf("DELETE ran %d times, want once", n)
	}

	// A client that could ask its own person in a form gets a task too:
	// one person's answer in the client cannot make a quorum.
	res = h.taskCall("cs_test_ask", taskCaps, "team__delete_contacts_by_id", `{"id": "19"}`)
	if res["resultType"] != "task" || !strings.HasPrefix(fmt.Sprint(res["statusMessage"]), "waiting for approval: 0 of 2") {
		t.Errorf("a form-capable client's quorum call: %v, want a task waiting for 0 of 2", res)
	}
}
