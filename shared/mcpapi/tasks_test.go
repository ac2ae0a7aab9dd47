package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/store/embedded"
)

// pendingCall is a confirmation of one DELETE made at t0 that waits ten
// minutes and is kept a day.
func pendingCall() *countersign.Confirmation {
	op := countersign.Operation{Connection: "crm", Method: "DELETE", Path: "/contacts/3"}
	return &countersign.Confirmation{ID: "cf_task", Kind: countersign.KindCall, Credential: "program", Status: countersign.StatusPending,
		CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute), TTL: t0.Add(24 * time.Hour).Unix(), GatewayRuns: true,
		Operations: []countersign.Operation{op}}
}

// TestTaskIDOpensOnlyForItsCredential: a task id names its confirmation
// for the credential that created it; for another credential, altered,
// made for another purpose (a request state, a card token), malformed or
// oversized it is not found, and after the record's TTL it has expired.
func TestTaskIDOpensOnlyForItsCredential(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	owner, other := &countersign.Credential{ID: "program"}, &countersign.Credential{ID: "other"}
	c := pendingCall()
	id := h.TaskID(owner, c)
	if got, err := h.openTask(owner, id); err != nil || got != c.ID {
		t.Fatalf("the owner opens %q, %v; want %s", got, err, c.ID)
	}
	if strings.Contains(id, c.ID) {
		t.Errorf("task id %q", id)
	}
	card, _ := json.Marshal(cardToken{ID: c.ID, Cred: owner.ID})
	notFound := map[string]string{
		"empty":         "",
		"malformed":     "task-1",
		"altered":       id[:len(id)-2] + "AA",
		"oversized":     strings.Repeat("a", maxTaskID+1),
		"a card token":  h.o.Signer.Seal(cardPurpose, card, c.ExpiresAt),
		"a state":       h.o.Signer.Seal(statePurpose, []byte(c.ID), c.ExpiresAt),
		"another owner": h.TaskID(other, c),
	}
	for name, tok := range notFound {
		if _, err := h.openTask(owner, tok); err != errTaskNotFound {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}
	if _, err := h.openTask(other, id); err != errTaskNotFound {
		t.Errorf("another credential: %v, want not found (as an unknown task)", err)
	}
	now = time.Unix(c.TTL, 0)
	if _, err := h.openTask(owner, id); err != errTaskExpired {
		t.Errorf("at the record's TTL: %v, want expired", err)
	}
	if _, err := h.openTask(other, id); err != errTaskNotFound {
		t.Errorf("another credential, expired: %v, want not found", err)
	}
}

// TestTaskOf: a pending task is working with what it waits for, a TTL
// of the confirmation's wait and the poll interval, in integer
// milliseconds; once decided its TTL is the record's.
func TestTaskOf(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	cred := &countersign.Credential{ID: "program"}
	approval := countersign.Approval{Person: countersign.Person{Issuer: "i", Subject: "ada"}, At: t0.Add(time.Minute)}
	tests := []struct {
		name string
		edit func(c *countersign.Confirmation)
		want string
	}{
		{"one approval", func(*countersign.Confirmation) {}, "waiting for approval (the approvers were sent a link; DELETE /contacts/3 on crm; expires 2026-11-30T12:10:00Z); nothing ran yet"},
		{"a quorum, one counted", func(c *countersign.Confirmation) { c.Required, c.Approvals = 2, []countersign.Approval{approval} },
			"waiting for approval: 1 of 2 ("},
		{"four eyes", func(c *countersign.Confirmation) { c.SeparateApprover = true },
			"waiting for approval by someone other than the person who made the call ("},
		{"a batch", func(c *countersign.Confirmation) { c.Operations = append(c.Operations, c.Operations[0]) },
			"waiting for approval (the approvers were sent a link; 2 operations;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := pendingCall()
			tc.edit(c)
			v := h.taskOf(cred, c, countersign.StatusPending)
			if v.Status != taskWorking || !strings.HasPrefix(v.StatusMessage, tc.want) {
				t.Errorf("%s %q, want working %q", v.Status, v.StatusMessage, tc.want)
			}
			if v.TTLMs != (10*time.Minute).Milliseconds() || v.PollIntervalMs != PollInterval.Milliseconds() {
				t.Errorf("ttlMs %d pollIntervalMs %d", v.TTLMs, v.PollIntervalMs)
			}
			if v.TaskID != h.TaskID(cred, c) || v.CreatedAt != "2026-11-30T12:00:00Z" {
				t.Errorf("task %+v", v)
			}
		})
	}
	c := pendingCall()
	decided := t0.Add(2 * time.Minute)
	c.Status, c.DecidedAt, c.DecidedBy = countersign.StatusApproved, &decided, "ops"
	v := h.taskOf(cred, c, countersign.StatusApproved)
	if v.TTLMs != (24*time.Hour).Milliseconds() || v.LastUpdatedAt != "2026-11-30T12:02:00Z" || v.StatusMessage != "Approved by ops; running." {
		t.Errorf("approved: %+v", v)
	}
}

