package stack

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/notify"
)

// TestShowCard: the card shows the contact as it is now and says what
// will happen; the contact changed before the person approved in the
// card: nothing is sent, and the model is told to ask again.
func TestShowCard(t *testing.T) {
	h := showHarness(t)
	s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
	r := callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("paused notice %q", text(r))
	}
	h.webhook.waitEvent(t, notify.TypeRequested, id) // the read is stored before the links go out
	rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
	op := fmt.Sprint(structured(t, rp)["operations"])
	for _, want := range []string{"Delete contact 12, John McCarthy", "inv_103", "this will be gone"} {
		if !strings.Contains(op, want) {
			t.Errorf("card operation lacks %q: %s", want, op)
		}
	}
	token := cardToken(t, rp)

	expect(t, h.call("cs_test_run", changeContact12), 200, "")
	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": token, "decision": "approve"}, nil)
	if !strings.Contains(text(d), "resource_changed") || !strings.Contains(text(d), "ask the person anew") {
		t.Errorf("card_decide after the contact changed: %q", text(d))
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Fatalf("the upstream got %d deletes of a contact that changed", n)
	}

	// Asked again, unchanged: it runs once.
	r = callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	id2, _ := structured(t, r)["confirmation_id"].(string)
	h.webhook.waitEvent(t, notify.TypeRequested, id2)
	rp = callTool(t, s, "review_pending", map[string]any{"confirmation_id": id2}, nil)
	d = callTool(t, s, "card_decide", map[string]any{"confirmation_id": id2, "token": cardToken(t, rp), "decision": "approve"}, nil)
	if d.IsError || !strings.Contains(text(d), "ran: the upstream answered 204") {
		t.Errorf("approve unchanged: %q", text(d))
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

// TestShowDialog: the client's dialog says what will happen in words,
// first and in the checkbox; a contact changed while the person read it
// is not deleted (and the model is told to ask again); unchanged, once.
func TestShowDialog(t *testing.T) {
	h := showHarness(t)
	var mu sync.Mutex
	var messages, titles []string
	change := false
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		messages = append(messages, r.Params.Message)
		props, _ := r.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)
		title, _ := props["approve"].(map[string]any)["title"].(string)
		titles = append(titles, title)
		c := change
		mu.Unlock()
		if c { // someone changes the contact while the person reads the question
			h.call("cs_test_run", changeContact12)
		}
		return accept(true)(r)
	}}, nil)

	patch := callTool(t, s, "shown__patch_contacts_by_id", map[string]any{"id": "12", "body": map[string]any{"company": "Stanford"}}, nil)
	if patch.IsError {
		t.Fatalf("patch: %q", text(patch))
	}
	mu.Lock()
	first := strings.SplitN(messages[0], "\n", 2)[0]
	if want := "Update contact 12, John McCarthy <john.mccarthy@example.com> (Test Co)"; first != want {
		t.Errorf("the dialog's first line %q, want %q", first, want)
	}
	if !strings.Contains(messages[0], `company: "Contoso" → "Stanford"`) || titles[0] != "Update contact 12, John McCarthy <john.mccarthy@example.com>" {
		t.Errorf("dialog %q, checkbox %q", messages[0], titles[0])
	}
	change = true
	mu.Unlock()

	del := callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	if !del.IsError || !strings.HasPrefix(text(del), "Refused (resource_changed)") || !strings.Contains(text(del), "Ask the person again") {
		t.Errorf("delete of a contact changed while asked: %q", text(del))
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Fatalf("the upstream got %d deletes of a contact that changed", n)
	}
	mu.Lock()
	change = false
	mu.Unlock()
	del = callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	if del.IsError {
		t.Errorf("delete unchanged: %q", text(del))
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

// TestShowBatch: a script's batch shows each operation its own resource;
// one contact changed before the approval: that operation is marked
// resource_changed and not sent, the other runs.
func TestShowBatch(t *testing.T) {
	h := showHarness(t)
	var mu sync.Mutex
	var message string
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		message = r.Params.Message
		mu.Unlock()
		h.call("cs_test_run", changeContact12)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"op0": true, "op1": true}}, nil
	}}, nil)
	src := `const a = call('shown', 'DELETE', '/contacts/12'); const b = call('shown', 'DELETE', '/contacts/3'); ({a: a.status, ae: a.error, b: b.status})`
	r := runScript(t, s, src, "", nil)
	mu.Lock()
	for _, want := range []string{"Delete contact 12, John McCarthy", "Delete contact 3, Grace Hopper"} {
		if !strings.Contains(message, want) {
			t.Errorf("the batch's dialog lacks %q:\n%s", want, message)
		}
	}
	mu.Unlock()
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 0 {
		t.Errorf("the upstream got %d deletes of a contact that changed", n)
	}
	if n := h.upstream.Count("DELETE", "/contacts/3"); n != 1 {
		t.Errorf("%d deletes of the unchanged contact, want 1 (%q)", n, text(r))
	}
	if !strings.Contains(text(r), `"ae":"resource_changed"`) || !strings.Contains(text(r), `"b":204`) {
		t.Errorf("the script's result does not mark the changed operation: %q %v", text(r), structured(t, r))
	}
}
