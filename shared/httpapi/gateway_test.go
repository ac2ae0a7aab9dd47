package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/google/go-cmp/cmp"
)

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	r := invoke(t, e.gateway, loadEvent(t, "healthz.json"))
	expect(t, r, 200, "")
	if diff := cmp.Diff(map[string]any{"status": "ok"}, r.json); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if r.Headers["Cache-Control"] != "no-store" {
		t.Errorf("Cache-Control %q", r.Headers["Cache-Control"])
	}
}

// normalize replaces the values that change from run to run in a 202 body.
func normalize(tb testing.TB, body, upstreamURL string) []byte {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatal(err)
	}
	conf := v["confirmation"].(map[string]any)
	id := conf["id"].(string)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(id), []byte("<confirmation-id>"))
	b = bytes.ReplaceAll(b, []byte(upstreamURL), []byte("<upstream>"))
	return append(b, '\n')
}

func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestCallsDeleteContactPauses(t *testing.T) {
	tests := []struct {
		name string
		req  func(tb testing.TB) Request
	}{
		{"plain body", func(tb testing.TB) Request { return loadEvent(tb, "calls-delete-contact.json") }},
		{"base64 body", func(tb testing.TB) Request {
			req := loadEvent(tb, "calls-delete-contact.json")
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(req.Body)), true
			return req
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := invoke(t, e.gateway, tt.req(t))
			expect(t, r, 202, "")
			if r.Headers["Content-Type"] != "application/json" || r.Headers["Cache-Control"] != "no-store" {
				t.Errorf("headers %v", r.Headers)
			}
			for _, leak := range []string{"/approve/", "sig=", "kid=", "task_token", "binding"} {
				if strings.Contains(r.Body, leak) {
					t.Errorf("the agent's 202 contains %q: %s", leak, r.Body)
				}
			}
			golden(t, "calls-delete-contact.202.json", normalize(t, r.Body, e.upURL))

			id, _ := get(r.json, "confirmation", "id").(string)
			if get(r.json, "event", "confirmation_id") != id {
				t.Errorf("event.confirmation_id %v, want %s", get(r.json, "event", "confirmation_id"), id)
			}
			c := e.stored(t, id)
			if c.Status != countersign.StatusPending || c.Credential != "chat-user" || len(c.Operations) != 1 || c.Operations[0].Path != "/contacts/12" {
				t.Errorf("stored %+v", c)
			}
			if n := len(e.up.seen()); n != 0 {
				t.Errorf("the upstream was called %d times before approval", n)
			}
			if diff := cmp.Diff([]string{"confirm:" + id}, e.wf.starts); diff != "" {
				t.Errorf("workflow starts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallsReadContact(t *testing.T) {
	e := newEnv(t)
	r := invoke(t, e.gateway, loadEvent(t, "calls-read-contact.json"))
	expect(t, r, 200, "")
	want := map[string]any{
		"status": "executed", "tier": "auto",
		"response": map[string]any{
			"status": float64(200),
			"body":   map[string]any{"id": "12", "name": "Ada Lovelace", "score": 1.5},
		},
	}
	got := map[string]any{"status": r.json["status"], "tier": r.json["tier"], "response": map[string]any{
		"status": get(r.json, "response", "status"), "body": get(r.json, "response", "body")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s\nfull: %s", diff, r.Body)
	}
	if !strings.Contains(r.Body, `"score":1.50`) {
		t.Errorf("the upstream's number was not kept exactly: %s", r.Body)
	}
	if h, _ := get(r.json, "response", "headers").(map[string]any); h["X-Crm-Version"] != "7" {
		t.Errorf("response.headers %v, want the upstream's", h)
	}
	if diff := cmp.Diff([]string{"GET /contacts/12"}, e.up.seen()); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}
}

func TestRESTGetPassesThrough(t *testing.T) {
	e := newEnv(t)
	r := invoke(t, e.gateway, loadEvent(t, "rest-get-contact.json"))
	if r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, r.Body)
	}
	if r.Body != `{"id": "12", "name": "Ada Lovelace", "score": 1.50}` || r.IsBase64Encoded {
		t.Errorf("body %q (base64 %v), want the upstream's body unchanged", r.Body, r.IsBase64Encoded)
	}
	if r.Headers["Content-Type"] != "application/json" || r.Headers["X-Crm-Version"] != "7" {
		t.Errorf("headers %v, want the upstream's", r.Headers)
	}
}

func TestConfirmationStatus(t *testing.T) {
	e := newEnv(t)
	t.Run("unknown id", func(t *testing.T) {
		r := invoke(t, e.gateway, loadEvent(t, "confirmation-status.json"))
		expect(t, r, 404, "unknown_confirmation")
		if r.json["status"] != "error" || r.json["reason"] == "" {
			t.Errorf("body %s", r.Body)
		}
	})
	created := invoke(t, e.gateway, loadEvent(t, "calls-delete-contact.json"))
	expect(t, created, 202, "")
	id := get(created.json, "confirmation", "id").(string)
	statusOf := func(key string) Request {
		req := loadEvent(t, "confirmation-status.json")
		req.RawPath = "/v1/confirmations/" + id
		req.RequestContext.HTTP.Path = req.RawPath
		req.Headers["authorization"] = "Bearer " + key
		return req
	}
	t.Run("its creator reads it", func(t *testing.T) {
		r := invoke(t, e.gateway, statusOf("cs_demo_ask"))
		expect(t, r, 200, "")
		if r.json["id"] != id || r.json["status"] != "pending" || r.json["kind"] != "call" || r.json["decided_at"] != nil {
			t.Errorf("body %s", r.Body)
		}
		if diff := cmp.Diff(get(created.json, "confirmation", "operations"), r.json["operations"]); diff != "" {
			t.Errorf("operations differ from the 202's (-202 +status):\n%s", diff)
		}
	})
	t.Run("another credential gets 404", func(t *testing.T) {
		expect(t, invoke(t, e.gateway, statusOf("cs_demo_agent")), 404, "unknown_confirmation")
	})
	t.Run("expired by the clock", func(t *testing.T) {
		e.clock.Advance(601 * time.Second)
		r := invoke(t, e.gateway, statusOf("cs_demo_ask"))
		expect(t, r, 200, "")
		if r.json["status"] != "expired" {
			t.Errorf("status %v, want expired", r.json["status"])
		}
	})
}

func TestGatewayRefusals(t *testing.T) {
	big := strings.Repeat("x", 1<<20+1)
	tests := []struct {
		name   string
		event  string
		edit   func(r *Request)
		status int
		code   string
	}{
		{name: "missing Authorization", event: "calls-delete-contact.json", status: 401, code: "unauthenticated",
			edit: func(r *Request) { delete(r.Headers, "authorization") }},
		{name: "unknown key", event: "calls-delete-contact.json", status: 401, code: "unauthenticated",
			edit: func(r *Request) { r.Headers["authorization"] = "Bearer cs_nope" }},
		{name: "not a bearer key", event: "rest-get-contact.json", status: 401, code: "unauthenticated",
			edit: func(r *Request) { r.Headers["authorization"] = "Basic Y3M6ZGVtbw==" }},
		{name: "oversized body without credentials", event: "calls-delete-contact.json", status: 413, code: "payload_too_large",
			edit: func(r *Request) { delete(r.Headers, "authorization"); r.Body = big }},
		{name: "oversized body with an unknown key", event: "calls-delete-contact.json", status: 413, code: "payload_too_large",
			edit: func(r *Request) { r.Headers["authorization"] = "Bearer cs_nope"; r.Body = big }},
		{name: "oversized base64 body", event: "calls-delete-contact.json", status: 413, code: "payload_too_large",
			edit: func(r *Request) {
				r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(big)), true
			}},
		{name: "exactly 1 MiB is not too large", event: "calls-delete-contact.json", status: 400, code: "invalid_request",
			edit: func(r *Request) { r.Body = strings.Repeat(" ", 1<<20) }},
		{name: "bad base64", event: "calls-delete-contact.json", status: 400, code: "invalid_request",
			edit: func(r *Request) { r.Body, r.IsBase64Encoded = "%%%not base64", true }},
		{name: "malformed JSON", event: "calls-delete-contact.json", status: 400, code: "invalid_request",
			edit: func(r *Request) { r.Body = `{"connection":` }},
		{name: "GET /v1/calls", event: "calls-delete-contact.json", status: 405, code: "method_not_allowed",
			edit: func(r *Request) { r.RequestContext.HTTP.Method = "GET"; r.Body = "" }},
		{name: "POST /healthz", event: "healthz.json", status: 405, code: "method_not_allowed",
			edit: func(r *Request) { r.RequestContext.HTTP.Method = "POST" }},
		{name: "DELETE a confirmation", event: "confirmation-status.json", status: 405, code: "method_not_allowed",
			edit: func(r *Request) { r.RequestContext.HTTP.Method = "DELETE" }},
		{name: "unknown route", event: "healthz.json", status: 404, code: "not_found",
			edit: func(r *Request) { r.RawPath = "/v2/nothing"; r.RequestContext.HTTP.Path = r.RawPath }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			req := loadEvent(t, tt.event)
			tt.edit(&req)
			r := invoke(t, e.gateway, req)
			expect(t, r, tt.status, tt.code)
			if r.json["status"] != "error" || r.json["reason"] == "" {
				t.Errorf("body %s, want status error and a reason", r.Body)
			}
			if n := len(e.up.seen()); n != 0 {
				t.Errorf("the upstream was called %d times", n)
			}
			if len(e.wf.starts) != 0 {
				t.Errorf("a workflow was started: %v", e.wf.starts)
			}
		})
	}
}
