package stack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/mcpapi"
)

// urlElicitationOf calls tool and returns the one URL-mode elicitation of
// the URLElicitationRequiredError (-32042) it must answer.
func urlElicitationOf(t *testing.T, s *mcp.ClientSession, tool string, args any) *mcp.ElicitParams {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("call %s: result %v, error %v; want URLElicitationRequiredError (-32042)", tool, r, err)
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("error data %s: %v, want one elicitation", rpcErr.Data, err)
	}
	return data.Elicitations[0]
}

// TestURLElicitationAsksThePersonSignedIn: a person's client (OAuth) that
// declares URL-mode elicitation and not form mode gets, for a call that
// needs confirmation, URLElicitationRequiredError (-32042) with one
// elicitation (mode "url", elicitationId the confirmation id, url its
// approval page). The link alone decides nothing: without sign-in, and
// signed in as someone else, there are no buttons and a POST is 403; the
// person who made the call, signed in, approves, and the gateway runs the
// call once, which confirmation_status reports. A key's client declaring
// URL mode is not sent to the page, nor is a call on an out_of_band_only
// connection: their approvers are asked.
func TestURLElicitationAsksThePersonSignedIn(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/vault/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"out_of_band_only": true}
}`}})
	for _, tc := range []struct{ name, protocol, contact string }{
		{"MCP 2025-11-25", "2025-11-25", "61"},
		{"newest revision", "", "62"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "URL client", clientKind{url: true, protocol: tc.protocol})
			e := urlElicitationOf(t, s, "crm__deleteContact", map[string]any{"id": tc.contact})
			if e.Mode != "url" || e.ElicitationID == "" || e.Message == "" {
				t.Fatalf("elicitation %+v, want mode url with an elicitationId and a message", e)
			}
			id := e.ElicitationID
			u, err := url.Parse(e.URL)
			if err != nil || u.Path != "/approve/"+id || u.Query().Get("a") != links.PrincipalApprover {
				t.Fatalf("elicitation url %q, want the approval page of %s for %s", e.URL, id, links.PrincipalApprover)
			}
			link := h.link(e.URL)
			if n := h.upstream.Count("DELETE", "/contacts/"+tc.contact); n != 0 {
				t.Fatalf("DELETE ran %d times before anyone approved", n)
			}

			if got := h.post(link, "approve", nil, ""); got.status != http.StatusForbidden {
				t.Fatalf("approval with the link alone: %d %s, want 403", got.status, got.body)
			}
			eve := newApproverBrowser(h, "eve@example.com")
			page := eve.open(link)
			if strings.Contains(string(page.body), `name="decision"`) || !strings.Contains(visibleText(page.body), "did not make this call") {
				t.Fatalf("someone else's page offers the decision or does not say why:\n%s", visibleText(page.body))
			}
			if eve.signIns != 1 {
				t.Fatalf("eve signed in %d times, want once (the link asks for sign-in)", eve.signIns)
			}
			if got := eve.refusedPost(link, "approve"); got.status != http.StatusForbidden {
				t.Fatalf("someone else's approval: %d, want 403", got.status)
			}
			if n := h.upstream.Count("DELETE", "/contacts/"+tc.contact); n != 0 {
				t.Fatalf("refused approvals ran the call %d times", n)
			}

			dana := newApproverBrowser(h, "dana@example.com")
			expect(t, dana.press(dana.open(link), "approve"), http.StatusOK, "")
			var d *mcp.CallToolResult
			for range 20 { // redeemed (running) comes before executed
				d = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, nil)
				if structured(t, d)["status"] == "executed" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if structured(t, d)["status"] != "executed" {
				t.Fatalf("after the person approved: %q", text(d))
			}
			callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id}, nil)
			if got := dana.refusedPost(link, "approve"); got.status == http.StatusOK {
				t.Fatalf("a second approval was accepted: %d", got.status)
			}
			if n := h.upstream.Count("DELETE", "/contacts/"+tc.contact); n != 1 {
				t.Fatalf("DELETE ran %d times after one approval, want once", n)
			}
		})
	}
	t.Run("out_of_band_only asks the approvers", func(t *testing.T) {
		s, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "URL client", clientKind{url: true, protocol: "2025-11-25"})
		r := callTool(t, s, "vault__delete_contacts_by_id", map[string]any{"id": "64"}, nil)
		if !strings.Contains(text(r), "takes approvals only from its approvers") || structured(t, r)["status"] != "confirmation_required" {
			t.Fatalf("result %q, want paused for the approvers", text(r))
		}
	})
	t.Run("a key's client asks its approvers", func(t *testing.T) {
		s := h.mcpSession("cs_test_program", clientKind{url: true, protocol: "2025-11-25"}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "63"}, nil)
		if !strings.Contains(text(r), "not a person signed in to this client") || structured(t, r)["status"] != "confirmation_required" {
			t.Fatalf("result %q, want paused for the approvers", text(r))
		}
	})
	t.Run("a run_script batch", func(t *testing.T) {
		s, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "URL client", clientKind{url: true})
		e := urlElicitationOf(t, s, mcpapi.ToolRunScript, map[string]any{"script": mcpBatchScript})
		id := e.ElicitationID
		if u, err := url.Parse(e.URL); err != nil || u.Path != "/approve/"+id || u.Query().Get("a") != links.PrincipalApprover ||
			!strings.Contains(e.Message, "run_script") {
			t.Fatalf("elicitation %+v, want the batch's approval page for %s, and how to read the script's result", e, links.PrincipalApprover)
		}
		wantCounts(t, h, map[string]int{"DELETE /contacts/3": 0, "DELETE /contacts/4": 0})
		link := h.link(e.URL)
		eve := newApproverBrowser(h, "eve@example.com")
		if page := eve.open(link); strings.Contains(string(page.body), `name="decision"`) {
			t.Fatalf("someone else may decide dana's batch:\n%s", visibleText(page.body))
		}
		dana := newApproverBrowser(h, "dana@example.com")
		expect(t, dana.press(dana.open(link), "approve"), http.StatusOK, "")
		var r *mcp.CallToolResult
		for range 40 {
			if r = runScript(t, s, mcpBatchScript, id, nil); structured(t, r)["status"] == "completed" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if structured(t, r)["status"] != "completed" {
			t.Fatalf("after dana approved the batch: %q", text(r))
		}
		wantCounts(t, h, map[string]int{"DELETE /contacts/3": 1, "DELETE /contacts/4": 1})
	})
}
