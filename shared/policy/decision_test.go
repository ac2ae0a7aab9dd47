package policy

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

// testPolicy is the fixture of the decision table: one endpoint or tool per
// vocabulary entry of the source documents.
func testPolicy(tb testing.TB) *Set {
	tb.Helper()
	crm := &Connection{
		Name:              "crm",
		EscalateDelegated: true,
		Hooked:            true,
		Endpoints: []*Endpoint{
			{Method: "GET", Path: "/contacts/{id}", Tier: Auto,
				Rule: "connections/crm/policy.json endpoints[0] GET /contacts/{id} (no confirm: auto)"},
			{Method: "GET", Path: "/contacts/search", Tier: Auto},
			{Method: "POST", Path: "/contacts", Tier: Auto},
			{Method: "PUT", Path: "/contacts/{id}", Tier: Confirm},
			{Method: "PATCH", Path: "/contacts/{id}", Tier: Confirm},
			{Method: "DELETE", Path: "/contacts/{id}", Tier: Confirm, OperationID: "deleteContact",
				Rule: "connections/crm/policy.json endpoints[5] DELETE /contacts/{id} confirm: true"},
			{Method: "POST", Path: "/payments", Tier: Confirm, Escalate: []Threshold{
				{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 10000, Escalate: Review},
				{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 1000000, Escalate: Never},
				{Field: "body.lines.0.amount", Source: SourceBody, Path: []string{"lines", "0", "amount"}, Above: 5000, Escalate: Review},
			}},
			{Method: "POST", Path: "/transfers", Tier: Auto, Escalate: []Threshold{
				{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 500, Escalate: Review},
			}},
			{Method: "GET", Path: "/reports", Tier: Auto, Escalate: []Threshold{
				{Field: "query.limit", Source: SourceQuery, Path: []string{"limit"}, Above: 1000, Escalate: Review},
			}},
			{Method: "DELETE", Path: "/batches/{count}", Tier: Confirm, Escalate: []Threshold{
				{Field: "path.count", Source: SourcePath, Path: []string{"count"}, Above: 100, Escalate: Never},
			}},
			{Method: "POST", Path: "/accounts/{id}/close", Tier: Review},
			{Method: "DELETE", Path: "/accounts/{id}", Tier: Never, Escalate: []Threshold{
				{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 1, Escalate: Review},
			}},
			{Method: "POST", Path: "/contacts/{id}/archive", Tool: "archive_contact", Tier: Confirm, Recorded: Review,
				Prompt: "Archive this contact?"},
			{Method: "POST", Path: "/contacts/{id}/tag", Tool: "tag_contact", Tier: Auto, Recorded: Auto},
			{Method: "POST", Path: "/admin/reindex", Tool: "reindex", Tier: Auto, Recorded: Never, OperatorOnly: true},
			{Method: "POST", Path: "/admin/purge", Tool: "purge", Tier: Never, Recorded: Never, OperatorOnly: true, Hidden: true},
			{Method: "GET", Path: "/export", Tool: "export", Tier: Auto, Hidden: true},
		},
	}
	billing := &Connection{
		Name: "billing",
		Endpoints: []*Endpoint{
			{Method: "GET", Path: "/invoices/{id}", Tier: Auto},
			{Method: "DELETE", Path: "/invoices/{id}", Tier: Confirm},
		},
	}
	p, err := NewPolicy([]*Connection{crm, billing})
	if err != nil {
		tb.Fatalf("NewPolicy: %v", err)
	}
	return p
}

var (
	refuse      = &Credential{ID: "ops-key", Choice: countersign.Refuse}
	askPerson   = &Credential{ID: "chat-user", Choice: countersign.AskPerson}
	askAgent    = &Credential{ID: "agent", Choice: countersign.AskAgent}
	runAlways   = &Credential{ID: "automation", Choice: countersign.RunWithoutAsking}
	crmOnly     = &Credential{ID: "crm-only", Choice: countersign.AskPerson, Connections: []string{"crm"}}
	operatorKey = &Credential{ID: "op", Choice: countersign.DefaultChoice(countersign.OriginOperator)}
	chatUser    = &Credential{ID: "chat", Choice: countersign.DefaultChoice(countersign.OriginChat)}
)

func readOnly(c countersign.Choice) *Credential {
	return &Credential{ID: "reader", Choice: c, ReadOnly: true}
}