// TestTaskResultIsFlat: a call answered with a task is the extension's
// CreateTaskResult: resultType "task" and the task's fields at the top,
// integer milliseconds, and nothing of the paused notice.
func TestTaskResultIsFlat(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	cred := &countersign.Credential{ID: "program"}
	paused := textResult("Paused (confirmation_required): ...", pausedView{Status: "confirmation_required", ConfirmationID: "cf_task"})
	b, err := json.Marshal(&taskResult{CallToolResult: paused, view: h.taskOf(cred, pendingCall(), countersign.StatusPending)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"content", "structuredContent", "task", "ttl", "pollInterval", "result", "error"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s carries %q", b, k)
		}
	}
	if m["resultType"] != "task" || m["status"] != "working" || m["taskId"] == "" || !strings.Contains(string(b), `"ttlMs":600000,`) || !strings.Contains(string(b), `"pollIntervalMs":2000`) {
		t.Errorf("%s", b)
	}
}

// TestPausedID: only a call or batch paused for people outside the
// client can become a task: not a result that ran, a denial, or a pause
// the person decides on the page their client opens.
func TestPausedID(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"paused", textResult("", pausedView{ConfirmationID: "cf_1"}), "cf_1"},
		{"paused for the client's page", textResult("", pausedView{ConfirmationID: "cf_1", askURL: true}), ""},
		{"a paused batch", textResult("", scriptView{Status: "confirmation_required", ConfirmationID: "cf_2"}), "cf_2"},
		{"a completed script", textResult("", scriptView{Status: "completed", ConfirmationID: "cf_2"}), ""},
		{"ran", textResult("", upstreamView{Status: 204, ConfirmationID: "cf_3"}), ""},
		{"denied", faultResult("forbidden", "no"), ""},
		{"a kept pause replayed", textResult("", map[string]any{"status": "confirmation_required", "confirmation_id": "cf_4"}), "cf_4"},
		{"a kept answer replayed", textResult("", map[string]any{"status": 204, "confirmation_id": "cf_4"}), ""},
	}
	for _, tc := range tests {
		if got := pausedID(tc.res); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDeclaresTasks: the extension counts only in a 2026-07-28 request's
// own capabilities.
func TestDeclaresTasks(t *testing.T) {
	req := func(proto string, caps map[string]any) mcp.Request {
		meta := mcp.Meta{mcp.MetaKeyProtocolVersion: proto}
		if caps != nil {
			meta[mcp.MetaKeyClientCapabilities] = caps
		}
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Meta: meta}}
	}
	ext := map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}
	tests := []struct {
		name string
		req  mcp.Request
		want bool
	}{
		{"declared", req(ProtocolMRTR, ext), true},
		{"not declared", req(ProtocolMRTR, map[string]any{"elicitation": map[string]any{}}), false},
		{"no capabilities", req(ProtocolMRTR, nil), false},
		{"an older revision", req("2025-11-25", ext), false},
	}
	for _, tc := range tests {
		if got := declaresTasks(tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestServeTaskRefusals: what the task methods refuse before reading
// any store: a method of the older tasks, a client that did not declare
// the extension, routing headers that do not match, a task id that is
// not the caller's.
func TestServeTaskRefusals(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	cred := &countersign.Credential{ID: "program"}
	foreign := h.TaskID(&countersign.Credential{ID: "other"}, pendingCall())
	caps := `"_meta": {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}`
	tests := []struct {
		name, method, params, mcpName string
		status                        int
		code                          int64
	}{
		{"tasks/result", "tasks/result", `{"taskId": "x", ` + caps + `}`, "x", http.StatusNotFound, jsonrpc.CodeMethodNotFound},
		{"tasks/list", "tasks/list", `{}`, "", http.StatusNotFound, jsonrpc.CodeMethodNotFound},
		{"not declared", "tasks/get", `{"taskId": "x", "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}`, "x", http.StatusBadRequest, mcp.CodeMissingRequiredClientCapabilities},
		{"no params", "tasks/get", ``, "", http.StatusBadRequest, jsonrpc.CodeInvalidParams},
		{"no Mcp-Name", "tasks/get", `{"taskId": "x", ` + caps + `}`, "", http.StatusBadRequest, mcp.CodeHeaderMismatch},
		{"another Mcp-Name", "tasks/cancel", `{"taskId": "x", ` + caps + `}`, "y", http.StatusBadRequest, mcp.CodeHeaderMismatch},
		{"unknown", "tasks/get", `{"taskId": "x", ` + caps + `}`, "x", http.StatusBadRequest, jsonrpc.CodeInvalidParams},
		{"another credential's", "tasks/cancel", `{"taskId": "` + foreign + `", ` + caps + `}`, foreign, http.StatusBadRequest, jsonrpc.CodeInvalidParams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Mcp-Method", tc.method)
			if tc.mcpName != "" {
				r.Header.Set("Mcp-Name", tc.mcpName)
			}
			w := httptest.NewRecorder()
			h.serveTask(context.Background(), w, r, cred, rpcMessage{ID: json.RawMessage("3"), Method: tc.method, Params: json.RawMessage(tc.params)})
			var body struct {
				ID    int            `json:"id"`
				Error *jsonrpc.Error `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == nil || body.ID != 3 {
				t.Fatalf("%d %s: %v", w.Code, w.Body, err)
			}
			if w.Code != tc.status || body.Error.Code != tc.code {
				t.Errorf("%d %d %q, want %d %d", w.Code, body.Error.Code, body.Error.Message, tc.status, tc.code)
			}
		})
	}
}

// TestOutcomeResult: a stored outcome reads as the tool's own answer.
func TestOutcomeResult(t *testing.T) {
	ok := outcomeResult("cf_1", &countersign.Outcome{Status: 200, Body: json.RawMessage(`{"id":3}`)})
	if ok.IsError || text(ok) != "200 OK\n{\"id\":3}" || ok.StructuredContent.(upstreamView).ConfirmationID != "cf_1" {
		t.Errorf("200: %q %+v", text(ok), ok.StructuredContent)
	}
	if r := outcomeResult("cf_1", &countersign.Outcome{Status: 204}); r.IsError || text(r) != "204 No Content" {
		t.Errorf("204: %q", text(r))
	}
	if r := outcomeResult("cf_1", &countersign.Outcome{Status: 404, Body: json.RawMessage(`"gone"`)}); !r.IsError {
		t.Errorf("404 is not an error: %q", text(r))
	}
	if r := outcomeResult("cf_1", &countersign.Outcome{Error: "the upstream could not be reached"}); !r.IsError || !strings.HasPrefix(text(r), "Error (upstream_unreachable)") {
		t.Errorf("unreachable: %q", text(r))
	}
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// countingStore counts confirmation reads.
type countingStore struct {
	calls.Store
	reads atomic.Int64
}

func (s *countingStore) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	s.reads.Add(1)
	return s.Store.GetConfirmation(ctx, id)
}

// TestTaskState: what tasks/get reads of a confirmation in each state,
// from a real store, with one read a poll: working while pending (polling
// often costs a read each time), cancelled after the caller's own
// rejection, completed with isError naming the approver and the reason
// after a rejection, completed with the stored answer once it ran,
// failed when it expired undecided, and no task at all for another
// credential's confirmation or one the agent redeems.
func TestTaskState(t *testing.T) {
	now := t0
	h := newTestHandler(t, `"Acme"`, &now)
	es, err := embedded.Open(filepath.Join(t.TempDir(), "db"), &embedded.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	st := &countingStore{Store: es}
	h.o.Calls.(*calls.Service).Store = st
	cred := &countersign.Credential{ID: "program"}
	decided := t0.Add(time.Minute)
	tests := []struct {
		name       string
		edit       func(c *countersign.Confirmation)
		at         time.Time
		status     string
		message    string
		resultText string
	}{
		{"pending", func(*countersign.Confirmation) {}, t0, taskWorking, "waiting for approval", ""},
		{"cancelled", func(c *countersign.Confirmation) {
			c.Status, c.DecidedAt, c.DecidedBy = countersign.StatusRejected, &decided, cancelledBy(cred)
		}, t0, taskCancelled, "cancelled by the caller", ""},
		{"rejected", func(c *countersign.Confirmation) {
			c.Status, c.DecidedAt, c.DecidedBy, c.DecisionReason = countersign.StatusRejected, &decided, "ops", "not today"
		}, t0, taskCompleted, "rejected by ops: not today", "Denied (confirmation_rejected): rejected by ops: not today; nothing ran"},
		{"executed", func(c *countersign.Confirmation) {
			c.Status, c.DecidedAt, c.DecidedBy = countersign.StatusExecuted, &decided, "ops"
			c.Operations[0].State, c.Operations[0].Outcome = countersign.OpDone, &countersign.Outcome{Status: 204}
		}, t0, taskCompleted, "Approved by ops and executed.", "204 No Content"},
		{"expired", func(*countersign.Confirmation) {}, t0.Add(10 * time.Minute), taskFailed, "This confirmation expired", ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now = t0
			c := pendingCall()
			c.ID = fmt.Sprintf("cf_state%d", i)
			tc.edit(c)
			if err := es.CreateConfirmation(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			now = tc.at
			for range 3 {
				before := st.reads.Load()
				v, rerr := h.taskState(context.Background(), cred, c.ID)
				if rerr != nil {
					t.Fatalf("taskState: %v", rerr)
				}
				if n := st.reads.Load() - before; n != 1 {
					t.Errorf("a poll read the store %d times, want once", n)
				}
				if v.Status != tc.status || !strings.HasPrefix(v.StatusMessage, tc.message) {
					t.Errorf("%s %q, want %s %q", v.Status, v.StatusMessage, tc.status, tc.message)
				}
				if tc.resultText != "" && (v.Result == nil || !strings.HasPrefix(text(v.Result), tc.resultText)) {
					t.Errorf("result %+v, want %q", v.Result, tc.resultText)
				}
				if tc.status == taskFailed && (v.Error == nil || v.Result != nil) {
					t.Errorf("failed: error %v result %v, want an error and no result", v.Error, v.Result)
				}
			}
		})
	}
	c := pendingCall()
	c.ID = "cf_redeemed_by_agent"
	c.GatewayRuns = false
	if err := es.CreateConfirmation(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if _, rerr := h.taskState(context.Background(), cred, c.ID); rerr != errTaskNotFound {
		t.Errorf("a confirmation the agent redeems: %v, want no task", rerr)
	}
	if _, rerr := h.taskState(context.Background(), &countersign.Credential{ID: "other"}, "cf_state0"); rerr != errTaskNotFound {
		t.Errorf("another credential's confirmation: %v, want no task", rerr)
	}
}
