package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/policy"
)

// tierTableDir is shared/policy's decision table fixture as a configuration.
const tierTableDir = "testdata/tiertable"

// tableRow is a row of shared/policy's TestDecide: the call as a /v1/calls
// body, the credential by id, and what the table wants.
type tableRow struct {
	name      string
	cred      string
	call      string
	outcome   policy.Outcome
	code      policy.Code
	tier      policy.Tier
	escalated bool
	notice    bool
}

// tierTable holds the rows of shared/policy/decision_test.go's TestDecide,
// in its order, but for seven: the six whose answer depends on a hook's
// answer (explain consults no hook), and the repeated query parameter (a
// /v1/calls query holds one value per name).
var tierTable = []tableRow{
	// The four tiers.
	{"auto: the default for reads", "ops-key", `{"connection":"crm","method":"GET","path":"/contacts/12","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},
	{"confirm: pauses for ask_person", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"review: denied", "automation", `{"connection":"crm","method":"POST","path":"/accounts/7/close","intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, false, false},
	{"never: blocked", "automation", `{"connection":"crm","method":"DELETE","path":"/accounts/7","intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, false, false},

	// Vocabulary 1: policy.json confirm.
	{"confirm omitted is auto, also for a write", "ops-key", `{"connection":"crm","method":"POST","path":"/contacts","intent":"write"}`, policy.Execute, "", policy.Auto, false, false},
	{"confirm true with refuse", "ops-key", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeRequiresConfirmation, policy.Confirm, false, false},
	{"review regardless of intent write", "chat-user", `{"connection":"crm","method":"POST","path":"/accounts/7/close","intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, false, false},
	{"review regardless of intent confirmed_write", "chat-user", `{"connection":"crm","method":"POST","path":"/accounts/7/close","intent":"confirmed_write","confirmation_id":"cf_x"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, false, false},
	{"never regardless of intent confirmed_write", "chat-user", `{"connection":"crm","method":"DELETE","path":"/accounts/7","intent":"confirmed_write","confirmation_id":"cf_x"}`, policy.Deny, policy.CodeBlocked, policy.Never, false, false},
	{"an operation requiring confirmation is at least confirm", "chat-user", `{"connection":"crm","method":"PATCH","path":"/contacts/12","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},

	// Vocabulary 2: tool exposure.kind.
	{"exposure.kind open is auto", "ops-key", `{"connection":"crm","method":"POST","path":"/contacts/12/tag","intent":"write"}`, policy.Execute, "", policy.Auto, false, false},
	{"requires-confirmation pauses", "chat-user", `{"connection":"crm","method":"POST","path":"/contacts/12/archive","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"requires-confirmation with refuse", "ops-key", `{"connection":"crm","method":"POST","path":"/contacts/12/archive","intent":"write"}`, policy.Deny, policy.CodeRequiresConfirmation, policy.Confirm, false, false},
	{"operator-gated is never for agents", "automation", `{"connection":"crm","method":"POST","path":"/admin/reindex","intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, false, false},
	{"operator-gated and hidden looks unknown", "automation", `{"connection":"crm","method":"POST","path":"/admin/purge","intent":"write"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
	{"llm_callable false hides the tool", "automation", `{"connection":"crm","method":"GET","path":"/export","intent":"read"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},

	// Vocabulary 3: the intent handshake.
	{"POST with intent read", "automation", `{"connection":"crm","method":"POST","path":"/contacts","intent":"read"}`, policy.Deny, policy.CodeWriteIntentRequired, policy.Auto, false, false},
	{"PUT with intent read", "automation", `{"connection":"crm","method":"PUT","path":"/contacts/12","intent":"read"}`, policy.Deny, policy.CodeWriteIntentRequired, policy.Confirm, false, false},
	{"PATCH with intent read", "chat-user", `{"connection":"crm","method":"PATCH","path":"/contacts/12","intent":"read"}`, policy.Deny, policy.CodeWriteIntentRequired, policy.Confirm, false, false},
	{"DELETE with intent read", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"read"}`, policy.Deny, policy.CodeWriteIntentRequired, policy.Confirm, false, false},
	{"handshake step 1: intent write pauses", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"a read may declare read", "ops-key", `{"connection":"crm","method":"GET","path":"/contacts/search","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},
	{"handshake step 3: confirmed_write needs the approval", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"confirmed_write","confirmation_id":"cf_x"}`, policy.Pause, "", policy.Confirm, false, false},
	{"an auto write with confirmed_write", "chat-user", `{"connection":"crm","method":"POST","path":"/contacts","intent":"confirmed_write","confirmation_id":"cf_x"}`, policy.Execute, "", policy.Auto, false, false},

	// Escalation.
	{"body.amount above 10000 escalates to review", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":10001},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"equal to the limit does not escalate", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":10000},"intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"escalation to never is blocked", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":2000000},"intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, true, false},
	{"escalation raises an auto endpoint", "automation", `{"connection":"crm","method":"POST","path":"/transfers","body":{"amount":501.5},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a body number with a fraction", "automation", `{"connection":"crm","method":"POST","path":"/transfers","body":{"amount":600.0},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a whole number body", "automation", `{"connection":"crm","method":"POST","path":"/transfers","body":{"amount":700},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"array index paths", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":1,"lines":[{"amount":9000}]},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a missing field", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"currency":"EUR"},"intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"a null field", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":null},"intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"a number written as a string", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":"10001"},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"not a number fails closed", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":"lots"},"intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, true, false},
	{"NaN fails closed", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":"NaN"},"intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, true, false},
	{"an object fails closed", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":{"value":1}},"intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, true, false},
	{"a query value that is not a number", "ops-key", `{"connection":"crm","method":"GET","path":"/reports","query":{"limit":"all"},"intent":"read"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"query.limit as a number", "ops-key", `{"connection":"crm","method":"GET","path":"/reports","query":{"limit":"5000"},"intent":"read"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a huge query number", "ops-key", `{"connection":"crm","method":"GET","path":"/reports","query":{"limit":"1e400"},"intent":"read"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a query value under the limit", "ops-key", `{"connection":"crm","method":"GET","path":"/reports","query":{"limit":"10"},"intent":"read"}`, policy.Execute, "", policy.Auto, false, false},
	{"path.count", "automation", `{"connection":"crm","method":"DELETE","path":"/batches/500","intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, true, false},
	{"escalation never lowers a never endpoint", "automation", `{"connection":"crm","method":"DELETE","path":"/accounts/7","body":{"amount":5},"intent":"write"}`, policy.Deny, policy.CodeBlocked, policy.Never, false, false},
	{"delegation turns confirm into review", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write","delegated":true}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"delegation applies to requires-confirmation tools", "automation", `{"connection":"crm","method":"POST","path":"/contacts/1/archive","intent":"write","delegated":true}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"a delegated auto call runs", "chat-user", `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read","delegated":true}`, policy.Execute, "", policy.Auto, false, false},
	{"delegation needs escalateConfirm", "chat-user", `{"connection":"billing","method":"DELETE","path":"/invoices/1","intent":"write","delegated":true}`, policy.Pause, "", policy.Confirm, false, false},
	{"an escalated call never pauses", "automation", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":20000},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},
	{"escalation decides before the hook", "chat-user", `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":20000},"intent":"write"}`, policy.Deny, policy.CodeReviewRequired, policy.Review, true, false},

	// The four credential choices.
	{"choice refuse", "ops-key", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeRequiresConfirmation, policy.Confirm, false, false},
	{"choice ask_person", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},
	{"choice ask_agent", "agent", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Execute, "", policy.Confirm, false, true},
	{"choice run_without_asking", "automation", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Execute, "", policy.Confirm, false, false},
	{"choices only matter at the confirm tier", "ops-key", `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},

	// Origin defaults.
	{"an operator's key starts on refuse", "op", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeRequiresConfirmation, policy.Confirm, false, false},
	{"a chat user starts on ask_person", "chat", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Pause, "", policy.Confirm, false, false},

	// Read-only.
	{"read-only refuses a write: refuse", "reader-refuse", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeReadOnly, policy.Confirm, false, false},
	{"read-only refuses a write: ask_person", "reader-ask-person", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeReadOnly, policy.Confirm, false, false},
	{"read-only refuses a write: ask_agent", "reader-ask-agent", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeReadOnly, policy.Confirm, false, false},
	{"read-only refuses a write: run_without_asking", "reader-run", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeReadOnly, policy.Confirm, false, false},
	{"read-only refuses an auto write", "reader-run", `{"connection":"crm","method":"POST","path":"/contacts","intent":"write"}`, policy.Deny, policy.CodeReadOnly, policy.Auto, false, false},
	{"read-only before intent", "reader-run", `{"connection":"crm","method":"POST","path":"/contacts","intent":"read"}`, policy.Deny, policy.CodeReadOnly, policy.Auto, false, false},
	{"read-only still reads", "reader-refuse", `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},

	// Unknown operations and connection limits.
	{"an unlisted path", "automation", `{"connection":"crm","method":"GET","path":"/nowhere","intent":"read"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
	{"a known path with an unlisted method", "automation", `{"connection":"crm","method":"POST","path":"/contacts/12","intent":"write"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
	{"an unknown connection", "automation", `{"connection":"erp","method":"GET","path":"/contacts/1","intent":"read"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
	{"connections limits the credential", "crm-only", `{"connection":"billing","method":"GET","path":"/invoices/1","intent":"read"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
	{"a listed connection works", "crm-only", `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},
	{"connections omitted means all", "chat-user", `{"connection":"billing","method":"GET","path":"/invoices/1","intent":"read"}`, policy.Execute, "", policy.Auto, false, false},
	{"unknown operation before read-only and intent", "reader-refuse", `{"connection":"crm","method":"DELETE","path":"/nowhere","intent":"read"}`, policy.Deny, policy.CodeUnknownOperation, policy.Never, false, false},
}

// TestExplainAgreesWithDecide runs every row through "countersign explain
// --json" and checks its answer against policy.Evaluate on the same
// configuration, and against what the tier table wants.
func TestExplainAgreesWithDecide(t *testing.T) {
	cfg, err := config.Load(tierTableDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]*policy.Credential{}
	for _, c := range cfg.Credentials {
		creds[c.ID] = &policy.Credential{ID: c.ID, Choice: c.Choice, ReadOnly: c.ReadOnly, Connections: c.Connections}
	}
	for _, row := range tierTable {
		t.Run(row.name, func(t *testing.T) {
			r := runCmd(t, "explain", "--config", tierTableDir, "--credential", row.cred, "--json", row.call)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got explanation
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("decode %s: %v", r.stdout, err)
			}

			c := tableCall(t, row.call)
			d := policy.Evaluate(cfg.Policy, policy.Input{Call: &c, Credential: creds[row.cred]})
			if d.Outcome != row.outcome || d.Code != row.code || d.Tier != row.tier || d.Escalated != row.escalated || d.Notice != row.notice {
				t.Fatalf("the configuration does not mirror the tier table: Decide gives %s %q %s escalated=%v notice=%v",
					d.Outcome, d.Code, d.Tier, d.Escalated, d.Notice)
			}
			want := map[string]any{
				"tier": d.Tier.String(), "outcome": outcomeOf(d, c.Intent), "code": string(d.Code), "reason": d.Reason,
				"rule": d.Rule, "escalated": d.Escalated, "configured_tier": d.Configured.String(), "notice": d.Notice,
			}
			have := map[string]any{
				"tier": got.Tier, "outcome": got.Outcome, "code": got.Code, "reason": got.Reason,
				"rule": got.Rule, "escalated": got.Escalated, "configured_tier": got.ConfiguredTier, "notice": got.Notice,
			}
			if diff := cmp.Diff(want, have); diff != "" {
				t.Errorf("explain differs from tier.Decide (-decide +explain):\n%s", diff)
			}
			if got.Rule == "" || got.Reason == "" {
				t.Errorf("rule %q, reason %q: both must be set", got.Rule, got.Reason)
			}
		})
	}
}

// outcomeOf is the pipeline's outcome for a decision: a confirmed_write
// that is not denied redeems its approval.
func outcomeOf(d policy.Decision, intent policy.Intent) string {
	switch {
	case d.Outcome == policy.Deny:
		return "denied"
	case intent == policy.IntentConfirmedWrite, d.Outcome == policy.Execute:
		return "executed"
	}
	return "confirmation_required"
}

// tableCall decodes a row's call independently of the command.
func tableCall(tb testing.TB, body string) policy.Call {
	tb.Helper()
	var r struct {
		Connection, Method, Path string
		Query                    map[string]string
		Body                     any
		Intent                   policy.Intent
		Delegated                bool
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		tb.Fatal(err)
	}
	c := policy.Call{Connection: r.Connection, Method: r.Method, Path: r.Path, Body: r.Body, Intent: r.Intent, Delegated: r.Delegated}
	if r.Query != nil {
		c.Query = url.Values{}
		for k, v := range r.Query {
			c.Query.Set(k, v)
		}
	}
	return c
}

func TestExplainWhyNot(t *testing.T) {
	tests := []struct {
		name string
		cred string
		call string
		want []whyNot // each must be listed
		not  []string // rules that must not be listed
	}{
		{name: "a threshold not exceeded, the credential's choice decides",
			cred: "chat-user", call: `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":500},"intent":"write"}`,
			want: []whyNot{
				{"connections/crm/policy.json endpoints[6].escalate[0] body.amount above 10000: review", "body.amount is 500, not above 10000"},
				{"connections/crm/policy.json endpoints[6].escalate[2] body.lines.0.amount above 5000: review", "body.lines.0.amount is not in the call"},
				{"delegations.escalateConfirm", `the call is not delegated ("delegated": false)`},
				{"hook", hooksNote},
				{"credential read_only", "credential chat-user is not read-only"},
				{"intent", "the call declares intent write"},
			},
			not: []string{"choice ask_person"}},
		{name: "the stricter of two exceeded thresholds decides",
			cred: "chat-user", call: `{"connection":"crm","method":"POST","path":"/payments","body":{"amount":2000000},"intent":"write"}`,
			want: []whyNot{
				{"connections/crm/policy.json endpoints[6].escalate[0] body.amount above 10000: review",
					// The rule is shared/config's text, which writes 1000000 as 1e+06.
					"body.amount is 2000000, also above 10000, but connections/crm/policy.json endpoints[6].escalate[1] body.amount above 1e+06: never escalates to never"},
				{"delegations.escalateConfirm", "not reached: an escalation threshold decided first"},
				{"hook", "not reached: an escalation threshold decided first"},
				{"choice ask_person", "not reached: an escalation threshold decided first"},
			}},
		{name: "delegation not set on the connection",
			cred: "chat-user", call: `{"connection":"billing","method":"DELETE","path":"/invoices/1","intent":"write","delegated":true}`,
			want: []whyNot{
				{"delegations.escalateConfirm", "connection billing does not set delegations.escalateConfirm"},
				{"hook", "connection billing has no hooks"},
			}},
		{name: "delegation only turns confirm into review",
			cred: "chat-user", call: `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read","delegated":true}`,
			want: []whyNot{
				{"delegations.escalateConfirm", "it turns only confirm into review; the endpoint is at the auto tier"},
				{"credential read_only", "GET is not a write"},
				{"intent", "GET is not a write, so any intent will do"},
				{"choice ask_person", "the choice decides only at the confirm tier; this call is at the auto tier"},
			}},
		{name: "a threshold cannot raise a never endpoint",
			cred: "automation", call: `{"connection":"crm","method":"DELETE","path":"/accounts/7","body":{"amount":5},"intent":"write"}`,
			want: []whyNot{
				{"connections/crm/policy.json endpoints[11].escalate[0] body.amount above 1: review", "cannot raise: the endpoint is already at the never tier"},
			}},
		{name: "a query threshold under its limit",
			cred: "ops-key", call: `{"connection":"crm","method":"GET","path":"/reports","query":{"limit":"10"},"intent":"read"}`,
			want: []whyNot{
				{"connections/crm/policy.json endpoints[8].escalate[0] query.limit above 1000: review", "query.limit is 10, not above 1000"},
			}},
		{name: "read-only decides before the intent and the choice",
			cred: "reader-run", call: `{"connection":"crm","method":"POST","path":"/contacts","intent":"read"}`,
			want: []whyNot{
				{"intent", "not reached: the read-only flag decided first"},
				{"choice run_without_asking", "not reached: the read-only flag decided first"},
			},
			not: []string{"credential read_only"}},
		{name: "a credential limited to other connections",
			cred: "crm-only", call: `{"connection":"billing","method":"GET","path":"/invoices/1","intent":"read"}`,
			want: nil, not: []string{"credential connections", "hook", "intent"}},
		{name: "unknown operation lists only the credential's connections",
			cred: "crm-only", call: `{"connection":"crm","method":"GET","path":"/nowhere","intent":"read"}`,
			want: []whyNot{{"credential connections", "crm is one of credential crm-only's connections (crm)"}},
			not:  []string{"hook", "intent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, "explain", "--config", tierTableDir, "--credential", tt.cred, "--json", "--why-not", tt.call)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got explanation
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				found := false
				for _, g := range got.WhyNot {
					if g == w {
						found = true
					}
				}
				if !found {
					t.Errorf("why_not lacks %+v; it has:\n%s", w, whyNotText(got.WhyNot))
				}
			}
			for _, rule := range tt.not {
				for _, g := range got.WhyNot {
					if g.Rule == rule {
						t.Errorf("why_not lists %q, which decided or does not apply: %+v", rule, g)
					}
				}
			}
		})
	}
}

func whyNotText(ws []whyNot) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString("  " + w.Rule + ": " + w.Why + "\n")
	}
	return b.String()
}

func TestExplainText(t *testing.T) {
	callFile := filepath.Join(t.TempDir(), "call.json")
	if err := os.WriteFile(callFile, []byte(`{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		stderr  string
		noWhyNo bool
	}{
		{name: "a pause, the call from @file",
			args: []string{"--config", tierTableDir, "--credential", "chat-user", "@" + callFile},
			stdout: []string{
				"tier:       confirm\n",
				"outcome:    confirmation_required (HTTP 202)\n",
				"code:       -\n",
				"reason:     DELETE /contacts/{id} requires confirmation: waiting for a person to approve it\n",
				"rule:       choice ask_person\n",
				"escalated:  false\n",
				"endpoint:   connections/crm/policy.json endpoints[5] DELETE /contacts/{id} confirm: true\n",
				"credential: chat-user (choice ask_person)\n",
				"hooks:      hooks not consulted",
			},
			noWhyNo: true},
		{name: "an escalation with --why-not",
			args: []string{"--config", tierTableDir, "--credential", "automation", "--why-not",
				`{"connection":"crm","method":"DELETE","path":"/batches/500","intent":"write"}`},
			stdout: []string{
				"tier:       never (configured: confirm)\n",
				"outcome:    denied (HTTP 403)\n",
				"code:       blocked\n",
				"rule:       connections/crm/policy.json endpoints[9].escalate[0] path.count above 100: never\n",
				"escalated:  true\n",
				"why not:\n  credential connections: credential automation may use every connection\n",
			}},
		{name: "unknown operation is 404",
			args:   []string{"--config", tierTableDir, "--credential", "automation", `{"connection":"crm","method":"GET","path":"/secrets","intent":"read"}`},
			stdout: []string{"outcome:    denied (HTTP 404)\n", "code:       unknown_operation\n"}},
		{name: "ask_agent runs with a notice",
			args:   []string{"--config", tierTableDir, "--credential", "agent", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`},
			stdout: []string{"outcome:    executed (HTTP 200)\n", "notice:"}},
		{name: "confirmed_write redeems",
			args:   []string{"--config", tierTableDir, "--credential", "chat-user", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"confirmed_write","confirmation_id":"cf_1"}`},
			stdout: []string{"outcome:    executed (HTTP 200)\n", "redeems:    the approval named by confirmation_id"}},
		{name: "an invalid call is what the gateway answers 400",
			args: []string{"--config", tierTableDir, "--credential", "chat-user", `{"connection":"crm","method":"GET","path":"/a/../b","intent":"read"}`},
			code: exitFail, stderr: "countersign: explain: the gateway answers 400 invalid_request: path must not contain . or .. segments"},
		{name: "a call without intent",
			args: []string{"--config", tierTableDir, "--credential", "chat-user", `{"connection":"crm","method":"GET","path":"/contacts/1"}`},
			code: exitFail, stderr: "intent is required"},
		{name: "a call with an unknown field",
			args: []string{"--config", tierTableDir, "--credential", "chat-user", `{"connection":"crm","method":"GET","path":"/contacts/1","intent":"read","force":true}`},
			code: exitFail, stderr: `unknown field: "force"`},
		{name: "an unknown credential names the known ones",
			args: []string{"--config", tierTableDir, "--credential", "nobody", `{}`},
			code: exitFail, stderr: `no credential "nobody" in testdata/tiertable/credentials.json (known: ops-key, chat-user,`},
		{name: "a missing @file",
			args: []string{"--config", tierTableDir, "--credential", "chat-user", "@/nonexistent/call.json"},
			code: exitFail, stderr: "explain: read CALL: open /nonexistent/call.json"},
		{name: "an invalid configuration prints the server's message",
			args: []string{"--config", "/nonexistent", "--credential", "x", `{}`},
			code: exitFail, stderr: "countersign: /nonexistent/settings.json: missing"},
		{name: "--config is required",
			args: []string{"--credential", "x", `{}`}, code: exitUsage, stderr: "--config DIR is required"},
		{name: "--credential is required",
			args: []string{"--config", tierTableDir, `{}`}, code: exitUsage, stderr: "--credential ID is required"},
		{name: "one CALL",
			args: []string{"--config", tierTableDir, "--credential", "x"}, code: exitUsage, stderr: "explain takes one CALL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append([]string{"explain"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.noWhyNo && strings.Contains(r.stdout, "why not:") {
				t.Errorf("why not listed without --why-not:\n%s", r.stdout)
			}
		})
	}
}