func call(conn, method, path string, intent Intent) Call {
	return Call{Connection: conn, Method: method, Path: path, Intent: intent}
}

func withBody(c Call, body string) Call {
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&c.Body); err != nil {
		panic(err)
	}
	return c
}

func withQuery(c Call, q string) Call {
	v, err := url.ParseQuery(q)
	if err != nil {
		panic(err)
	}
	c.Query = v
	return c
}

func delegated(c Call) Call { c.Delegated = true; return c }

func withForm(c Call, form string) Call {
	v, err := url.ParseQuery(form)
	if err != nil {
		panic(err)
	}
	c.BodyForm = v
	return c
}

func unreadable(c Call, reason string) Call { c.BodyUnreadable = reason; return c }

type want struct {
	outcome    Outcome
	code       Code
	tier       Tier
	configured Tier
	escalated  bool
	notice     bool
	rule       string // exact when set
	reason     string // substring when set
}

const (
	crmGet    = "connections/crm/policy.json endpoints[0] GET /contacts/{id} (no confirm: auto)"
	crmDelete = "connections/crm/policy.json endpoints[5] DELETE /contacts/{id} confirm: true"
)

func TestDecide(t *testing.T) {
	p := testPolicy(t)
	del := call("crm", "DELETE", "/contacts/12", IntentWrite)
	pay := func(body string) Call { return withBody(call("crm", "POST", "/payments", IntentWrite), body) }

	tests := []struct {
		name string
		call Call
		cred *Credential
		hook HookAnswer
		want want
	}{
		// The four tiers.
		{name: "auto: the agent executes without user interaction; the default for reads",
			call: call("crm", "GET", "/contacts/12", IntentRead), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto, rule: crmGet, reason: "auto tier"}},
		{name: "confirm: execution pauses and waits for approval (ask_person)",
			call: del, cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm, rule: "choice ask_person", reason: "DELETE /contacts/{id} requires confirmation: waiting for a person"}},
		{name: "review: the agent cannot execute the call itself; it requires human review",
			call: call("crm", "POST", "/accounts/7/close", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Review, reason: "review tier"}},
		{name: "never: the operation is blocked entirely",
			call: call("crm", "DELETE", "/accounts/7", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Never, reason: "never tier"}},

		// Vocabulary 1: policy.json confirm.
		{name: "confirm omitted → auto, also for a write endpoint",
			call: call("crm", "POST", "/contacts", IntentWrite), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto, rule: "connection crm POST /contacts (no confirm: auto)"}},
		{name: "confirm true → confirm (the endpoint's rule is named in the reason)",
			call: del, cred: refuse,
			want: want{outcome: Deny, code: CodeRequiresConfirmation, tier: Confirm, configured: Confirm, rule: "choice refuse", reason: "DELETE /contacts/{id} requires confirmation"}},
		{name: `confirm "review" → review, denied regardless of intent write`,
			call: call("crm", "POST", "/accounts/7/close", IntentWrite), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Review}},
		{name: `confirm "review" → review, denied regardless of intent confirmed_write`,
			call: call("crm", "POST", "/accounts/7/close", IntentConfirmedWrite), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Review}},
		{name: `confirm "never" → never, denied regardless of intent confirmed_write`,
			call: call("crm", "DELETE", "/accounts/7", IntentConfirmedWrite), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Never}},
		{name: "an operation marked requires confirmation on the API is at least confirm",
			call: call("crm", "PATCH", "/contacts/12", IntentWrite), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},

		// Vocabulary 2: tool exposure.kind.
		{name: "exposure.kind open → auto: the agent calls the tool freely",
			call: call("crm", "POST", "/contacts/12/tag", IntentWrite), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto, reason: `tool "tag_contact"`}},
		{name: "requires-confirmation: every call pauses for approval (recorded at review, pauses like confirm)",
			call: call("crm", "POST", "/contacts/12/archive", IntentWrite), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm, rule: "choice ask_person", reason: `tool "archive_contact" (POST /contacts/{id}/archive) requires confirmation`}},
		{name: "requires-confirmation with refuse is refused requires_confirmation, not review_required",
			call: call("crm", "POST", "/contacts/12/archive", IntentWrite), cred: refuse,
			want: want{outcome: Deny, code: CodeRequiresConfirmation, tier: Confirm, configured: Confirm}},
		{name: "operator-gated: runs only from operator UI actions, never autonomously (agents get never)",
			call: call("crm", "POST", "/admin/reindex", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Never, rule: "connection crm tool \"reindex\" (POST /admin/reindex) exposure.kind: operator-gated", reason: "operator-gated"}},
		{name: "operator-gated paired with llm_callable false: the model does not see the tool at all",
			call: call("crm", "POST", "/admin/purge", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleHidden, reason: "unknown operation"}},
		{name: "llm_callable false hides the tool from agents entirely",
			call: call("crm", "GET", "/export", IntentRead), cred: runAlways,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleHidden}},

		// Vocabulary 3: the intent handshake.
		{name: "intent: a mutating POST with intent read is rejected",
			call: call("crm", "POST", "/contacts", IntentRead), cred: runAlways,
			want: want{outcome: Deny, code: CodeWriteIntentRequired, tier: Auto, configured: Auto, rule: RuleIntent}},
		{name: "intent: a mutating PUT with intent read is rejected",
			call: call("crm", "PUT", "/contacts/12", IntentRead), cred: runAlways,
			want: want{outcome: Deny, code: CodeWriteIntentRequired, tier: Confirm, configured: Confirm, rule: RuleIntent}},
		{name: "intent: a mutating PATCH with intent read is rejected",
			call: call("crm", "PATCH", "/contacts/12", IntentRead), cred: askPerson,
			want: want{outcome: Deny, code: CodeWriteIntentRequired, tier: Confirm, configured: Confirm}},
		{name: "intent: a mutating DELETE with intent read is rejected",
			call: call("crm", "DELETE", "/contacts/12", IntentRead), cred: askPerson,
			want: want{outcome: Deny, code: CodeWriteIntentRequired, tier: Confirm, configured: Confirm}},
		{name: "intent: a read may declare read",
			call: call("crm", "GET", "/contacts/search", IntentRead), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "handshake step 1: intent write at the confirm tier pauses (preview, confirmation_required)",
			call: del, cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "handshake step 3: intent confirmed_write at the confirm tier needs the approval (caller redeems)",
			call: call("crm", "DELETE", "/contacts/12", IntentConfirmedWrite), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "an auto write with intent confirmed_write just runs",
			call: call("crm", "POST", "/contacts", IntentConfirmedWrite), cred: askPerson,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},

		// Escalation.
		{name: "threshold escalation: body.amount above 10000 escalates confirm to review, denied not paused",
			call: pay(`{"amount": 10001}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true,
				rule: "body.amount", reason: "escalated to review: body.amount 10001 is above 10000"}},
		{name: "threshold escalation is strictly above: equal to the limit does not escalate",
			call: pay(`{"amount": 10000}`), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "threshold escalation to never surfaces as blocked with the escalation reason",
			call: pay(`{"amount": 2000000}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true,
				reason: "escalated to never: body.amount 2000000 is above 1000000"}},
		{name: "threshold escalation raises an auto endpoint too (a configured tier is a floor)",
			call: withBody(call("crm", "POST", "/transfers", IntentWrite), `{"amount": 501.5}`), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true,
				reason: "body.amount 501.5 is above 500"}},
		{name: "threshold escalation reads a float64 body (not only json.Number)",
			call: Call{Connection: "crm", Method: "POST", Path: "/transfers", Intent: IntentWrite, Body: map[string]any{"amount": float64(600)}}, cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "body.amount 600 is above 500"}},
		{name: "threshold escalation reads an int body",
			call: Call{Connection: "crm", Method: "POST", Path: "/transfers", Intent: IntentWrite, Body: map[string]any{"amount": 700}}, cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, escalated: true, configured: Auto}},
		{name: "threshold escalation walks arrays by index (body.lines.0.amount)",
			call: pay(`{"amount": 1, "lines": [{"amount": 9000}]}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true, rule: "body.lines.0.amount"}},
		{name: "threshold escalation ignores a missing field",
			call: pay(`{"currency": "EUR"}`), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "threshold escalation ignores a null field",
			call: pay(`{"amount": null}`), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "threshold escalation reads a number written as a string (\"10001\" cannot slip under)",
			call: pay(`{"amount": "10001"}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true, reason: "body.amount 10001 is above 10000"}},
		{name: "threshold escalation fails closed on a value that is not a number: the strictest rule on the field applies",
			call: pay(`{"amount": "lots"}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true, reason: "body.amount is not a number"}},
		{name: "threshold escalation fails closed on NaN",
			call: pay(`{"amount": "NaN"}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true}},
		{name: "threshold escalation fails closed on an object where a number belongs",
			call: pay(`{"amount": {"value": 1}}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true}},
		{name: "threshold escalation: a repeated query parameter counts by its largest value",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=1&limit=5000"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold escalation fails closed on a query value that is not a number",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=all"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold escalation reads query.<name> as a number",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=5000"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true,
				rule: "query.limit", reason: "escalated to review: query.limit 5000 is above 1000"}},
		{name: "threshold escalation: a huge query number (1e400) still counts",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=1e400"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold escalation: a query value under the limit runs",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=10"), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		// Case variants, forms and unreadable bodies (issue 11): a threshold
		// sees what any upstream could read, and fails closed.
		{name: "threshold: a case-variant key above the limit escalates ({\"amount\":5,\"Amount\":99999})",
			call: pay(`{"amount": 5, "Amount": 99999}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true, reason: "body.amount 99999 is above 10000"}},
		{name: "threshold: a key in another case alone is read",
			call: pay(`{"AMOUNT": 20000}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true}},
		{name: "threshold: a case variant that is not a number fails closed",
			call: pay(`{"amount": 5, "Amount": "lots"}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true, reason: "is not a number"}},
		{name: "threshold: case variants all under the limit pause as usual",
			call: pay(`{"amount": 5, "Amount": 7, "AMOUNT": 9}`), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "threshold: case variants along a nested path (body.lines.0.amount)",
			call: pay(`{"amount": 1, "lines": [{"amount": 1}], "Lines": [{"Amount": 9000}]}`), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true, rule: "body.lines.0.amount"}},
		{name: "threshold: a query name in another case is read",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "LIMIT=5000"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "query.limit 5000 is above 1000"}},
		{name: "threshold: query case variants count by the largest",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=1&Limit=5000"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold: a query name with brackets (limit[]) is the same name",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit[]=5000"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold: a structured query value (limit[x]) fails closed",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit[x]=1"), cred: refuse,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "query.limit is not a number"}},
		{name: "threshold: another query name with a common prefix is another field",
			call: withQuery(call("crm", "GET", "/reports", IntentRead), "limits=5000&xlimit=5000"), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "threshold: a form-encoded body is checked like query parameters",
			call: withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=600"), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "body.amount 600 is above 500"}},
		{name: "threshold: a form key in another case is read",
			call: withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=5&Amount=99999"), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "99999"}},
		{name: "threshold: a repeated form key counts by its largest value",
			call: withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=5&amount=600"), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true}},
		{name: "threshold: a form value that is not a number fails closed",
			call: withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=lots"), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "not a number"}},
		{name: "threshold: a form under the limit runs",
			call: withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=100&note=x"), cred: runAlways,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "threshold: a nested path reads bracketed form keys (lines[0][amount])",
			call: withForm(pay(`null`), "amount=1&lines[0][amount]=9000"), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true, rule: "body.lines.0.amount"}},
		{name: "threshold: a nested path reads dotted form keys (lines.0.amount)",
			call: withForm(pay(`null`), "lines.0.Amount=9000"), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true}},
		{name: "threshold: a form body that is also JSON is checked both ways",
			call: withForm(withBody(call("crm", "POST", "/transfers", IntentWrite), `{"amount": 600}`), `{"amount":600}`), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, reason: "body.amount 600 is above 500"}},
		{name: "threshold: a body that cannot be checked escalates, saying so",
			call: unreadable(call("crm", "POST", "/transfers", IntentWrite), `its Content-Type "text/plain" is neither JSON nor form-encoded`), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Auto, escalated: true, rule: "body.amount",
				reason: `escalated to review: the body could not be checked against body.amount above 500: its Content-Type "text/plain" is neither JSON nor form-encoded`}},
		{name: "threshold: an unreadable body meets the strictest body rule",
			call: unreadable(pay(`{"amount": 1}`), "it is not strict JSON"), cred: askPerson,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true, reason: "the body could not be checked against body.amount above 1000000"}},
		{name: "threshold: an unreadable body does not matter where no threshold reads the body",
			call: unreadable(call("crm", "POST", "/contacts", IntentWrite), "it has no Content-Type"), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "threshold: an unreadable body does not matter to a query threshold",
			call: unreadable(withQuery(call("crm", "GET", "/reports", IntentRead), "limit=10"), "it has no Content-Type"), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "threshold escalation reads path.<param>",
			call: call("crm", "DELETE", "/batches/500", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Confirm, escalated: true,
				rule: "path.count", reason: "escalated to never: path.count 500 is above 100"}},
		{name: "threshold escalation only raises: it never lowers a never endpoint",
			call: withBody(call("crm", "DELETE", "/accounts/7", IntentWrite), `{"amount": 5}`), cred: runAlways,
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Never, escalated: false, reason: "never tier"}},
		{name: "delegation: isDelegated and delegations.escalateConfirm turn confirm into review",
			call: delegated(del), cred: askPerson,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true,
				rule: RuleDelegation, reason: "escalated to review: delegated call and delegations.escalateConfirm is true"}},
		{name: "delegation escalation applies to requires-confirmation tools too",
			call: delegated(call("crm", "POST", "/contacts/1/archive", IntentWrite)), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true}},
		{name: "delegation escalation only turns confirm into review: a delegated auto call runs",
			call: delegated(call("crm", "GET", "/contacts/1", IntentRead)), cred: askPerson,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "delegation escalation needs delegations.escalateConfirm on the connection",
			call: delegated(call("billing", "DELETE", "/invoices/1", IntentWrite)), cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "an escalated call never pauses, whatever the choice (run_without_asking)",
			call: pay(`{"amount": 20000}`), cred: runAlways,
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Confirm, escalated: true}},

		// Hooks.
		{name: "hook deny → denied hook_denied with the hook's reason",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: runAlways, hook: HookAnswer{Decision: HookDeny, Reason: "contact 1 is on legal hold"},
			want: want{outcome: Deny, code: CodeHookDenied, tier: Auto, configured: Auto, rule: RuleHook, reason: "contact 1 is on legal hold"}},
		{name: "hook ask → at least confirm: an auto call pauses (confirmation_required fires)",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: askPerson, hook: HookAnswer{Decision: HookAsk, Reason: "VIP contact"},
			want: want{outcome: Pause, tier: Confirm, configured: Auto, rule: "choice ask_person", reason: "hook asked for confirmation of GET /contacts/{id} (VIP contact)"}},
		{name: "hook ask → at least confirm: refuse denies requires_confirmation",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: refuse, hook: HookAnswer{Decision: HookAsk},
			want: want{outcome: Deny, code: CodeRequiresConfirmation, tier: Confirm, configured: Auto}},
		{name: "hook ask never lowers: a review endpoint stays review",
			call: call("crm", "POST", "/accounts/1/close", IntentWrite), cred: askPerson, hook: HookAnswer{Decision: HookAsk},
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, configured: Review}},
		{name: "hook allow never lowers: a confirm endpoint still pauses",
			call: del, cred: askPerson, hook: HookAnswer{Decision: HookAllow},
			want: want{outcome: Pause, tier: Confirm, configured: Confirm}},
		{name: "hook allow never lowers: a never endpoint stays blocked",
			call: call("crm", "DELETE", "/accounts/7", IntentWrite), cred: runAlways, hook: HookAnswer{Decision: HookAllow},
			want: want{outcome: Deny, code: CodeBlocked, tier: Never, configured: Never}},
		{name: "escalation decides before the hook",
			call: pay(`{"amount": 20000}`), cred: askPerson, hook: HookAnswer{Decision: HookDeny, Reason: "no"},
			want: want{outcome: Deny, code: CodeReviewRequired, tier: Review, escalated: true, configured: Confirm}},

		// The four credential choices.
		{name: "choice refuse: refused with requires_confirmation",
			call: del, cred: refuse,
			want: want{outcome: Deny, code: CodeRequiresConfirmation, tier: Confirm, configured: Confirm, rule: "choice refuse"}},
		{name: "choice ask_person: the call waits until the person approves it",
			call: del, cred: askPerson,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm, rule: "choice ask_person"}},
		{name: "choice ask_agent: the call runs and the model sees the operation requires confirmation",
			call: del, cred: askAgent,
			want: want{outcome: Execute, notice: true, tier: Confirm, configured: Confirm, rule: "choice ask_agent", reason: "requires confirmation"}},
		{name: "choice run_without_asking: the call runs with no confirmation",
			call: del, cred: runAlways,
			want: want{outcome: Execute, tier: Confirm, configured: Confirm, rule: "choice run_without_asking"}},
		{name: "choices only matter at the confirm tier: auto runs for refuse",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: refuse,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},

		// Origin defaults.
		{name: "a key created by an operator starts on refuse",
			call: del, cred: operatorKey,
			want: want{outcome: Deny, code: CodeRequiresConfirmation, tier: Confirm, configured: Confirm, rule: "choice refuse"}},
		{name: "a user created for chat and coding agents starts on ask_person",
			call: del, cred: chatUser,
			want: want{outcome: Pause, tier: Confirm, configured: Confirm, rule: "choice ask_person"}},

		// Read-only.
		{name: "read-only refuses every write whatever its choice: refuse",
			call: del, cred: readOnly(countersign.Refuse),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Confirm, configured: Confirm, rule: RuleReadOnly}},
		{name: "read-only refuses every write whatever its choice: ask_person",
			call: del, cred: readOnly(countersign.AskPerson),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Confirm, configured: Confirm}},
		{name: "read-only refuses every write whatever its choice: ask_agent",
			call: del, cred: readOnly(countersign.AskAgent),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Confirm, configured: Confirm}},
		{name: "read-only refuses every write whatever its choice: run_without_asking",
			call: del, cred: readOnly(countersign.RunWithoutAsking),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Confirm, configured: Confirm}},
		{name: "read-only refuses an auto write too",
			call: call("crm", "POST", "/contacts", IntentWrite), cred: readOnly(countersign.RunWithoutAsking),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Auto, configured: Auto, reason: "read-only"}},
		{name: "read-only is checked before the intent",
			call: call("crm", "POST", "/contacts", IntentRead), cred: readOnly(countersign.RunWithoutAsking),
			want: want{outcome: Deny, code: CodeReadOnly, tier: Auto, configured: Auto}},
		{name: "read-only still reads",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: readOnly(countersign.Refuse),
			want: want{outcome: Execute, tier: Auto, configured: Auto}},

		// Unknown operations and connection limits.
		{name: "a call to a method and path that no endpoint lists is unknown_operation (default deny)",
			call: call("crm", "GET", "/nowhere", IntentRead), cred: runAlways,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleUnknownEndpoint, reason: `connection "crm" has no endpoint`}},
		{name: "a known path with an unlisted method is unknown_operation",
			call: call("crm", "POST", "/contacts/12", IntentWrite), cred: runAlways,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleUnknownEndpoint}},
		{name: "an unknown connection is unknown_operation",
			call: call("erp", "GET", "/contacts/1", IntentRead), cred: runAlways,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleUnknownConnection}},
		{name: "connections limits the credential: another connection is unknown_operation",
			call: call("billing", "GET", "/invoices/1", IntentRead), cred: crmOnly,
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never, rule: RuleCredentialConnections, reason: `may not use connection "billing"`}},
		{name: "connections limits the credential: a listed connection works",
			call: call("crm", "GET", "/contacts/1", IntentRead), cred: crmOnly,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "connections omitted means all connections",
			call: call("billing", "GET", "/invoices/1", IntentRead), cred: askPerson,
			want: want{outcome: Execute, tier: Auto, configured: Auto}},
		{name: "unknown operation decides before read-only and intent",
			call: call("crm", "DELETE", "/nowhere", IntentRead), cred: readOnly(countersign.Refuse),
			want: want{outcome: Deny, code: CodeUnknownOperation, tier: Never, configured: Never}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			d := Evaluate(p, Input{Call: &c, Credential: tt.cred, Hook: tt.hook})
			w := tt.want
			if d.Outcome != w.outcome || d.Code != w.code || d.Tier != w.tier || d.Configured != w.configured ||
				d.Escalated != w.escalated || d.Notice != w.notice {
				t.Errorf("got outcome=%s code=%q tier=%s configured=%s escalated=%v notice=%v (rule %q: %s)\nwant outcome=%s code=%q tier=%s configured=%s escalated=%v notice=%v",
					d.Outcome, d.Code, d.Tier, d.Configured, d.Escalated, d.Notice, d.Rule, d.Reason,
					w.outcome, w.code, w.tier, w.configured, w.escalated, w.notice)
			}
			if w.rule != "" && d.Rule != w.rule {
				t.Errorf("rule = %q, want %q", d.Rule, w.rule)
			}
			if d.Rule == "" {
				t.Errorf("rule is empty")
			}
			if d.Reason == "" || !strings.Contains(d.Reason, w.reason) {
				t.Errorf("reason = %q, want it to contain %q", d.Reason, w.reason)
			}
			if d.Code == CodeUnknownOperation {
				if d.Match.Endpoint != nil || d.Match.Connection != nil {
					t.Errorf("unknown_operation carries a match: %+v", d.Match)
				}
			} else if d.Match.Endpoint == nil {
				t.Errorf("decision has no match")
			}
		})
	}
}

