package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/notify"
)

// listTools lists a session's tool names, sorted.
func listTools(tb testing.TB, s *mcp.ClientSession) map[string]*mcp.Tool {
	tb.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		tb.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, t := range res.Tools {
		out[t.Name] = t
	}
	return out
}

func names(m map[string]*mcp.Tool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestMCPToolsPerCredential: tools/list follows the credential's choice,
// read-only flag and connection list, and a tool that is not listed
// answers as an unknown tool.
func TestMCPToolsPerCredential(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	reads := []string{"billing__get_payments", "crm__get_accounts_by_id", "crm__get_contacts", "crm__get_contacts_by_id",
		"crm__get_payments", "hooked__get_contacts_by_id"}
	autoWrites := []string{"crm__patch_contacts_by_id", "crm__post_accounts_by_id_close", "crm__post_contacts"}
	confirmWrites := []string{"crm__archive_contact", "crm__deleteContact", "crm__post_payments", "hooked__delete_contacts_by_id"}
	sorted := func(groups ...[]string) []string {
		out := slices.Concat(append(groups, []string{"run_script"})...)
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name   string
		key    string
		client clientKind
		want   []string
	}{
		{"ask_person sees confirm-tier operations and confirmation_status", "cs_test_ask", clientKind{},
			sorted(reads, autoWrites, confirmWrites, []string{"confirmation_status"})},
		{"ask_person with MCP Apps also sees the card's tools", "cs_test_ask", clientKind{apps: true},
			sorted(reads, autoWrites, confirmWrites, []string{"card_decide", "confirmation_status", "review_pending"})},
		{"refuse hides confirm-tier operations", "cs_test_refuse", clientKind{}, sorted(reads, autoWrites)},
		{"ask_agent sees them", "cs_test_agent", clientKind{}, sorted(reads, autoWrites, confirmWrites)},
		{"read-only sees no write", "cs_test_ro", clientKind{}, sorted(reads)},
		{"one connection: names are not prefixed", "cs_test_billing", clientKind{}, sorted([]string{"get_payments"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listTools(t, h.mcpSession(tt.key, tt.client, nil))
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("schemas and annotations", func(t *testing.T) {
		tools := listTools(t, h.mcpSession("cs_test_ask", clientKind{}, nil))
		del := tools["crm__deleteContact"]
		if del.Annotations == nil || del.Annotations.DestructiveHint == nil || !*del.Annotations.DestructiveHint || del.Annotations.ReadOnlyHint {
			t.Errorf("deleteContact annotations %+v, want destructive", del.Annotations)
		}
		if !strings.Contains(del.Description, "DELETE /contacts/{id}") || !strings.Contains(del.Description, "confirm") {
			t.Errorf("deleteContact description %q", del.Description)
		}
		get := tools["crm__get_contacts_by_id"]
		if get.Annotations == nil || !get.Annotations.ReadOnlyHint {
			t.Errorf("get annotations %+v, want read-only", get.Annotations)
		}
		schema, _ := json.Marshal(get.InputSchema)
		for _, want := range []string{`"required":["id"]`, `"query":{`, `"id":{`} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("get schema %s lacks %s", schema, want)
			}
		}
		if strings.Contains(string(schema), `"body"`) {
			t.Errorf("a GET takes no body: %s", schema)
		}
		post, _ := json.Marshal(tools["crm__post_payments"].InputSchema)
		if !strings.Contains(string(post), `"body":{`) {
			t.Errorf("post schema %s has no body", post)
		}
		patch := tools["crm__patch_contacts_by_id"].Annotations
		if patch == nil || patch.DestructiveHint == nil || *patch.DestructiveHint {
			t.Errorf("an auto PATCH is not destructive: %+v", patch)
		}
		if d := tools["crm__archive_contact"].Description; !strings.HasPrefix(d, "Archive a contact") {
			t.Errorf("custom tool description %q", d)
		}
	})

	t.Run("a hidden tool is unknown", func(t *testing.T) {
		for _, c := range []struct{ key, tool string }{
			{"cs_test_refuse", "crm__deleteContact"},
			{"cs_test_ask", "crm__purge_contacts"},
			{"cs_test_ask", "crm__delete_accounts_by_id"},
			{"cs_test_ro", "crm__patch_contacts_by_id"},
			{"cs_test_billing", "crm__get_contacts"},
			{"cs_test_ask", "review_pending"}, // without MCP Apps
		} {
			s := h.mcpSession(c.key, clientKind{}, nil)
			_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"id": "3"}})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("%s calling %s: %v, want unknown tool", c.key, c.tool, err)
			}
		}
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})
}

