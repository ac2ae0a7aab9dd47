package stack

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// operatorJSON sends a JSON body to an operator route with the operator key.
func (h *harness) operatorJSON(method, path, body string) result {
	h.t.Helper()
	return h.do(method, path, operatorKey, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
}

func deleteContact(id string) map[string]any {
	return map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/" + id, "intent": "write"}
}

// TestOperatorManagesCredentials drives a key's life through the operator
// JSON API on the real stack: created, it works at once; its choice
// changed, the next call follows it; its page shows its pending
// confirmation; revoked, it is refused (401). Every change is on its audit
// chain with the operator as actor.
func TestOperatorManagesCredentials(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.operatorJSON(http.MethodPost, "/v1/operator/credentials", `{"id": "ci-bot", "choice": "refuse", "connections": ["crm"]}`)
	expect(t, r, http.StatusCreated, "")
	key := r.str("key")
	if !strings.HasPrefix(key, "cs_") || len(key) != 43 || r.str("credential.id") != "ci-bot" || r.str("credential.choice") != "refuse" {
		t.Fatalf("create: %s", r.body)
	}
	if strings.Contains(string(r.body), "key_sha256") {
		t.Fatalf("the reply shows the key's hash: %s", r.body)
	}

	// Usable at once: a read runs; a confirm-tier call is refused (choice refuse).
	expect(t, h.call(key, map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusOK, "")
	expect(t, h.call(key, deleteContact("5")), http.StatusForbidden, "requires_confirmation")
	// Its connections hold: billing is not one of them.
	expect(t, h.call(key, map[string]any{"connection": "billing", "method": "GET", "path": "/payments", "intent": "read"}), http.StatusNotFound, "unknown_operation")

	// Change its choice: the next call follows it.
	r = h.operatorJSON(http.MethodPatch, "/v1/operator/credentials/ci-bot", `{"choice": "run_without_asking"}`)
	expect(t, r, http.StatusOK, "")
	if r.str("choice") != "run_without_asking" {
		t.Fatalf("patch: %s", r.body)
	}
	expect(t, h.call(key, deleteContact("6")), http.StatusOK, "")
	if n := h.upstream.Count("DELETE", "/contacts/6"); n != 1 {
		t.Fatalf("upstream DELETE /contacts/6 called %d times, want 1", n)
	}
	expect(t, h.operatorJSON(http.MethodPatch, "/v1/operator/credentials/ci-bot", `{"choice": "ask_person", "read_only": false}`), http.StatusOK, "")
	paused := h.call(key, deleteContact("7"))
	expect(t, paused, http.StatusAccepted, "")

	// Its page: settings, pending confirmation, grants.
	d := h.operatorJSON(http.MethodGet, "/v1/operator/credentials/ci-bot", "")
	expect(t, d, http.StatusOK, "")
	if d.str("id") != "ci-bot" || d.str("choice") != "ask_person" || d.str("origin") != "operator" ||
		d.str("pending.0.id") != paused.str("confirmation.id") || d.get("grants") == nil {
		t.Fatalf("detail: %s", d.body)
	}

	// Revoke: 401 from the next call on; revoking again is 404.
	r = h.operatorJSON(http.MethodDelete, "/v1/operator/credentials/ci-bot", "")
	expect(t, r, http.StatusOK, "")
	if r.str("revoked.id") != "ci-bot" {
		t.Fatalf("revoke: %s", r.body)
	}
	expect(t, h.call(key, map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read"}), http.StatusUnauthorized, "unauthenticated")
	expect(t, h.operatorJSON(http.MethodDelete, "/v1/operator/credentials/ci-bot", ""), http.StatusNotFound, "not_found")
	expect(t, h.operatorJSON(http.MethodGet, "/v1/operator/credentials/ci-bot", ""), http.StatusNotFound, "not_found")
	h.stop()

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListAudit(context.Background(), storeQuery(audit.ChainOf("ci-bot")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs {
		if strings.HasPrefix(rec.Action, "key.") {
			if rec.Actor != "operator:root" {
				t.Errorf("%s by %q, want operator:root", rec.Action, rec.Actor)
			}
			got = append(got, rec.Action+" "+rec.Reason)
		}
	}
	want := []string{
		"key.created choice refuse, origin operator, connections crm",
		"key.changed choice refuse -> run_without_asking",
		"key.changed choice run_without_asking -> ask_person",
		"key.revoked its key is refused from the next call on",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ci-bot's key records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOperatorCredentialsBadInput: each bad request is a clear 4xx and
// changes nothing (the credentials list and the existing key are as before).
func TestOperatorCredentialsBadInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	before := h.operatorJSON(http.MethodGet, "/v1/operator/credentials?limit=100", "")
	expect(t, before, http.StatusOK, "")
	huge := `{"id": "big", "choice": "refuse", "connections": ["` + strings.Repeat("a", 2<<20) + `"]}`
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"unknown choice", "POST", "/v1/operator/credentials", operatorKey, `{"id": "x1", "choice": "always"}`, 400, "invalid_request"},
		{"connection not configured", "POST", "/v1/operator/credentials", operatorKey, `{"id": "x2", "connections": ["crm", "nowhere"]}`, 400, "invalid_request"},
		{"id clash", "POST", "/v1/operator/credentials", operatorKey, `{"id": "runner"}`, 409, "credential_exists"},
		{"bad id", "POST", "/v1/operator/credentials", operatorKey, `{"id": "no spaces"}`, 400, "invalid_request"},
		{"no id", "POST", "/v1/operator/credentials", operatorKey, `{"choice": "refuse"}`, 400, "invalid_request"},
		{"duplicate keys", "POST", "/v1/operator/credentials", operatorKey, `{"id": "x3", "id": "x4"}`, 400, "invalid_request"},
		{"unknown field", "POST", "/v1/operator/credentials", operatorKey, `{"id": "x5", "operator": true}`, 400, "invalid_request"},
		{"not JSON", "POST", "/v1/operator/credentials", operatorKey, `id=x6`, 400, "invalid_request"},
		{"huge", "POST", "/v1/operator/credentials", operatorKey, huge, 413, "payload_too_large"},
		{"patch unknown choice", "PATCH", "/v1/operator/credentials/runner", operatorKey, `{"choice": "maybe"}`, 400, "invalid_request"},
		{"patch bad connection", "PATCH", "/v1/operator/credentials/runner", operatorKey, `{"choice": "refuse", "connections": ["nowhere"]}`, 400, "invalid_request"},
		{"patch duplicate keys", "PATCH", "/v1/operator/credentials/runner", operatorKey, `{"choice": "refuse", "choice": "ask_agent"}`, 400, "invalid_request"},
		{"patch no such credential", "PATCH", "/v1/operator/credentials/ghost", operatorKey, `{"choice": "refuse"}`, 404, "not_found"},
		{"patch operator", "PATCH", "/v1/operator/credentials/runner", operatorKey, `{"operator": true}`, 400, "invalid_request"},
		{"put", "PUT", "/v1/operator/credentials/runner", operatorKey, `{}`, 405, "method_not_allowed"},
		{"non-operator creates", "POST", "/v1/operator/credentials", "cs_test_run", `{"id": "x7"}`, 403, "forbidden"},
		{"non-operator changes", "PATCH", "/v1/operator/credentials/runner", "cs_test_run", `{"choice": "refuse"}`, 403, "forbidden"},
		{"non-operator revokes", "DELETE", "/v1/operator/credentials/runner", "cs_test_run", ``, 403, "forbidden"},
		{"non-operator reads", "GET", "/v1/operator/credentials/runner", "cs_test_ro", ``, 403, "forbidden"},
		{"no key", "DELETE", "/v1/operator/credentials/runner", "", ``, 401, "unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, tt.key, strings.NewReader(tt.body), map[string]string{"Content-Type": "application/json"})
			expect(t, r, tt.status, tt.code)
			if r.str("reason") == "" {
				t.Errorf("no reason: %s", r.body)
			}
		})
	}
	after := h.operatorJSON(http.MethodGet, "/v1/operator/credentials?limit=100", "")
	if string(after.body) != string(before.body) {
		t.Fatalf("the credentials changed:\nbefore %s\nafter  %s", before.body, after.body)
	}
	expect(t, h.call("cs_test_run", deleteContact("9")), http.StatusOK, "")
}