func TestDefaultChoice(t *testing.T) {
	tests := []struct {
		name   string
		origin countersign.Origin
		want   countersign.Choice
	}{
		{name: "keys created by an operator start on refuse", origin: countersign.OriginOperator, want: countersign.Refuse},
		{name: "users created for chat and coding agents start on ask_person", origin: countersign.OriginChat, want: countersign.AskPerson},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countersign.DefaultChoice(tt.origin); got != tt.want {
				t.Errorf("DefaultChoice(%s) = %s, want %s", tt.origin, got, tt.want)
			}
		})
	}
}

func TestDecideWithoutNewPolicy(t *testing.T) {
	// Decide explains itself even for a hand-built match (no precomputed text).
	conn := &Connection{Name: "x"}
	ep := &Endpoint{Method: "DELETE", Path: "/a/{id}", Tier: Confirm, Escalate: []Threshold{
		{Source: SourceQuery, Path: []string{"n"}, Above: 1, Escalate: Never}}}
	c := withQuery(call("x", "DELETE", "/a/1", IntentWrite), "n=2")
	d := Decide(Match{Connection: conn, Endpoint: ep}, true, Input{Call: &c, Credential: askPerson})
	if d.Code != CodeBlocked || !d.Escalated || d.Reason != "escalated to never: query.n 2 is above 1" || d.Rule != "query.n" {
		t.Fatalf("got %+v", d)
	}
	c.Query = nil
	d = Decide(Match{Connection: conn, Endpoint: ep}, true, Input{Call: &c, Credential: askPerson})
	if d.Outcome != Pause || d.Rule != "choice ask_person" || !strings.Contains(d.Reason, "DELETE /a/{id} requires confirmation") {
		t.Fatalf("got %+v", d)
	}
}

