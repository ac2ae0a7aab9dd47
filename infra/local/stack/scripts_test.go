package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/tasks"
)

// batchScript reads two contacts, deletes two (confirm tier) and pays an
// amount over the threshold (escalated to review: denied, not collected).
const batchScript = `
const a = call('crm', 'GET', '/contacts/1');
const b = call('crm', 'GET', '/contacts/2');
const d3 = call('crm', 'DELETE', '/contacts/3');
const d4 = call('crm', 'DELETE', '/contacts/4');
const pay = call('crm', 'POST', '/payments', {body: {amount: 20000, currency: 'EUR', to: 'ACME'}});
console.log('read', a.body.name, 'and', b.body.name);
({names: [a.body.name, b.body.name], d3, d4, payment: pay.denied && pay.code})`

// script posts to /v1/scripts.
func (h *harness) script(key, src, confirmationID string) result {
	h.t.Helper()
	body := map[string]any{"script": src}
	if confirmationID != "" {
		body["confirmation_id"] = confirmationID
	}
	b, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(http.MethodPost, "/v1/scripts", key, bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
}

// callStates lists the states of a script answer's calls.
func callStates(r result) []string {
	var out []string
	calls, _ := r.get("calls").([]any)
	for _, c := range calls {
		out = append(out, c.(map[string]any)["state"].(string))
	}
	return out
}

// TestScriptBatch is code mode end to end over HTTP: the first run reads
// twice, collects the two deletes and is denied the escalated payment; the
// approver clears one delete on the page; the gateway runs the script
// again: the reads replay, the approved delete runs once, the cleared one
// is {rejected: true}, and the result is stored. Approving again,
// resubmitting and retrying the Execute task run nothing.
func TestScriptBatch(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.script("cs_test_ask", batchScript, "")
	expect(t, r, http.StatusAccepted, "")
	if r.str("status") != "confirmation_required" || r.str("confirmation.kind") != "script" || r.str("confirmation.status") != "pending" {
		t.Fatalf("answer %s", r.body)
	}
	if diff := cmp.Diff([]string{"ran", "ran", "pending", "pending", "denied"}, callStates(r)); diff != "" {
		t.Fatalf("first run (-want +got):\n%s", diff)
	}
	if r.str("calls.4.response.code") != "review_required" || r.get("calls.2.operation") != 0.0 || r.get("calls.3.operation") != 1.0 {
		t.Errorf("calls %s", r.body)
	}
	ops, _ := r.get("confirmation.operations").([]any)
	if len(ops) != 2 || r.str("confirmation.operations.0.path") != "/contacts/3" || r.str("confirmation.operations.1.path") != "/contacts/4" {
		t.Fatalf("the batch lists %v, want exactly the two deletes", ops)
	}
	if strings.Contains(string(r.body), "/approve/") || strings.Contains(string(r.body), "sig=") {
		t.Fatalf("the agent saw an approver link: %s", r.body)
	}
	if got := r.get("logs"); !cmp.Equal(got, []any{"read Ada Lovelace and Alan Turing"}) {
		t.Errorf("logs %v", got)
	}
	id := r.str("confirmation.id")
	if n := h.upstream.Count("DELETE", "/contacts/3") + h.upstream.Count("DELETE", "/contacts/4") + h.upstream.Count("POST", "/payments"); n != 0 {
		t.Fatal("a collected or denied call reached the upstream")
	}

	// One notification, one page with a checkbox per collected call.
	link := h.approvalLink(id)
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	for _, want := range []string{"Approve 2 operations?", "/contacts/3", "/contacts/4", `name="op" value="0"`, `name="op" value="1"`} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The approver keeps the first delete and clears the second.
	expect(t, h.press(page, "approve", "1"), http.StatusOK, "")
	h.webhook.waitEvent(t, notify.TypeExecuted, id)
	if n := h.webhook.count(notify.TypeRequested, id); n != 1 {
		t.Errorf("%d requested events, want one notification", n)
	}

	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, st, http.StatusOK, "")
	want := map[string]any{"names": []any{"Ada Lovelace", "Alan Turing"}, "d3": map[string]any{"status": 204.0, "body": nil},
		"d4": map[string]any{"rejected": true}, "payment": "review_required"}
	if diff := cmp.Diff(want, st.get("result")); diff != "" {
		t.Errorf("stored result (-want +got):\n%s", diff)
	}
	if st.str("status") != "executed" || st.str("kind") != "script" || st.get("operations.0.selected") != true || st.get("operations.1.selected") != false {
		t.Errorf("status %s", st.body)
	}
	if diff := cmp.Diff([]string{"replayed", "replayed", "ran", "rejected", "denied"}, callStates(st)); diff != "" {
		t.Errorf("calls after approval (-want +got):\n%s", diff)
	}
	wantCounts := func() {
		t.Helper()
		for _, c := range []struct {
			method, path string
			n            int
		}{{"GET", "/contacts/1", 1}, {"GET", "/contacts/2", 1}, {"DELETE", "/contacts/3", 1}, {"DELETE", "/contacts/4", 0}, {"POST", "/payments", 0}} {
			if got := h.upstream.Count(c.method, c.path); got != c.n {
				t.Errorf("upstream saw %s %s %d times, want %d", c.method, c.path, got, c.n)
			}
		}
	}
	wantCounts()
	reqs := h.upstream.Requests()
	for _, rq := range reqs {
		if rq.Method == "DELETE" && rq.IdempotencyKey != id+":0" {
			t.Errorf("the approved delete went with Idempotency-Key %q", rq.IdempotencyKey)
		}
	}

	// Approving again, resubmitting, retrying the Execute task: nothing runs.
	expect(t, h.post(link, "approve", nil, "application/json"), http.StatusConflict, "")
	again := h.script("cs_test_ask", batchScript, id)
	expect(t, again, http.StatusOK, "")
	if diff := cmp.Diff(want, again.get("result")); diff != "" || again.str("status") != "completed" {
		t.Errorf("resubmission %s", again.body)
	}
	exec := gatewayapp.ExecuteTask(h.stack.app)
	for range 2 {
		out, err := exec.Handle(context.Background(), tasks.ExecuteInput{ConfirmationID: id})
		if err != nil || out.Status != "executed" {
			t.Fatalf("retried Execute task: %+v, %v", out, err)
		}
	}
	wantCounts()
	if n := h.webhook.count(notify.TypeExecuted, id); n != 1 {
		t.Errorf("%d executed events, want 1", n)
	}
	// Someone else's key cannot read it; another script is not it.
	expect(t, h.script("cs_test_ask2", batchScript, id), http.StatusNotFound, "unknown_confirmation")
	expect(t, h.script("cs_test_ask", batchScript+";", id), http.StatusForbidden, "confirmation_mismatch")
}

