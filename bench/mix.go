package bench

import (
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/shared/tier"
)

// Case is one call of the mix: the credential that makes it (an id of
// policy/config/credentials.json), the call, and the decision every engine
// must reach.
type Case struct {
	Name       string
	Credential string
	Call       tier.Call
	Want       Result
}

// RouterOnly reports whether the router refuses the case before any engine
// is asked; such cases are named "unknown_...".
func (c *Case) RouterOnly() bool { return strings.HasPrefix(c.Name, "unknown_") }

// Mix returns the call mix on policy/config: reads, confirm-tier writes for
// each credential choice, the review and never tiers, a read-only
// credential's write, a write with intent read, threshold escalations above
// and below their limits, delegated calls and unknown operations.
func Mix() []Case {
	const shop = "shop"
	call := func(method, path string, intent tier.Intent) tier.Call {
		return tier.Call{Connection: shop, Method: method, Path: path, Intent: intent}
	}
	withBody := func(c tier.Call, body string) tier.Call {
		c.Body = decode(body)
		return c
	}
	delegated := func(c tier.Call) tier.Call {
		c.Delegated = true
		return c
	}
	var (
		read  = tier.IntentRead
		write = tier.IntentWrite

		execute = func(t tier.Tier) Result { return Result{Outcome: tier.Execute, Tier: t} }
		deny    = func(t tier.Tier, code tier.Code) Result { return Result{Outcome: tier.Deny, Tier: t, Code: code} }
		raised  = func(t tier.Tier, code tier.Code) Result {
			return Result{Outcome: tier.Deny, Tier: t, Code: code, Escalated: true}
		}
	)
	return []Case{
		{"read", "chat-user", call("GET", "/customers/8812", read), execute(tier.Auto)},
		{"read_nested", "runner", call("GET", "/orders/1001/items/77", read), execute(tier.Auto)},
		{"read_literal", "ops-key", call("GET", "/products/search", read), execute(tier.Auto)},

		{"confirm_refuse", "ops-key", call("DELETE", "/customers/8812", write),
			deny(tier.Confirm, tier.CodeRequiresConfirmation)},
		{"confirm_ask_person", "chat-user", call("DELETE", "/customers/8812", write),
			Result{Outcome: tier.Pause, Tier: tier.Confirm}},
		{"confirm_ask_agent", "agent", call("DELETE", "/customers/8812", write),
			Result{Outcome: tier.Execute, Tier: tier.Confirm, Notice: true}},
		{"confirm_run_without_asking", "runner", call("DELETE", "/customers/8812", write),
			execute(tier.Confirm)},

		{"review", "runner", call("POST", "/accounts/42/close", write), deny(tier.Review, tier.CodeReviewRequired)},
		{"never", "runner", call("DELETE", "/accounts/42", write), deny(tier.Never, tier.CodeBlocked)},
		{"read_only_write", "reader", call("PATCH", "/customers/8812", write), deny(tier.Auto, tier.CodeReadOnly)},
		{"read_only_read", "reader", call("GET", "/customers/8812", read), execute(tier.Auto)},
		{"read_only_review", "reader", call("POST", "/accounts/42/close", write), deny(tier.Review, tier.CodeReadOnly)},
		{"write_intent_read", "chat-user", call("POST", "/customers", read), deny(tier.Auto, tier.CodeWriteIntentRequired)},
		{"write_intent_read_confirm", "ops-key", call("DELETE", "/customers/8812", read),
			deny(tier.Confirm, tier.CodeWriteIntentRequired)},

		{"threshold_below", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 2500, "currency": "EUR", "customer_id": 8812}`),
			Result{Outcome: tier.Pause, Tier: tier.Confirm}},
		{"threshold_at_limit", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 10000, "currency": "EUR", "customer_id": 8812}`),
			Result{Outcome: tier.Pause, Tier: tier.Confirm}},
		{"threshold_above_review", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 20000, "currency": "EUR", "customer_id": 8812}`),
			raised(tier.Review, tier.CodeReviewRequired)},
		{"threshold_above_never", "runner",
			withBody(call("POST", "/payments", write), `{"amount": 2000000, "currency": "EUR", "customer_id": 8812}`),
			raised(tier.Never, tier.CodeBlocked)},
		{"threshold_nested_below", "runner",
			withBody(call("POST", "/orders", write), `{"customer_id": 8812, "total": {"amount": 120, "currency": "EUR"}, "lines": [{"sku": "A-1", "quantity": 3}]}`),
			execute(tier.Auto)},
		{"threshold_nested_above", "runner",
			withBody(call("POST", "/orders", write), `{"customer_id": 8812, "total": {"amount": 7500, "currency": "EUR"}, "lines": [{"sku": "A-1", "quantity": 150}]}`),
			raised(tier.Review, tier.CodeReviewRequired)},

		{"delegated_confirm", "chat-user", delegated(call("DELETE", "/customers/8812", write)),
			raised(tier.Review, tier.CodeReviewRequired)},
		{"delegated_read_only", "reader", delegated(call("DELETE", "/customers/8812", write)),
			raised(tier.Review, tier.CodeReviewRequired)},
		{"delegated_auto", "chat-user", delegated(call("PATCH", "/orders/1001", write)), execute(tier.Auto)},

		{"unknown_path", "runner", call("GET", "/secrets", read), deny(tier.Never, tier.CodeUnknownOperation)},
		{"unknown_method", "runner", call("PUT", "/orders/1001", write), deny(tier.Never, tier.CodeUnknownOperation)},
	}
}

// decode decodes a JSON body as the gateway does (numbers as json.Number).
func decode(s string) any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic("bench: bad body in the mix: " + err.Error())
	}
	return v
}
