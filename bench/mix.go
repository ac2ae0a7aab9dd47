package bench

import (
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/shared/policy"
)

// Case is one call of the mix: the credential that makes it (an id of
// policy/config/credentials.json), the call, and the decision every engine
// must reach.
type Case struct {
	Name       string
	Credential string
	Call       policy.Call
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
	call := func(method, path string, intent policy.Intent) policy.Call {
		return policy.Call{Connection: shop, Method: method, Path: path, Intent: intent}
	}
	withBody := func(c policy.Call, body string) policy.Call {
		c.Body = decode(body)
		return c
	}
	delegated := func(c policy.Call) policy.Call {
		c.Delegated = true
		return c
	}
	var (
		read  = policy.IntentRead
		write = policy.IntentWrite

		execute = func(t policy.Tier) Result { return Result{Outcome: policy.Execute, Tier: t} }
		deny    = func(t policy.Tier, code policy.Code) Result { return Result{Outcome: policy.Deny, Tier: t, Code: code} }
		raised  = func(t policy.Tier, code policy.Code) Result {
			return Result{Outcome: policy.Deny, Tier: t, Code: code, Escalated: true}
		}
	)
	return []Case{
		{"read", "chat-user", call("GET", "/customers/8812", read), execute(policy.Auto)},
		{"read_nested", "runner", call("GET", "/orders/1001/items/77", read), execute(policy.Auto)},
		{"read_literal", "ops-key", call("GET", "/products/search", read), execute(policy.Auto)},

		{"confirm_refuse", "ops-key", call("DELETE", "/customers/8812", write),
			deny(policy.Confirm, policy.CodeRequiresConfirmation)},
		{"confirm_ask_person", "chat-user", call("DELETE", "/customers/8812", write),
			Result{Outcome: policy.Pause, Tier: policy.Confirm}},
		{"confirm_ask_agent", "agent", call("DELETE", "/customers/8812", write),
			Result{Outcome: policy.Execute, Tier: policy.Confirm, Notice: true}},
		{"confirm_run_without_asking", "runner", call("DELETE", "/customers/8812", write),
			execute(policy.Confirm)},

		{"review", "runner", call("POST", "/accounts/42/close", write), deny(policy.Review, policy.CodeReviewRequired)},
		{"never", "runner", call("DELETE", "/accounts/42", write), deny(policy.Never, policy.CodeBlocked)},
		{"read_only_write", "reader", call("PATCH", "/customers/8812", write), deny(policy.Auto, policy.CodeReadOnly)},
		{"read_only_read", "reader", call("GET", "/customers/8812", read), execute(policy.Auto)},
		{"read_only_review", "reader", call("POST", "/accounts/42/close", write), deny(policy.Review, policy.CodeReadOnly)},
		{"write_intent_read", "chat-user", call("POST", "/customers", read), deny(policy.Auto, policy.CodeWriteIntentRequired)},
		{"write_intent_read_confirm", "ops-key", call("DELETE", "/customers/8812", read),
			deny(policy.Confirm, policy.CodeWriteIntentRequired)},

		{"threshold_below", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 2500, "currency": "EUR", "customer_id": 8812}`),
			Result{Outcome: policy.Pause, Tier: policy.Confirm}},
		{"threshold_at_limit", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 10000, "currency": "EUR", "customer_id": 8812}`),
			Result{Outcome: policy.Pause, Tier: policy.Confirm}},
		{"threshold_above_review", "chat-user",
			withBody(call("POST", "/payments", write), `{"amount": 20000, "currency": "EUR", "customer_id": 8812}`),
			raised(policy.Review, policy.CodeReviewRequired)},
		{"threshold_above_never", "runner",
			withBody(call("POST", "/payments", write), `{"amount": 2000000, "currency": "EUR", "customer_id": 8812}`),
			raised(policy.Never, policy.CodeBlocked)},
		{"threshold_nested_below", "runner",
			withBody(call("POST", "/orders", write), `{"customer_id": 8812, "total": {"amount": 120, "currency": "EUR"}, "lines": [{"sku": "A-1", "quantity": 3}]}`),
			execute(policy.Auto)},
		{"threshold_nested_above", "runner",
			withBody(call("POST", "/orders", write), `{"customer_id": 8812, "total": {"amount": 7500, "currency": "EUR"}, "lines": [{"sku": "A-1", "quantity": 150}]}`),
			raised(policy.Review, policy.CodeReviewRequired)},

		{"delegated_confirm", "chat-user", delegated(call("DELETE", "/customers/8812", write)),
			raised(policy.Review, policy.CodeReviewRequired)},
		{"delegated_read_only", "reader", delegated(call("DELETE", "/customers/8812", write)),
			raised(policy.Review, policy.CodeReviewRequired)},
		{"delegated_auto", "chat-user", delegated(call("PATCH", "/orders/1001", write)), execute(policy.Auto)},

		{"unknown_path", "runner", call("GET", "/secrets", read), deny(policy.Never, policy.CodeUnknownOperation)},
		{"unknown_method", "runner", call("PUT", "/orders/1001", write), deny(policy.Never, policy.CodeUnknownOperation)},
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
