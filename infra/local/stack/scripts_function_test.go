package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/notify"
)

// TestScriptsFunction: a deployment serves code mode from a function of
// its own. Its handler (gatewayapp.Function, through aws-lambda-go as the
// runtime invokes it) answers its routes' API Gateway events (/mcp and
// POST /v1/scripts) as the local stack does and runs a script batch's
// script again from the batch workflow's execute input, with the execute
// task's own answers and errors. The gateway function's surface
// (app.Gateway, which links no JavaScript engine) shows a script batch's
// status byte for byte as the full surface does, before and after the run
// after approval.
func TestScriptsFunction(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	fn := lambda.NewHandler(gatewayapp.Function(h.stack.app).Handle)
	full := lambdaHandler(gatewayapp.Gateway(h.stack.app))
	lean := lambdaHandler(h.stack.app.Gateway())
	invoke := func(hd lambda.Handler, r *http.Request) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev, err := eventOf(r)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := hd.Invoke(t.Context(), payload)
		if err != nil {
			t.Fatalf("invoke %s %s: %v", r.Method, r.URL, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	get := func(hd lambda.Handler, path string) events.APIGatewayV2HTTPResponse {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer cs_test_ask")
		return invoke(hd, r)
	}

	t.Run("mcp sample event", func(t *testing.T) {
		raw, err := os.ReadFile("../../../events/mcp-tools-list.json")
		if err != nil {
			t.Fatal(err)
		}
		out, err := fn.Invoke(t.Context(), bytes.ReplaceAll(raw, []byte("cs_demo_ask"), []byte("cs_test_ask")))
		if err != nil {
			t.Fatal(err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"name":"run_script"`) {
			t.Errorf("tools/list: %d %s", resp.StatusCode, resp.Body)
		}
	})

	body, _ := json.Marshal(map[string]any{"script": batchScript})
	r := httptest.NewRequest(http.MethodPost, "/v1/scripts", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer cs_test_ask")
	r.Header.Set("Content-Type", "application/json")
	resp := invoke(fn, r)
	var answer struct {
		Status       string `json:"status"`
		Confirmation struct {
			ID string `json:"id"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &answer); err != nil || resp.StatusCode != http.StatusAccepted || answer.Status != "confirmation_required" {
		t.Fatalf("POST /v1/scripts: %d %s", resp.StatusCode, resp.Body)
	}
	id := answer.Confirmation.ID
	same := func(when string) {
		t.Helper()
		a, b := get(full, "/v1/confirmations/"+id), get(lean, "/v1/confirmations/"+id)
		if a.StatusCode != http.StatusOK || !strings.Contains(a.Body, `"calls"`) {
			t.Fatalf("%s: status: %d %s", when, a.StatusCode, a.Body)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s: the gateway function's status of a script batch differs from the full surface's (-full +gateway):\n%s", when, diff)
		}
	}
	same("pending")

	// The gateway function does not run scripts: its route is the scripts
	// function's.
	r = httptest.NewRequest(http.MethodPost, "/v1/scripts", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer cs_test_ask")
	r.Header.Set("Content-Type", "application/json")
	if resp := invoke(lean, r); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/scripts on the gateway function: %d %s, want 404", resp.StatusCode, resp.Body)
	}

	expect(t, h.post(h.approvalLink(id), "approve", nil, "application/json"), http.StatusOK, "")
	h.webhook.waitEvent(t, notify.TypeExecuted, id)
	same("executed")
	if n := h.upstream.Count("DELETE", "/contacts/3"); n != 1 {
		t.Fatalf("DELETE /contacts/3 ran %d times, want 1", n)
	}

	// The batch workflow's execute input: a retry replays, runs nothing.
	task := func(in string) (string, error) {
		out, err := fn.Invoke(t.Context(), []byte(in))
		return string(out), err
	}
	if out, err := task(`{"confirmation_id": "` + id + `"}`); err != nil || out != `{"status":"executed"}` {
		t.Errorf("execute input: %s, %v", out, err)
	}
	if n := h.upstream.Count("DELETE", "/contacts/3"); n != 1 {
		t.Errorf("the retried execute task ran DELETE /contacts/3 again (%d times)", n)
	}
	// Its errors are the execute task's, with the same Lambda error type.
	exec := lambda.NewHandler(gatewayapp.ExecuteTask(h.stack.app).Handle)
	_, want := exec.Invoke(t.Context(), []byte(`{"confirmation_id": "cf_unknown"}`))
	_, got := task(`{"confirmation_id": "cf_unknown"}`)
	// (aws-lambda-go names the error type errorType: the state machine's
	// Retry and Catch match on it.)
	if want == nil || got == nil || fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", want, want) {
		t.Errorf("unknown confirmation: %T %v, want %T %v", got, got, want, want)
	}
	for _, bad := range []string{`"x"`, `[]`, `{"requestContext": 1}`} {
		if out, err := task(bad); err == nil {
			t.Errorf("event %s: answered %s, want an error", bad, out)
		}
	}
}