// TestThresholdUnicodeFolding: keys match as encoding/json matches struct
// fields (strings.EqualFold), so the long s (U+017F) reads as s and the
// Kelvin sign (U+212A) as k.
func TestThresholdUnicodeFolding(t *testing.T) {
	conn := &Connection{Name: "x"}
	ep := &Endpoint{Method: "POST", Path: "/tasks", Tier: Auto, Escalate: []Threshold{
		{Source: SourceBody, Path: []string{"tasks"}, Above: 10, Escalate: Review},
		{Source: SourceQuery, Path: []string{"kind"}, Above: 10, Escalate: Review},
	}}
	tests := []struct {
		name string
		call Call
	}{
		{name: "body key with a long s", call: withBody(call("x", "POST", "/tasks", IntentWrite), `{"tasks": 1, "ta\u017fks": 99}`)},
		{name: "form key with a long s", call: withForm(call("x", "POST", "/tasks", IntentWrite), "ta%C5%BFks=99")},
		{name: "query name with the Kelvin sign", call: withQuery(call("x", "POST", "/tasks", IntentWrite), "%E2%84%AAind=99")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			d := Decide(Match{Connection: conn, Endpoint: ep}, true, Input{Call: &c, Credential: runAlways})
			if d.Code != CodeReviewRequired || !d.Escalated || !strings.Contains(d.Reason, "99 is above 10") {
				t.Errorf("got %s %s: %s", d.Outcome, d.Code, d.Reason)
			}
		})
	}
}

