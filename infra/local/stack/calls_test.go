package stack

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestCallsTable drives every row of docs/api.md's table of /v1/calls that a single call can
// reach, through the real HTTP server, against a recording upstream: the
// upstream is called exactly when the call executes, and never otherwise.
func TestCallsTable(t *testing.T) {
	h := newHarness(t, harnessOptions{hook: func(req map[string]any) (string, string) {
		args, _ := req["args"].(map[string]any)
		path, _ := args["path"].(map[string]any)
		switch path["id"] {
		case "66":
			return "deny", "contact 66 is protected"
		case "77":
			return "ask", "contact 77 needs a person"
		case "88":
			return "500", ""
		}
		return "allow", ""
	}})
	type row struct {
		name     string
		key      string
		body     map[string]any
		status   int
		code     string
		upstream string // "METHOD /path" that must be called once; "" means never
		check    func(t *testing.T, r result)
	}
	call := func(conn, method, path, intent string, extra ...any) map[string]any {
		m := map[string]any{"connection": conn, "method": method, "path": path, "intent": intent}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	denied := func(tier string, escalated bool) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			if r.str("status") != "denied" || r.str("tier") != tier || r.get("escalated") != escalated || r.str("reason") == "" {
				t.Errorf("denial body = %s, want status denied, tier %s, escalated %v and a reason", r.body, tier, escalated)
			}
		}
	}
	rows := []row{
		{name: "auto read executes", key: "cs_test_ask", body: call("crm", "GET", "/contacts/12", "read"), status: 200, upstream: "GET /contacts/12",
			check: func(t *testing.T, r result) {
				if r.str("status") != "executed" || r.str("tier") != "auto" || r.get("response.status") != float64(200) || r.str("response.body.id") == "" && r.get("response.body.id") == nil {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "auto write with write intent executes", key: "cs_test_ask", body: call("crm", "PATCH", "/contacts/3", "write", "body", map[string]any{"name": "Ada"}), status: 200, upstream: "PATCH /contacts/3"},
		{name: "query is forwarded", key: "cs_test_ask", body: call("crm", "GET", "/contacts", "read", "query", map[string]string{"limit": "2"}), status: 200, upstream: "GET /contacts"},
		{name: "ask_person at confirm pauses with 202", key: "cs_test_ask", body: call("crm", "DELETE", "/contacts/12", "write"), status: 202,
			check: func(t *testing.T, r result) {
				if r.str("status") != "confirmation_required" || r.str("tier") != "confirm" || !strings.HasPrefix(r.str("confirmation.id"), "cf_") ||
					r.str("confirmation.status") != "pending" || r.str("preview.method") != "DELETE" || !strings.HasSuffix(r.str("preview.url"), "/contacts/12") ||
					r.str("event.type") != "confirmation_required" || r.str("event.endpoint") != "/contacts/{id}" || r.get("event.escalated") != false ||
					r.str("event.confirmation_id") != r.str("confirmation.id") || r.str("event.timestamp") == "" || r.str("confirmation.expires_at") == "" {
					t.Errorf("202 body = %s", r.body)
				}
				if strings.Contains(string(r.body), "/approve/") || strings.Contains(string(r.body), "sig=") {
					t.Errorf("the agent saw an approver link: %s", r.body)
				}
			}},
		{name: "origin chat defaults to ask_person", key: "cs_test_chat", body: call("crm", "DELETE", "/contacts/5", "write"), status: 202},
		{name: "requires-confirmation tool pauses like confirm", key: "cs_test_ask", body: call("crm", "POST", "/contacts/4/archive", "write"), status: 202},
		{name: "ask_agent executes with a notice", key: "cs_test_agent", body: call("crm", "DELETE", "/contacts/13", "write"), status: 200, upstream: "DELETE /contacts/13",
			check: func(t *testing.T, r result) {
				if r.get("notice.requires_confirmation") != true || r.str("notice.reason") == "" {
					t.Errorf("no notice: %s", r.body)
				}
			}},
		{name: "run_without_asking executes", key: "cs_test_run", body: call("crm", "DELETE", "/contacts/14", "write"), status: 200, upstream: "DELETE /contacts/14",
			check: func(t *testing.T, r result) {
				if r.get("notice") != nil {
					t.Errorf("unexpected notice: %s", r.body)
				}
			}},
		{name: "refuse denies requires_confirmation", key: "cs_test_refuse", body: call("crm", "DELETE", "/contacts/15", "write"), status: 403, code: "requires_confirmation", check: denied("confirm", false)},
		{name: "review tier denies and queues a review", key: "cs_test_run", body: call("crm", "POST", "/accounts/2/close", "write"), status: 403, code: "review_required",
			check: func(t *testing.T, r result) {
				denied("review", false)(t, r)
				if !strings.HasPrefix(r.str("review.id"), "rv_") {
					t.Errorf("no review id: %s", r.body)
				}
			}},
		{name: "never tier is blocked", key: "cs_test_run", body: call("crm", "DELETE", "/accounts/2", "write"), status: 403, code: "blocked", check: denied("never", false)},
		{name: "threshold escalation denies as escalated review", key: "cs_test_ask", body: call("crm", "POST", "/payments", "write", "body", map[string]any{"amount": 10001, "currency": "EUR"}), status: 403, code: "review_required",
			check: func(t *testing.T, r result) {
				denied("review", true)(t, r)
				if !strings.Contains(r.str("reason"), "body.amount") || !strings.Contains(r.str("rule"), "policy.json endpoints[6].escalate[0] body.amount above 10000") {
					t.Errorf("reason or rule does not name the rule: %s", r.body)
				}
			}},
		{name: "threshold at the limit does not escalate", key: "cs_test_run", body: call("crm", "POST", "/payments", "write", "body", map[string]any{"amount": 10000, "currency": "EUR"}), status: 200, upstream: "POST /payments"},
		{name: "delegated call with escalateConfirm is denied as escalated", key: "cs_test_ask", body: call("crm", "DELETE", "/contacts/16", "write", "delegated", true), status: 403, code: "review_required", check: denied("review", true)},
		{name: "read-only key cannot write", key: "cs_test_ro", body: call("crm", "PATCH", "/contacts/3", "write", "body", map[string]any{"name": "x"}), status: 403, code: "read_only"},
		{name: "read-only key can read", key: "cs_test_ro", body: call("crm", "GET", "/contacts/3", "read"), status: 200, upstream: "GET /contacts/3"},
		{name: "intent read on a DELETE is refused", key: "cs_test_run", body: call("crm", "DELETE", "/contacts/17", "read"), status: 403, code: "write_intent_required"},
		{name: "hook deny", key: "cs_test_run", body: call("hooked", "GET", "/contacts/66", "read"), status: 403, code: "hook_denied",
			check: func(t *testing.T, r result) {
				if r.str("reason") != "contact 66 is protected" {
					t.Errorf("reason = %q", r.str("reason"))
				}
			}},
		{name: "hook ask raises an auto read to confirm", key: "cs_test_ask", body: call("hooked", "GET", "/contacts/77", "read"), status: 202},
		{name: "broken hook refuses", key: "cs_test_run", body: call("hooked", "GET", "/contacts/88", "read"), status: 403, code: "hook_denied"},
		{name: "hook allow executes", key: "cs_test_run", body: call("hooked", "GET", "/contacts/9", "read"), status: 200, upstream: "GET /contacts/9"},
		{name: "unknown path is unknown_operation", key: "cs_test_run", body: call("crm", "GET", "/secrets", "read"), status: 404, code: "unknown_operation"},
		{name: "unknown method is unknown_operation", key: "cs_test_run", body: call("crm", "PUT", "/contacts/1", "write"), status: 404, code: "unknown_operation"},
		{name: "unknown connection is unknown_operation", key: "cs_test_run", body: call("nope", "GET", "/contacts", "read"), status: 404, code: "unknown_operation"},
		{name: "hidden operator-gated tool is unknown to agents", key: "cs_test_run", body: call("crm", "POST", "/contacts/purge", "write"), status: 404, code: "unknown_operation"},
		{name: "connection outside the credential's list", key: "cs_test_billing", body: call("crm", "GET", "/contacts", "read"), status: 404, code: "unknown_operation"},
		{name: "upstream unreachable", key: "cs_test_billing", body: call("billing", "GET", "/payments", "read"), status: 502, code: "upstream_unreachable"},
		{name: "missing key", key: "", body: call("crm", "GET", "/contacts", "read"), status: 401, code: "unauthenticated"},
		{name: "unknown key", key: "cs_nope", body: call("crm", "GET", "/contacts", "read"), status: 401, code: "unauthenticated"},
		{name: "missing intent", key: "cs_test_run", body: map[string]any{"connection": "crm", "method": "GET", "path": "/contacts"}, status: 400, code: "invalid_request",
			check: func(t *testing.T, r result) {
				if !strings.Contains(r.str("reason"), "intent") {
					t.Errorf("reason does not name the field: %s", r.body)
				}
			}},
		{name: "unknown field", key: "cs_test_run", body: call("crm", "GET", "/contacts", "read", "bogus", 1), status: 400, code: "invalid_request",
			check: func(t *testing.T, r result) {
				if !strings.Contains(r.str("reason"), "bogus") {
					t.Errorf("reason does not name the field: %s", r.body)
				}
			}},
		{name: "bad intent", key: "cs_test_run", body: call("crm", "GET", "/contacts", "maybe"), status: 400, code: "invalid_request"},
		{name: "confirmed_write without an id", key: "cs_test_ask", body: call("crm", "DELETE", "/contacts/12", "confirmed_write"), status: 400, code: "invalid_request"},
		{name: "lowercase method", key: "cs_test_run", body: call("crm", "get", "/contacts", "read"), status: 400, code: "invalid_request"},
		{name: "path without slash", key: "cs_test_run", body: call("crm", "GET", "contacts", "read"), status: 400, code: "invalid_request"},
		{name: "dot segment in the path", key: "cs_test_run", body: call("crm", "GET", "/contacts/..", "read"), status: 400, code: "invalid_request"},
		{name: "encoded dot segment in the path", key: "cs_test_run", body: call("crm", "DELETE", "/contacts/%2e%2E", "write"), status: 400, code: "invalid_request"},
		{name: "a number written as a string cannot slip under a threshold", key: "cs_test_ask", body: call("crm", "POST", "/payments", "write", "body", map[string]any{"amount": "99999"}), status: 403, code: "review_required", check: denied("review", true)},
		{name: "unknown confirmation", key: "cs_test_ask", body: call("crm", "DELETE", "/contacts/12", "confirmed_write", "confirmation_id", "cf_nope"), status: 404, code: "unknown_confirmation"},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			h.upstream.Reset()
			r := h.call(tt.key, tt.body)
			expect(t, r, tt.status, tt.code)
			if r.status != 202 && r.str("reason") == "" && r.status >= 300 {
				t.Errorf("no reason in %s", r.body)
			}
			reqs := h.upstream.Requests()
			if tt.upstream == "" {
				if len(reqs) != 0 {
					t.Errorf("upstream called %d times, want never: %+v", len(reqs), reqs)
				}
			} else {
				method, path, _ := strings.Cut(tt.upstream, " ")
				if len(reqs) != 1 || reqs[0].Method != method || reqs[0].Path != path {
					t.Errorf("upstream requests = %+v, want exactly %s", reqs, tt.upstream)
				} else if reqs[0].Header.Get("X-Upstream-Token") != "upstream-secret" && strings.HasPrefix(tt.upstream, "") && tt.body["connection"] == "crm" {
					t.Errorf("configured header not forwarded: %v", reqs[0].Header)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestCallsMalformedAndOversized(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.do(http.MethodPost, "/v1/calls", "cs_test_run", strings.NewReader(`{"connection": "crm",`), map[string]string{"Content-Type": "application/json"})
	expect(t, r, 400, "invalid_request")
	big := bytes.Repeat([]byte("a"), 1<<20+10)
	body := append([]byte(`{"connection":"crm","method":"POST","path":"/contacts","intent":"write","body":{"x":"`), big...)
	body = append(body, []byte(`"}}`)...)
	r = h.do(http.MethodPost, "/v1/calls", "cs_test_run", bytes.NewReader(body), map[string]string{"Content-Type": "application/json"})
	expect(t, r, 413, "payload_too_large")
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
	r = h.do(http.MethodGet, "/v1/calls", "cs_test_run", nil, nil)
	expect(t, r, 405, "method_not_allowed")
}

func TestIdempotencyKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	body := map[string]any{"connection": "crm", "method": "POST", "path": "/contacts", "intent": "write", "body": map[string]any{"name": "Grace"}}
	first := h.call("cs_test_run", body, "Idempotency-Key", "k-1")
	expect(t, first, 200, "")
	second := h.call("cs_test_run", body, "Idempotency-Key", "k-1")
	expect(t, second, 200, "")
	if !bytes.Equal(first.body, second.body) {
		t.Errorf("replay differs:\n%s\n%s", first.body, second.body)
	}
	if n := h.upstream.Count("POST", "/contacts"); n != 1 {
		t.Errorf("upstream called %d times, want 1", n)
	}
	if got := h.upstream.Requests()[0].IdempotencyKey; got != "runner:k-1" {
		t.Errorf("upstream Idempotency-Key = %q, want runner:k-1", got)
	}
	body["body"] = map[string]any{"name": "Other"}
	expect(t, h.call("cs_test_run", body, "Idempotency-Key", "k-1"), 422, "idempotency_key_reused")
	// Another credential's key space is its own.
	expect(t, h.call("cs_test_agent", body, "Idempotency-Key", "k-1"), 200, "")
	// A paused call replays the same confirmation instead of creating another.
	del := map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/12", "intent": "write"}
	a := h.call("cs_test_ask", del, "Idempotency-Key", "d-1")
	b := h.call("cs_test_ask", del, "Idempotency-Key", "d-1")
	expect(t, a, 202, "")
	if a.str("confirmation.id") != b.str("confirmation.id") {
		t.Errorf("a retried write created a second confirmation: %s vs %s", a.str("confirmation.id"), b.str("confirmation.id"))
	}
}

func TestREST(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.do(http.MethodGet, "/v1/rest/crm/contacts/12?verbose=1", "cs_test_ask", nil, nil)
	expect(t, r, 200, "")
	if r.json["id"] == nil {
		t.Errorf("REST did not pass the upstream body through unchanged: %s", r.body)
	}
	reqs := h.upstream.Requests()
	if len(reqs) != 1 || reqs[0].RawQuery != "verbose=1" || reqs[0].Header.Get("Authorization") != "" {
		t.Errorf("upstream saw %+v", reqs)
	}
	// ask_person over plain REST cannot ask a person.
	r = h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, nil)
	expect(t, r, 403, "requires_confirmation")
	// ask_agent and run_without_asking run it.
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/contacts/18", "cs_test_agent", nil, nil), 204, "")
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/contacts/19", "cs_test_run", nil, nil), 204, "")
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/accounts/1", "cs_test_run", nil, nil), 403, "blocked")
	expect(t, h.do(http.MethodPatch, "/v1/rest/crm/contacts/3", "cs_test_ro", strings.NewReader(`{"name":"x"}`), nil), 403, "read_only")
	expect(t, h.do(http.MethodGet, "/v1/rest/crm/nothing", "cs_test_run", nil, nil), 404, "unknown_operation")
	expect(t, h.do(http.MethodDelete, "/v1/rest/crm/contacts/%2E%2E", "cs_test_run", nil, nil), 400, "invalid_request")
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Errorf("refused REST call reached the upstream %d times", n)
	}
	// Prefer: respond-async gives 202 with Location.
	r = h.do(http.MethodDelete, "/v1/rest/crm/contacts/12", "cs_test_ask", nil, map[string]string{"Prefer": "respond-async"})
	expect(t, r, 202, "")
	if loc := r.header.Get("Location"); loc != "/v1/confirmations/"+r.str("confirmation.id") {
		t.Errorf("Location = %q", loc)
	}
}

func TestCredentialsMeHealthAndSSE(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	expect(t, h.do(http.MethodGet, "/healthz", "", nil, nil), 200, "")
	h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read", "client": map[string]string{"name": "my-agent", "version": "1.0"}})
	r := h.do(http.MethodGet, "/v1/credentials/me", "cs_test_ask", nil, nil)
	expect(t, r, 200, "")
	if r.str("id") != "chat-user" || r.str("choice") != "ask_person" || r.get("read_only") != false || r.str("last_client.name") != "my-agent" || r.str("last_client.version") != "1.0" {
		t.Errorf("me = %s", r.body)
	}
	if strings.Contains(string(r.body), "cs_test_ask") {
		t.Errorf("the key leaked: %s", r.body)
	}
	expect(t, h.do(http.MethodGet, "/v1/credentials/me", "cs_bad", nil, nil), 401, "unauthenticated")
	r = h.do(http.MethodPost, "/v1/calls", "cs_test_ask", strings.NewReader(`{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`),
		map[string]string{"Accept": "text/event-stream"})
	if r.status != 202 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("SSE answer %d %s", r.status, r.header.Get("Content-Type"))
	}
	text := string(r.body)
	if !strings.HasPrefix(text, "event: confirmation_required\ndata: {") || !strings.Contains(text, "\n\nevent: result\ndata: {") {
		t.Errorf("SSE stream = %q", text)
	}
}

func TestRESTIdempotencyKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	post := func(key, body string) result {
		return h.do(http.MethodPost, "/v1/rest/crm/contacts", "cs_test_run", strings.NewReader(body),
			map[string]string{"Content-Type": "application/json", "Idempotency-Key": key})
	}
	first := post("r-1", `{"name": "Ada"}`)
	expect(t, first, 201, "")
	second := post("r-1", `{"name": "Ada"}`)
	expect(t, second, 201, "")
	if !bytes.Equal(first.body, second.body) || second.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay differs: %s / %s (replayed header %q)", first.body, second.body, second.header.Get("Idempotent-Replayed"))
	}
	if n := h.upstream.Count("POST", "/contacts"); n != 1 {
		t.Errorf("upstream called %d times, want 1", n)
	}
	expect(t, post("r-1", `{"name": "Grace"}`), 422, "idempotency_key_reused")
	if n := h.upstream.Count("POST", "/contacts"); n != 1 {
		t.Errorf("upstream called %d times after a reused key, want 1", n)
	}
}
