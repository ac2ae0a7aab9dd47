package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
)

// TestForwardedHeadersInThePayloads: an operation's bound headers are in the event's
// args.headers (the webhook payload) and in the e-mail's arguments; content negotiation,
// which is not bound, is in neither.
func TestForwardedHeadersInThePayloads(t *testing.T) {
	c := &countersign.Confirmation{ID: "cf_1", Kind: countersign.KindCall, Credential: "chat-user", ExpiresAt: now.Add(10 * time.Minute),
		Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Endpoint: "/contacts/{id}",
			Args: countersign.Args{Path: map[string]string{"id": "12"}, Query: map[string]any{}, Body: json.RawMessage("null"),
				Headers: map[string]string{"X-Tenant-Id": "sandbox", "X-Dry-Run": "true"}},
			Negotiation: map[string]string{"Accept": "application/json"}}}}
	ec := ConfirmationOf(c)
	var args struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(ec.Operations[0].Args, &args); err != nil || args.Headers["X-Tenant-Id"] != "sandbox" || args.Headers["X-Dry-Run"] != "true" {
		t.Fatalf("args = %s (%v), want headers X-Tenant-Id and X-Dry-Run", ec.Operations[0].Args, err)
	}
	if strings.Contains(string(ec.Operations[0].Args), "Accept") {
		t.Errorf("args carry content negotiation: %s", ec.Operations[0].Args)
	}
	m := EmailFor(Event{Type: TypeRequested, Confirmation: ec, Links: []EventLink{{Approver: "email", URL: "https://api.example/approve/cf_1"}}}, "email", "Acme", now)
	if !strings.Contains(m.Body, `"headers":{"X-Dry-Run":"true","X-Tenant-Id":"sandbox"}`) {
		t.Errorf("the e-mail does not show the headers:\n%s", m.Body)
	}
}