func TestDecideAllocations(t *testing.T) {
	p := testPolicy(t)
	get := call("crm", "GET", "/contacts/12", IntentRead)
	del := call("crm", "DELETE", "/contacts/12", IntentWrite)
	ro := readOnly(countersign.AskPerson)
	jsonUnder := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 5, "Amount": 7, "lines": [{"AMOUNT": 1}]}`)
	formUnder := withForm(call("crm", "POST", "/transfers", IntentWrite), "amount=5&Amount=7&lines[0][x]=1")
	noThreshold := unreadable(call("crm", "POST", "/contacts", IntentWrite), "it has no Content-Type")
	tests := []struct {
		name string
		in   Input
	}{
		{name: "auto GET", in: Input{Call: &get, Credential: refuse}},
		{name: "confirm DELETE pauses", in: Input{Call: &del, Credential: askPerson}},
		{name: "confirm DELETE refused", in: Input{Call: &del, Credential: refuse}},
		{name: "read-only write", in: Input{Call: &del, Credential: ro}},
		{name: "hook ask without a reason", in: Input{Call: &get, Credential: askPerson, Hook: HookAnswer{Decision: HookAsk}}},
		{name: "JSON body under its thresholds, case variants read", in: Input{Call: &jsonUnder, Credential: askPerson}},
		{name: "form body under its threshold", in: Input{Call: &formUnder, Credential: runAlways}},
		{name: "unreadable body where no threshold reads it", in: Input{Call: &noThreshold, Credential: refuse}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { Evaluate(p, tt.in) }); n != 0 {
				t.Errorf("Evaluate allocates %v times, want 0", n)
			}
		})
	}
}

// TestPeopleRulesOverrideTheChoice: where a quorum or four eyes is the
// endpoint's rule, ask_agent and run_without_asking pause for the people
// as ask_person does (RulePeople); refuse still refuses; an endpoint's
// "required": 1 lifts a connection's quorum, and the choice applies again.
func TestPeopleRulesOverrideTheChoice(t *testing.T) {
	yes := true
	pay := &Connection{Name: "pay", Required: 2, Endpoints: []*Endpoint{
		{Method: "POST", Path: "/payouts", Tier: Confirm},
		{Method: "POST", Path: "/refunds", Tier: Confirm, Required: 1},
		{Method: "GET", Path: "/payouts", Tier: Auto},
	}}
	crm := &Connection{Name: "crm", Endpoints: []*Endpoint{
		{Method: "DELETE", Path: "/contacts/{id}", Tier: Confirm, SeparateApprover: &yes},
		{Method: "PATCH", Path: "/contacts/{id}", Tier: Confirm},
	}}
	p, err := NewPolicy([]*Connection{pay, crm})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		call    Call
		cred    *Credential
		outcome Outcome
		rule    string
		reason  string
	}{
		{"quorum, run_without_asking", call("pay", "POST", "/payouts", IntentWrite), runAlways, Pause, RulePeople, "POST /payouts requires the approval of 2 people (approval.required)"},
		{"quorum, ask_agent", call("pay", "POST", "/payouts", IntentWrite), askAgent, Pause, RulePeople, "requires the approval of 2 people"},
		{"quorum, ask_person", call("pay", "POST", "/payouts", IntentWrite), askPerson, Pause, "choice ask_person", "waiting for a person"},
		{"quorum, refuse", call("pay", "POST", "/payouts", IntentWrite), refuse, Deny, "choice refuse", "choice is refuse"},
		{"quorum lifted by the endpoint", call("pay", "POST", "/refunds", IntentWrite), runAlways, Execute, "choice run_without_asking", "run_without_asking"},
		{"auto stays auto", call("pay", "GET", "/payouts", IntentRead), runAlways, Execute, "", "auto tier"},
		{"four eyes, run_without_asking", call("crm", "DELETE", "/contacts/1", IntentWrite), runAlways, Pause, RulePeople, "a person other than the caller (approval.separate_approver)"},
		{"no rule, run_without_asking", call("crm", "PATCH", "/contacts/1", IntentWrite), runAlways, Execute, "choice run_without_asking", "run_without_asking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.call
			d := Evaluate(p, Input{Call: &c, Credential: tc.cred})
			if d.Outcome != tc.outcome || tc.rule != "" && d.Rule != tc.rule || !strings.Contains(d.Reason, tc.reason) || d.Notice {
				t.Fatalf("got %s rule %q reason %q notice %v; want %s rule %q reason with %q", d.Outcome, d.Rule, d.Reason, d.Notice, tc.outcome, tc.rule, tc.reason)
			}
		})
	}
}