// TestMCPCalls: an auto call, the pipeline's denials as tool results, and
// what each choice does at the confirm tier for a client that can ask.
func TestMCPCalls(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	run := h.mcpSession("cs_test_run", clientKind{}, nil)

	r := callTool(t, run, "crm__get_contacts_by_id", map[string]any{"id": "12", "query": map[string]any{"fields": "name"}}, nil)
	sc := structured(t, r)
	if r.IsError || sc["status"] != float64(200) || !strings.HasPrefix(text(r), "200 OK\n{") {
		t.Fatalf("auto call: %q %v", text(r), sc)
	}
	if body, _ := sc["body"].(map[string]any); body["id"] != float64(12) {
		t.Errorf("structured body %v", sc["body"])
	}
	reqs := h.upstream.Requests()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/contacts/12" || reqs[0].RawQuery != "fields=name" {
		t.Fatalf("upstream saw %+v", reqs)
	}

	ask := h.mcpSession("cs_test_ask", clientKind{elicit: accept(true)}, nil)
	tests := []struct {
		name string
		s    *mcp.ClientSession
		tool string
		args map[string]any
		meta mcp.Meta
		want string
	}{
		{"review tier", ask, "crm__post_accounts_by_id_close", map[string]any{"id": "2"}, nil, "Denied (review_required): "},
		{"threshold escalation", ask, "crm__post_payments", map[string]any{"body": map[string]any{"amount": 10001, "to": "x"}}, nil, "Denied (review_required): escalated to review"},
		{"delegated", ask, "crm__deleteContact", map[string]any{"id": "3"}, mcp.Meta{mcpapi.MetaDelegated: true}, "Denied (review_required): escalated to review: delegated"},
		{"a path with a dot segment", run, "crm__get_contacts_by_id", map[string]any{"id": ".."}, nil, "Error (invalid_request): "},
		{"an unknown argument", run, "crm__get_contacts_by_id", map[string]any{"id": "1", "force": true}, nil, `Error (invalid_request): unknown argument "force"`},
		{"a missing path parameter", run, "crm__get_contacts_by_id", map[string]any{}, nil, `Error (invalid_request): argument "id" is required`},
		{"unreachable upstream", run, "billing__get_payments", nil, nil, "Error (upstream_unreachable): "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := callToolParams(t, tt.s, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args, Meta: tt.meta}, nil)
			if !r.IsError || !strings.HasPrefix(text(r), tt.want) {
				t.Errorf("result %q (isError %v), want %q...", text(r), r.IsError, tt.want)
			}
		})
	}
	if n := len(h.upstream.Requests()); n != 1 {
		t.Errorf("the upstream was called %d times, want only the auto call", n)
	}

	t.Run("ask_agent runs with a notice", func(t *testing.T) {
		r := callTool(t, h.mcpSession("cs_test_agent", clientKind{}, nil), "crm__deleteContact", map[string]any{"id": "4"}, nil)
		if r.IsError || !strings.Contains(text(r), "Notice (requires_confirmation)") {
			t.Errorf("result %q", text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/4"); n != 1 {
			t.Errorf("DELETE /contacts/4 ran %d times", n)
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		p := &mcp.CallToolParams{Name: "crm__post_contacts", Arguments: map[string]any{"body": map[string]any{"name": "Ada"}},
			Meta: mcp.Meta{mcpapi.MetaIdempotencyKey: "k-1"}}
		first := callToolParams(t, run, p, nil)
		second := callToolParams(t, run, p, nil)
		if text(first) != text(second) || second.Meta["countersign/idempotentReplayed"] != true {
			t.Errorf("replay %q %v, first %q", text(second), second.Meta, text(first))
		}
		if n := h.upstream.Count("POST", "/contacts"); n != 1 {
			t.Errorf("POST /contacts ran %d times", n)
		}
	})
}

// TestMCPElicitation: a client that declared form elicitation is asked
// through an input request, and the retried call runs what was accepted,
// once.
func TestMCPElicitation(t *testing.T) {
	t.Run("accepted runs once", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		var asked []*mcp.ElicitParams
		s := h.mcpSession("cs_test_ask", clientKind{elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params)
			return accept(true)(r)
		}}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
		if r.IsError || !strings.HasPrefix(text(r), "204 No Content") {
			t.Fatalf("result %q isError %v", text(r), r.IsError)
		}
		if len(asked) != 1 || !strings.Contains(asked[0].Message, "DELETE /contacts/12 on crm") || !strings.Contains(asked[0].Message, `{"body":null,"path":{"id":"12"},"query":{}}`) {
			t.Fatalf("asked %+v", asked)
		}
		reqs := h.upstream.Requests()
		id, _ := structured(t, r)["confirmation_id"].(string)
		if len(reqs) != 1 || reqs[0].Path != "/contacts/12" || reqs[0].IdempotencyKey != id+":0" {
			t.Errorf("upstream saw %+v, want one DELETE with Idempotency-Key %s:0", reqs, id)
		}
		if st := h.statusOf("cs_test_ask", id); st != "executed" {
			t.Errorf("the answer's record is %s", st)
		}
		if strings.Contains(h.console.String(), id+" needs approval") || h.webhook.count(notify.TypeRequested, id) != 0 {
			t.Errorf("approvers were asked about a call the person approved in the client")
		}
	})

	t.Run("declined runs nothing", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		s := h.mcpSession("cs_test_ask", clientKind{elicit: decline}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
		if !r.IsError || !strings.HasPrefix(text(r), "Denied (confirmation_rejected): the person declined DELETE /contacts/12; nothing was sent") {
			t.Errorf("result %q", text(r))
		}
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})

	t.Run("unchecked box runs nothing", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		s := h.mcpSession("cs_test_ask", clientKind{elicit: accept(false)}, nil)
		if r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil); !strings.HasPrefix(text(r), "Denied (confirmation_rejected)") {
			t.Errorf("result %q", text(r))
		}
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})

	t.Run("the state is used once, refused when altered, foreign or expired", func(t *testing.T) {
		h := newHarness(t, harnessOptions{callSeconds: 2})
		s := h.mcpSession("cs_test_ask", clientKind{elicit: accept(true), manual: true}, nil)
		other := h.mcpSession("cs_test_ask2", clientKind{elicit: accept(true), manual: true}, nil)
		ask := func() (*mcp.CallToolResult, mcp.InputResponseMap) {
			r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
			if !r.NeedsInput() || r.RequestState == "" || len(r.InputRequests) != 1 {
				t.Fatalf("first call: %+v, want an input request", r)
			}
			ep, ok := r.InputRequests["confirm"].(*mcp.ElicitParams)
			if !ok || ep.Mode != "form" {
				t.Fatalf("input request %+v", r.InputRequests)
			}
			return r, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
		}
		retry := func(sess *mcp.ClientSession, state string, answers mcp.InputResponseMap, id string) *mcp.CallToolResult {
			return callToolParams(t, sess, &mcp.CallToolParams{Name: "crm__deleteContact", Arguments: map[string]any{"id": id},
				RequestState: state, InputResponses: answers}, nil)
		}

		first, answers := ask()
		altered := []byte(first.RequestState)
		dot := strings.LastIndexByte(first.RequestState, '.')
		altered[dot-3] ^= 1 // a character of the payload
		for _, c := range []struct {
			name, state, id string
			sess            *mcp.ClientSession
			want            string
		}{
			{"altered state", string(altered), "12", s, "Denied (bad_signature): "},
			{"another credential", first.RequestState, "12", other, "Denied (confirmation_mismatch): the requestState was issued to another credential"},
			{"other arguments", first.RequestState, "13", s, "Denied (confirmation_mismatch): the answer was given for another call"},
		} {
			if r := retry(c.sess, c.state, answers, c.id); !r.IsError || !strings.HasPrefix(text(r), c.want) {
				t.Errorf("%s: %q, want %q...", c.name, text(r), c.want)
			}
		}
		if n := len(h.upstream.Requests()); n != 0 {
			t.Fatalf("the upstream was called %d times before a valid answer", n)
		}
		// The client retries the accepted call twice: it runs once.
		if r := retry(s, first.RequestState, answers, "12"); r.IsError || !strings.HasPrefix(text(r), "204") {
			t.Fatalf("accepted retry: %q", text(r))
		}
		if r := retry(s, first.RequestState, answers, "12"); !r.IsError || !strings.HasPrefix(text(r), "Refused (confirmation_used): ") {
			t.Errorf("second retry: %q", text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
			t.Errorf("DELETE ran %d times, want 1", n)
		}

		// A state past its expiry runs nothing.
		late, answers := ask()
		time.Sleep(2100 * time.Millisecond)
		if r := retry(s, late.RequestState, answers, "12"); !r.IsError || !strings.HasPrefix(text(r), "Refused (confirmation_expired): ") {
			t.Errorf("expired: %q", text(r))
		}
		if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
			t.Errorf("DELETE ran %d times, want 1", n)
		}
	})
}