// TestScriptRestart: the stack stops while the run after approval has the
// approved delete on its way upstream; the delete finishes and is
// recorded, and after the restart the run is made again: nothing is lost
// and nothing runs twice.
func TestScriptRestart(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newHarness(t, harnessOptions{gate: func(r *http.Request) {
		if r.Method == http.MethodDelete && r.URL.Path == "/contacts/3" {
			once.Do(func() { close(arrived) })
			<-release
		}
	}})
	r := h.script("cs_test_ask", batchScript, "")
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	expect(t, h.post(h.approvalLink(id), "approve", []int{0, 1}, "application/json"), http.StatusOK, "")
	<-arrived
	stopping := h.stack.stopping
	go func() {
		// The stack shuts down (the workflow engine cancels the Execute
		// task) with the delete in flight; then the CRM answers it.
		<-stopping
		time.Sleep(100 * time.Millisecond)
		close(release)
	}()
	h.restart()
	h.webhook.waitEvent(t, notify.TypeExecuted, id)
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	if st.str("status") != "executed" || st.get("result.d3.status") != 204.0 || st.get("result.d4.status") != 204.0 {
		t.Fatalf("status %s", st.body)
	}
	if diff := cmp.Diff([]string{"replayed", "replayed", "ran", "ran", "denied"}, callStates(st)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// The run after approval was cut by the shutdown and made again.
	if run, err := h.stack.store.GetScriptRun(context.Background(), id); err != nil || run.Attempts != 2 {
		t.Errorf("journal %+v, %v; want two runs after approval", run, err)
	}
	for _, c := range []struct {
		method, path string
	}{{"GET", "/contacts/1"}, {"GET", "/contacts/2"}, {"DELETE", "/contacts/3"}, {"DELETE", "/contacts/4"}} {
		if n := h.upstream.Count(c.method, c.path); n != 1 {
			t.Errorf("upstream saw %s %s %d times, want once", c.method, c.path, n)
		}
	}
}

// TestScriptAnswers covers the route's other answers and the limits over HTTP.
func TestScriptAnswers(t *testing.T) {
	h := newHarness(t, harnessOptions{scripts: `{"time_limit_ms": 500, "max_calls": 100}`})
	t.Run("endless loop", func(t *testing.T) {
		r := h.script("cs_test_run", "let n = 0;\nwhile (true) { n++ }", "")
		expect(t, r, http.StatusUnprocessableEntity, "script_limit_exceeded")
		if r.get("line") == nil || r.get("column") == nil || !strings.Contains(r.str("reason"), "longer than 500ms") {
			t.Errorf("answer %s", r.body)
		}
	})
	t.Run("a thousand calls", func(t *testing.T) {
		// The call limit, not the clock, must stop this run: 100 calls
		// through the real upstream under -race on a busy machine can take
		// longer than the 500 ms the other cases use.
		h := newHarness(t, harnessOptions{scripts: `{"time_limit_ms": 20000, "max_calls": 100}`})
		before := h.upstream.Count("GET", "/contacts")
		r := h.script("cs_test_run", "for (let i = 0; i < 1000; i++) call('crm', 'GET', '/contacts')", "")
		expect(t, r, http.StatusUnprocessableEntity, "script_limit_exceeded")
		if n := h.upstream.Count("GET", "/contacts") - before; n != 100 {
			t.Errorf("upstream saw %d calls, want 100", n)
		}
		if calls, _ := r.get("calls").([]any); len(calls) != 100 || !strings.Contains(r.str("reason"), "more than 100 times") {
			t.Errorf("%d calls listed, reason %q", len(calls), r.str("reason"))
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		r := h.script("cs_test_run", "call('crm', 'GET', '/contacts/1')\nlet = ;", "")
		expect(t, r, http.StatusUnprocessableEntity, "script_error")
		if r.get("line") != 2.0 || !strings.Contains(r.str("reason"), "SyntaxError") {
			t.Errorf("answer %s", r.body)
		}
	})
	t.Run("requests", func(t *testing.T) {
		expect(t, h.do(http.MethodPost, "/v1/scripts", "cs_test_run", strings.NewReader(`{"script": "1", "intent": "read"}`), nil), http.StatusBadRequest, "invalid_request")
		expect(t, h.do(http.MethodPost, "/v1/scripts", "cs_test_run", strings.NewReader(`{}`), nil), http.StatusBadRequest, "invalid_request")
		expect(t, h.do(http.MethodPost, "/v1/scripts", "cs_test_run", strings.NewReader(`{"script": 5}`), nil), http.StatusBadRequest, "invalid_request")
		expect(t, h.script("cs_test_run", strings.Repeat("1;", 40000), ""), http.StatusBadRequest, "invalid_request")
		expect(t, h.do(http.MethodGet, "/v1/scripts", "cs_test_run", nil, nil), http.StatusMethodNotAllowed, "method_not_allowed")
		expect(t, h.script("", "1", ""), http.StatusUnauthorized, "unauthenticated")
		expect(t, h.script("cs_test_run", "1", "cf_nothing"), http.StatusNotFound, "unknown_confirmation")
		r := h.script("cs_test_run", "({ok: true})", "")
		expect(t, r, http.StatusOK, "")
		if r.str("status") != "completed" || r.get("result.ok") != true || r.get("calls") == nil || r.get("logs") == nil {
			t.Errorf("answer %s", r.body)
		}
	})
	t.Run("credential choices apply per call", func(t *testing.T) {
		del := "call('crm', 'DELETE', '/contacts/5')"
		r := h.script("cs_test_refuse", del, "")
		expect(t, r, http.StatusOK, "")
		if r.str("calls.0.state") != "denied" || r.str("result.code") != "requires_confirmation" {
			t.Errorf("refuse: %s", r.body)
		}
		r = h.script("cs_test_agent", del, "")
		expect(t, r, http.StatusOK, "")
		if r.str("calls.0.state") != "ran" || r.get("result.status") != 204.0 || r.get("result.notice.requires_confirmation") != true {
			t.Errorf("ask_agent: %s", r.body)
		}
		r = h.script("cs_test_run", "call('crm', 'DELETE', '/contacts/6')", "")
		expect(t, r, http.StatusOK, "")
		if r.str("calls.0.state") != "ran" || r.get("result.status") != 204.0 {
			t.Errorf("run_without_asking: %s", r.body)
		}
		if h.upstream.Count("DELETE", "/contacts/5") != 1 || h.upstream.Count("DELETE", "/contacts/6") != 1 {
			t.Errorf("upstream %+v", h.upstream.Requests())
		}
	})
	t.Run("divergent replay", func(t *testing.T) {
		src := "const d = call('crm', 'DELETE', '/contacts/7');\ncall('crm', 'GET', d.pending ? '/contacts/8' : '/contacts/9');\nd"
		r := h.script("cs_test_ask", src, "")
		expect(t, r, http.StatusAccepted, "")
		id := r.str("confirmation.id")
		expect(t, h.post(h.approvalLink(id), "approve", nil, "application/json"), http.StatusOK, "")
		h.webhook.waitEvent(t, notify.TypeExecuted, id)
		r = h.script("cs_test_ask", src, id)
		expect(t, r, http.StatusUnprocessableEntity, "script_diverged")
		if r.get("line") != 2.0 || !strings.Contains(r.str("reason"), "it was GET /contacts/8 (crm), now it is GET /contacts/9 (crm)") {
			t.Errorf("answer %s", r.body)
		}
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
		if st.str("status") != "partially_executed" || st.str("error.code") != "script_diverged" {
			t.Errorf("status %s", st.body)
		}
		if h.upstream.Count("DELETE", "/contacts/7") != 1 || h.upstream.Count("GET", "/contacts/9") != 0 {
			t.Errorf("upstream %+v", h.upstream.Requests())
		}
	})
}
