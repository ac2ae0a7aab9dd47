package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// withUsers is the harness's credentials.json with configured users added.
func withUsers(users ...string) string {
	var b strings.Builder
	for _, u := range users {
		b.WriteString(`  {"id": "` + strings.Split(u, "@")[0] + `", "user": "` + u + `"},` + "\n")
	}
	return strings.Replace(testCredentials, "[\n", "[\n"+b.String(), 1)
}

func (h *harness) writeCredentials(content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.configDir, "credentials.json"), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// TestURLModeForConfiguredUser: a configured user (credentials.json
// "user"), bound to their subject at their first sign-in, opens their own
// URL-mode page signed in as themselves and approves; the call runs once.
// (It used to be refused: the user's credential had no subject, so the
// page said they "did not make this call".)
func TestURLModeForConfiguredUser(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.writeCredentials(withUsers("ada@example.com"))
	h.restart()
	s, _ := h.oauthSession(newSignInBrowser(t, "ada@example.com"), "URL client", clientKind{url: true, protocol: "2025-11-25"})
	e := urlElicitationOf(t, s, "crm__deleteContact", map[string]any{"id": "71"})
	link := h.link(e.URL)
	ada := newApproverBrowser(h, "ada@example.com")
	page := ada.open(link)
	if !strings.Contains(string(page.body), `name="decision"`) {
		t.Fatalf("ada's own URL-mode page offers no decision:\n%s", visibleText(page.body))
	}
	expect(t, ada.press(page, "approve"), http.StatusOK, "")
	for deadline := time.Now().Add(10 * time.Second); h.upstream.Count("DELETE", "/contacts/71") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.upstream.Count("DELETE", "/contacts/71"); n != 1 {
		t.Fatalf("DELETE ran %d times after ada approved, want once", n)
	}
}

// TestRemovedCredentialsAreRevoked: a key and a user removed from
// credentials.json are revoked at the next start on the same data: the
// key and the user's access token are refused (401), the banner says
// "revoked:", and the audit trail records it. A key made by other means
// (not from the file) is left alone.
func TestRemovedCredentialsAreRevoked(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.writeCredentials(withUsers("ada@example.com"))
	h.restart()
	ada := newSignInBrowser(t, "ada@example.com")
	h.oauthSession(ada, "client", clientKind{})
	access, _ := h.apiToken(ada) // a token for the JSON API (resource <url>)
	if r := h.do("GET", "/v1/credentials/me", access, nil, nil); r.status != http.StatusOK {
		t.Fatalf("ada's token before: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/v1/credentials/me", "cs_test_chat", nil, nil); r.status != http.StatusOK {
		t.Fatalf("the chatty key before: %d %s", r.status, r.body)
	}

	h.writeCredentials(strings.Replace(testCredentials, `  {"id": "chatty",    "key": "cs_test_chat",   "origin": "chat"},`+"\n", "", 1))
	h.restart()
	if r := h.do("GET", "/v1/credentials/me", "cs_test_chat", nil, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the removed key: %d %s, want 401", r.status, r.body)
	}
	if r := h.do("GET", "/v1/credentials/me", access, nil, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the removed user's token: %d %s, want 401", r.status, r.body)
	}
	if r := h.do("GET", "/v1/credentials/me", "cs_test_ask", nil, nil); r.status != http.StatusOK {
		t.Fatalf("a key still listed: %d %s", r.status, r.body)
	}
	banner := h.stack.Banner()
	if !strings.Contains(banner, "revoked: ") || !strings.Contains(banner, "ada") || !strings.Contains(banner, "chatty") {
		t.Fatalf("banner does not say what was revoked:\n%s", banner)
	}

	h.stop()
	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListAudit(context.Background(), countersign.AuditQuery{Chain: audit.System})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, r := range recs {
		if r.Action == "credential.revoked" {
			recorded[r.Subject] = true
		}
	}
	if !recorded["ada"] || !recorded["chatty"] || len(recorded) != 2 {
		t.Fatalf("the audit trail records the revocations of %v, want ada and chatty", recorded)
	}
	if rep, err := audit.Verify(context.Background(), st); err != nil || !rep.OK() {
		t.Errorf("audit verify: %v, breaks %v", err, rep.Breaks())
	}
}

// TestCardCannotApproveOwnFourEyesCall: the MCP card never approves the
// caller's own four-eyes call, even with a card token (which the gateway
// does not hand out for it): the lifecycle refuses the answer and nothing
// runs; an approver on the page still decides it.
func TestCardCannotApproveOwnFourEyesCall(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"separate_approver": true}
}`}})
	s := h.mcpSession("cs_test_ask", clientKind{apps: true}, nil)
	r := callTool(t, s, "team__delete_contacts_by_id", map[string]any{"id": "78"}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("result %q, want paused", text(r))
	}
	c, err := h.stack.app.Calls.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := json.Marshal(map[string]string{"id": id, "cred": "chat-user"})
	sealed := h.stack.signer.Seal("mcp-card", tok, c.ExpiresAt)
	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": sealed, "decision": "approve"}, nil)
	if !d.IsError || !strings.Contains(text(d), "forbidden") {
		t.Fatalf("card_decide by the caller: %q, want forbidden", text(d))
	}
	if st := h.statusOf("cs_test_ask", id); st != "pending" || h.upstream.Count("DELETE", "/contacts/78") != 0 {
		t.Fatalf("after the caller's card answer: %s, %d upstream calls; want pending, none", st, h.upstream.Count("DELETE", "/contacts/78"))
	}
}