// TestMCPOutOfBandOnly: a connection with approval.out_of_band_only never
// asks through the client: the call pauses, the approvers get the link,
// and confirmation_status gives the model the outcome once the gateway
// ran it.
func TestMCPOutOfBandOnly(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/vault/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"out_of_band_only": true}
}`}})
	var sn seen
	asked := 0
	s := h.mcpSession("cs_test_ask", clientKind{apps: true, elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return accept(true)(r)
	}}, nil)
	r := callTool(t, s, "vault__delete_contacts_by_id", map[string]any{"id": "7"}, &sn)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if asked != 0 || r.IsError || id == "" || !strings.Contains(text(r), "only from its approvers") || !strings.Contains(text(r), "confirmation_status") {
		t.Fatalf("result %q (asked %d)", text(r), asked)
	}
	// The card cannot decide it.
	rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn)
	if rp.Meta[mcpapi.MetaCard] != nil || !strings.Contains(text(rp), "decided by its approvers only") {
		t.Errorf("review_pending %q meta %v", text(rp), rp.Meta)
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Fatalf("the upstream was called %d times before approval", n)
	}
	link := h.approvalLink(id)
	if res := h.post(link, "approve", nil, "application/json"); res.status != http.StatusOK {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	var st *mcp.CallToolResult
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		st = callTool(t, s, "confirmation_status", map[string]any{"confirmation_id": id, "wait_seconds": 2}, &sn)
		if structured(t, st)["status"] == "executed" {
			break
		}
	}
	if sc := structured(t, st); sc["status"] != "executed" || !strings.Contains(text(st), "ran: the upstream answered 204") {
		t.Fatalf("status %q %v", text(st), sc)
	}
	if n := h.upstream.Count("DELETE", "/contacts/7"); n != 1 {
		t.Errorf("DELETE ran %d times", n)
	}
	assertNoSecrets(t, h, sn.all(), id)
}

// cardToken reads the token review_pending gives the card (in _meta only).
func cardToken(tb testing.TB, r *mcp.CallToolResult) string {
	tb.Helper()
	card, _ := r.Meta[mcpapi.MetaCard].(map[string]any)
	tok, _ := card["token"].(string)
	if tok == "" {
		tb.Fatalf("review_pending gave the card no token: %v", r.Meta)
	}
	return tok
}

// TestMCPCard: a client that renders MCP Apps gets a paused notice; the
// card approves (the gateway runs the operation once) or rejects (nothing
// runs), and expires.
func TestMCPCard(t *testing.T) {
	t.Run("approve runs once, and the card and the model see the outcome", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		var sn seen
		s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, &sn)
		id, _ := structured(t, r)["confirmation_id"].(string)
		if r.IsError || id == "" || !strings.Contains(text(r), "review_pending") {
			t.Fatalf("paused notice %q", text(r))
		}
		rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn)
		card := structured(t, rp)
		if card["title"] != "Approve this operation?" || card["state"] != "pending" || card["workspace"] != "Test Co" ||
			card["accent_color"] != "#0f766e" || card["seconds_left"].(float64) < 590 {
			t.Errorf("card %v", card)
		}
		ops, _ := card["operations"].([]any)
		if len(ops) != 1 || !strings.Contains(fmt.Sprint(ops[0]), "/contacts/12") {
			t.Errorf("card operations %v", ops)
		}
		token := cardToken(t, rp)

		// The card's HTML: workspace and accent, and no token in it.
		res, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpapi.CardURI})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != mcpapi.AppsMIMEType {
			t.Fatalf("read card: %+v %v", res, err)
		}
		html := res.Contents[0].Text
		for _, want := range []string{"Test Co", "--accent: #0f766e", "Approve", "Reject all", `"card_decide"`, "This confirmation expired"} {
			if !strings.Contains(html, want) {
				t.Errorf("the card's HTML lacks %q", want)
			}
		}
		if strings.Contains(html, token) {
			t.Error("the card's HTML holds the token")
		}
		tools := listTools(t, s)
		if vis := fmt.Sprint(tools["card_decide"].Meta["ui"]); !strings.Contains(vis, "visibility:[app]") {
			t.Errorf("card_decide _meta.ui %s, want visibility [app]", vis)
		}

		// The model cannot decide without the token.
		if r := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": "guess", "decision": "approve"}, &sn); !strings.HasPrefix(text(r), "Denied (bad_signature)") {
			t.Errorf("card_decide without the token: %q", text(r))
		}
		// The card decides (its tool results go to the card).
		d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve", "operations": []int{0}}, nil)
		if d.IsError || structured(t, d)["status"] != "executed" || !strings.Contains(text(d), "ran: the upstream answered 204") {
			t.Fatalf("approve: %q %v", text(d), structured(t, d))
		}
		again := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve"}, nil)
		if !again.IsError || !strings.HasPrefix(text(again), "Refused (confirmation_decided)") {
			t.Errorf("second approve: %q", text(again))
		}
		reqs := h.upstream.Requests()
		if len(reqs) != 1 || reqs[0].IdempotencyKey != id+":0" {
			t.Errorf("upstream saw %+v, want one DELETE", reqs)
		}
		// The model reads the same outcome.
		after := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, &sn)
		if after.Meta[mcpapi.MetaCard] != nil || !strings.Contains(text(after), "executed") || !strings.Contains(text(after), "ran: the upstream answered 204") {
			t.Errorf("review_pending after: %q %v", text(after), after.Meta)
		}
		// Give the workflow's own execute task time to run too: still once.
		time.Sleep(200 * time.Millisecond)
		if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
			t.Errorf("DELETE ran %d times", n)
		}
		assertNoSecrets(t, h, sn.all(), id, token)
	})

	t.Run("reject all runs nothing", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		s := h.mcpSession("cs_test_ask", clientKind{apps: true}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
		id, _ := structured(t, r)["confirmation_id"].(string)
		token := cardToken(t, callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil))
		d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "reject"}, nil)
		if structured(t, d)["status"] != "rejected" || !strings.Contains(text(d), "Rejected; nothing ran") {
			t.Errorf("reject: %q", text(d))
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})

	t.Run("the card expires", func(t *testing.T) {
		h := newHarness(t, harnessOptions{callSeconds: 1})
		s := h.mcpSession("cs_test_ask", clientKind{apps: true}, nil)
		r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
		id, _ := structured(t, r)["confirmation_id"].(string)
		token := cardToken(t, callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil))
		time.Sleep(1100 * time.Millisecond)
		rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
		if sc := structured(t, rp); sc["state"] != "expired" || !strings.HasPrefix(text(rp), "This confirmation expired") || rp.Meta[mcpapi.MetaCard] != nil {
			t.Errorf("review_pending after expiry: %q %v", text(rp), sc)
		}
		d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve"}, nil)
		if !d.IsError || !strings.Contains(text(d), "This confirmation expired") {
			t.Errorf("approve after expiry: %q", text(d))
		}
		if n := len(h.upstream.Requests()); n != 0 {
			t.Errorf("the upstream was called %d times", n)
		}
	})
}

// TestMCPRefusal: a client that can show neither a dialog nor a card is
// refused, with its name and protocol revision; nothing runs and nothing
// is left pending; it still runs what needs no confirmation.
func TestMCPRefusal(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, c := range []struct {
		name   string
		client clientKind
		want   string
	}{
		{"neither", clientKind{name: "Plain Client"}, "Plain Client (MCP 2026-07-28)"},
		{"2025-11-25", clientKind{name: "Old Client", protocol: "2025-11-25"}, "Old Client (MCP 2025-11-25)"},
		{"2025-06-18", clientKind{name: "Older Client", protocol: "2025-06-18"}, "Older Client (MCP 2025-06-18)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := h.mcpSession("cs_test_ask", c.client, nil)
			r := callTool(t, s, "crm__deleteContact", map[string]any{"id": "12"}, nil)
			want := "Denied (requires_confirmation): " + c.want + " can show neither a confirmation dialog nor a card (it declared neither form elicitation nor MCP Apps)"
			if !r.IsError || text(r) != want {
				t.Errorf("result %q, want %q", text(r), want)
			}
			if get := callTool(t, s, "crm__get_contacts_by_id", map[string]any{"id": "3"}, nil); get.IsError {
				t.Errorf("auto call on %s: %q", c.name, text(get))
			}
		})
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Errorf("DELETE ran %d times", n)
	}
	time.Sleep(100 * time.Millisecond)
	if strings.Contains(h.console.String(), "needs approval") {
		t.Errorf("a confirmation was left pending:\n%s", h.console.String())
	}
}

// TestMCPLastClientSeen: the client is recorded on the credential with
// whether it can ask, and /v1/credentials/me shows it.
func TestMCPLastClientSeen(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	me := h.do(http.MethodGet, "/v1/credentials/me", "cs_test_ask", nil, nil)
	if me.get("last_client") != nil {
		t.Fatalf("a last client before any: %s", me.body)
	}
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: accept(true)}, nil)
	listTools(t, s)
	me = h.do(http.MethodGet, "/v1/credentials/me", "cs_test_ask", nil, nil)
	if me.str("last_client.name") != "Claude Code" || me.str("last_client.version") != "1.2.3" || me.get("last_client.can_ask") != true || me.str("last_client.seen_at") == "" {
		t.Errorf("last client %s", me.body)
	}
	h.mcpSession("cs_test_run", clientKind{name: "Plain Client"}, nil)
	listTools(t, h.mcpSession("cs_test_run", clientKind{name: "Plain Client"}, nil))
	me = h.do(http.MethodGet, "/v1/credentials/me", "cs_test_run", nil, nil)
	if me.str("last_client.name") != "Plain Client" || me.get("last_client.can_ask") != false {
		t.Errorf("last client %s", me.body)
	}
}

// TestMCPUnauthenticated: a missing or unknown key is refused before MCP.
func TestMCPUnauthenticated(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, key := range []string{"", "cs_nope"} {
		r := h.do(http.MethodPost, "/mcp", key, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
			map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
		if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(string(r.body), "unauthenticated") {
			t.Errorf("key %q: %d %s", key, r.status, r.body)
		}
	}
}

var linkSig = regexp.MustCompile(`sig=([A-Za-z0-9_-]{43})`)

// assertNoSecrets fails when what the model read holds an approval link,
// a link's signature, or a card token.
func assertNoSecrets(tb testing.TB, h *harness, modelSaw string, id string, tokens ...string) {
	tb.Helper()
	if modelSaw == "" {
		tb.Fatal("nothing was recorded")
	}
	secrets := append([]string{"/approve/", "sig="}, tokens...)
	h.webhook.mu.Lock()
	events := slices.Clone(h.webhook.events)
	h.webhook.mu.Unlock()
	for _, ev := range events {
		if ev.Type == notify.TypeRequested {
			for _, l := range ev.Links {
				secrets = append(secrets, l.URL)
				if m := linkSig.FindStringSubmatch(l.URL); m != nil {
					secrets = append(secrets, m[1])
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(modelSaw, s) {
			tb.Errorf("the model read %q (confirmation %s)", s, id)
		}
	}
}

// TestMCPHooks: a connection's hook decides MCP calls as it decides
// /v1/calls: deny refuses, ask raises the call to the confirm tier.
func TestMCPHooks(t *testing.T) {
	h := newHarness(t, harnessOptions{hook: func(req map[string]any) (string, string) {
		if req["method"] == "DELETE" {
			return "deny", "no deletes today"
		}
		return "ask", "a person should look"
	}})
	s := h.mcpSession("cs_test_ask", clientKind{name: "Plain Client"}, nil)
	if r := callTool(t, s, "hooked__delete_contacts_by_id", map[string]any{"id": "3"}, nil); text(r) != "Denied (hook_denied): no deletes today" {
		t.Errorf("deny: %q", text(r))
	}
	if r := callTool(t, s, "hooked__get_contacts_by_id", map[string]any{"id": "3"}, nil); !strings.HasPrefix(text(r), "Denied (requires_confirmation): Plain Client (MCP 2026-07-28) can show neither") {
		t.Errorf("ask: %q", text(r))
	}
	if r := callTool(t, h.mcpSession("cs_test_run", clientKind{}, nil), "hooked__get_contacts_by_id", map[string]any{"id": "3"}, nil); r.IsError {
		t.Errorf("ask with run_without_asking: %q", text(r))
	}
	if n := h.upstream.Count("GET", "/contacts/3"); n != 1 {
		t.Errorf("GET ran %d times, want 1", n)
	}
}
