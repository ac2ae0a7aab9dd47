package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

// TestExplainAgreesWithDecide: over every combination of operation,
// credential, intent, hook answer, delegation and body, Explain decides
// exactly as Decide does, and its checks name one rule Decided (the
// decision's Rule), none NotReached before it, and only NotReached after.
func TestExplainAgreesWithDecide(t *testing.T) {
	p := testPolicy(t)
	ops := [][2]string{
		{"GET", "/contacts/12"}, {"POST", "/contacts"}, {"DELETE", "/contacts/12"}, {"POST", "/payments"},
		{"POST", "/transfers"}, {"GET", "/reports"}, {"DELETE", "/batches/500"}, {"DELETE", "/batches/5"},
		{"POST", "/accounts/7/close"}, {"DELETE", "/accounts/7"}, {"POST", "/contacts/12/archive"},
		{"POST", "/admin/reindex"}, {"POST", "/admin/purge"}, {"GET", "/export"}, {"GET", "/nowhere"},
	}
	creds := []*Credential{refuse, askPerson, askAgent, runAlways, crmOnly, readOnly(countersign.AskPerson), {ID: "bad", Choice: countersign.Choice(9)}}
	hooks := []HookAnswer{{}, {Decision: HookAllow}, {Decision: HookAsk}, {Decision: HookAsk, Reason: "after hours"}, {Decision: HookDeny}}
	bodies := []string{"", `{"amount": 5}`, `{"amount": 20000}`, `{"amount": 2000000, "lines": [{"amount": 9000}]}`, `{"amount": "lots"}`}
	n := 0
	for _, conn := range []string{"crm", "billing", "nowhere"} {
		for _, op := range ops {
			for _, intent := range []Intent{IntentRead, IntentWrite, IntentConfirmedWrite} {
				for _, body := range bodies {
					c := call(conn, op[0], op[1], intent)
					if body != "" {
						c = withBody(c, body)
					}
					for _, del := range []bool{false, true} {
						c.Delegated = del
						for _, cred := range creds {
							for _, h := range hooks {
								in := Input{Call: &c, Credential: cred, Hook: h}
								name := fmt.Sprintf("%s %s %s %s body=%q delegated=%v %s hook=%s", conn, op[0], op[1], intent, body, del, cred.ID, h.Decision)
								checkExplain(t, name, p, in)
								n++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d inputs", n)
}

// TestExplainPeople: a quorum overrides run_without_asking, and Explain
// says so: the choice passed, the approval rules decided.
func TestExplainPeople(t *testing.T) {
	pay := &Connection{Name: "pay", Required: 2, Endpoints: []*Endpoint{{Method: "POST", Path: "/payouts", Tier: Confirm}}}
	p, err := NewPolicy([]*Connection{pay})
	if err != nil {
		t.Fatal(err)
	}
	c := call("pay", "POST", "/payouts", IntentWrite)
	checks := checkExplain(t, "quorum", p, Input{Call: &c, Credential: runAlways})
	wantChecks(t, checks, []Check{
		{"choice run_without_asking", Passed, "the choice would run the call, but the endpoint's approval rules ask people"},
		{RulePeople, Decided, "requires the approval of 2 people"},
	})
}

// TestExplainChecks: what each rule says it found.
func TestExplainChecks(t *testing.T) {
	p := testPolicy(t)
	pay := func(body string) Call { return withBody(call("crm", "POST", "/payments", IntentWrite), body) }
	tests := []struct {
		name string
		call Call
		cred *Credential
		hook HookAnswer
		want []Check // in this order, each Why a substring; others may come between
	}{
		{name: "a threshold under its limit, the choice decides", call: pay(`{"amount": 500}`), cred: askPerson,
			want: []Check{
				{RuleCredentialConnections, Passed, "credential chat-user may use every connection"},
				{"body.amount", Passed, "body.amount is 500, not above 10000"},
				{"body.lines.0.amount", Passed, "body.lines.0.amount is not in the call"},
				{RuleDelegation, Passed, `the call is not delegated ("delegated": false)`},
				{RuleHook, Passed, "connection crm has hooks, and none answered"},
				{RuleReadOnly, Passed, "credential chat-user is not read-only"},
				{RuleIntent, Passed, "the call declares intent write"},
				{"choice ask_person", Decided, "waiting for a person"},
			}},
		{name: "the stricter of two exceeded thresholds decides", call: pay(`{"amount": 2000000}`), cred: askPerson,
			want: []Check{
				{"body.amount", Passed, "body.amount is 2000000, also above 10000, but body.amount escalates to never"},
				{"body.amount", Decided, "body.amount is 2000000: above 1000000"},
				{RuleDelegation, NotReached, "not reached: an escalation threshold decided first"},
				{RuleHook, NotReached, "not reached: an escalation threshold decided first"},
				{RuleReadOnly, NotReached, ""},
				{RuleIntent, NotReached, ""},
				{"choice ask_person", NotReached, ""},
			}},
		{name: "a value that is not a number decides", call: pay(`{"amount": "lots"}`), cred: askPerson,
			want: []Check{{"body.amount", Decided, "body.amount is lots: not a number"}}},
		{name: "an unreadable body decides", call: unreadable(call("crm", "POST", "/payments", IntentWrite), "it is XML"), cred: askPerson,
			want: []Check{{"body.amount", Decided, "the body could not be checked: it is XML"}}},
		{name: "a threshold cannot raise a never endpoint", call: withBody(call("crm", "DELETE", "/accounts/7", IntentWrite), `{"amount": 5}`), cred: runAlways,
			want: []Check{
				{"body.amount", Passed, "cannot raise: the endpoint is already at the never tier"},
				{"choice run_without_asking", Passed, "the choice decides only at the confirm tier; this call is at the never tier"},
			}},
		{name: "delegation decides", call: delegated(call("crm", "DELETE", "/contacts/12", IntentWrite)), cred: askPerson,
			want: []Check{
				{RuleDelegation, Decided, "the call is delegated and connection crm sets delegations.escalateConfirm"},
				{RuleHook, NotReached, "not reached: delegation decided first"},
			}},
		{name: "delegation only turns confirm into review", call: delegated(call("crm", "GET", "/contacts/12", IntentRead)), cred: askPerson,
			want: []Check{
				{RuleDelegation, Passed, "it turns only confirm into review; the endpoint is at the auto tier"},
				{RuleReadOnly, Passed, "GET is not a write"},
				{RuleIntent, Passed, "GET is not a write, so any intent will do"},
			}},
		{name: "no hooks, delegation not set", call: call("billing", "DELETE", "/invoices/1", IntentWrite), cred: askPerson,
			want: []Check{
				{RuleDelegation, Passed, "connection billing does not set delegations.escalateConfirm"},
				{RuleHook, Passed, "connection billing has no hooks"},
			}},
		{name: "the hook denies", call: call("crm", "GET", "/contacts/12", IntentRead), cred: askPerson, hook: HookAnswer{Decision: HookDeny, Reason: "closed"},
			want: []Check{{RuleHook, Decided, "closed"}, {RuleReadOnly, NotReached, "not reached: the hook decided first"}}},
		{name: "the hook asks", call: call("crm", "GET", "/contacts/12", IntentRead), cred: askPerson, hook: HookAnswer{Decision: HookAsk},
			want: []Check{{RuleHook, Passed, "asked for confirmation: the call is at the confirm tier"}, {"choice ask_person", Decided, ""}}},
		{name: "read-only decides before the intent", call: call("crm", "POST", "/contacts", IntentRead), cred: readOnly(countersign.RunWithoutAsking),
			want: []Check{
				{RuleReadOnly, Decided, "credential reader is read-only and POST is a write"},
				{RuleIntent, NotReached, "not reached: the read-only flag decided first"},
				{"choice run_without_asking", NotReached, "not reached: the read-only flag decided first"},
			}},
		{name: "the intent decides", call: call("crm", "POST", "/contacts", IntentRead), cred: runAlways,
			want: []Check{{RuleReadOnly, Passed, "not read-only"}, {RuleIntent, Decided, "the call declares intent read, and POST is a write"}}},
		{name: "a credential limited to other connections", call: call("billing", "GET", "/invoices/1", IntentRead), cred: crmOnly,
			want: []Check{{RuleCredentialConnections, Decided, "billing is not one of credential crm-only's connections (crm)"}}},
		{name: "an unknown endpoint", call: call("crm", "GET", "/nowhere", IntentRead), cred: crmOnly,
			want: []Check{
				{RuleCredentialConnections, Passed, "crm is one of credential crm-only's connections (crm)"},
				{RuleUnknownEndpoint, Decided, "no endpoint for this method and path"},
			}},
		{name: "a path threshold", call: call("crm", "DELETE", "/batches/500", IntentWrite), cred: runAlways,
			want: []Check{{"path.count", Decided, "path.count is 500: above 100"}}},
		{name: "a query threshold", call: withQuery(call("crm", "GET", "/reports", IntentRead), "limit=10&limit=20"), cred: refuse,
			want: []Check{{"query.limit", Passed, "query.limit is 20, not above 1000"}, {crmReportsRule(p), Decided, "auto tier"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := checkExplain(t, tt.name, p, Input{Call: &tt.call, Credential: tt.cred, Hook: tt.hook})
			wantChecks(t, checks, tt.want)
		})
	}
}

func crmReportsRule(p *Set) string {
	m, _ := p.Resolve("crm", "GET", "/reports")
	return m.Endpoint.text.rule
}

// checkExplain runs Explain and Decide on in and holds Explain to Decide.
func checkExplain(tb testing.TB, name string, p *Set, in Input) []Check {
	tb.Helper()
	c := in.Call
	m, ok := p.Resolve(c.Connection, c.Method, c.Path)
	want := Decide(m, ok, in)
	got, checks := Explain(m, ok, in)
	if got != want {
		tb.Fatalf("%s: Explain decided %+v, Decide %+v", name, got, want)
	}
	// Every threshold is read, also those after the one that decided
	// (a stricter one may follow): those may pass after it.
	threshold := map[string]bool{}
	if ok && m.Endpoint != nil {
		for i := range m.Endpoint.Escalate {
			th := &m.Endpoint.Escalate[i]
			threshold[th.Rule] = th.Rule != ""
			threshold[thresholdField(th)] = true
		}
	}
	decided := -1
	for i, ch := range checks {
		if ch.Rule == "" || ch.Why == "" {
			tb.Errorf("%s: check %d has no rule or no why: %+v", name, i, ch)
		}
		switch {
		case ch.Verdict == Decided && decided >= 0:
			tb.Errorf("%s: two rules decided: %q and %q", name, checks[decided].Rule, ch.Rule)
		case ch.Verdict == Decided:
			decided = i
		case ch.Verdict == NotReached && decided < 0:
			tb.Errorf("%s: %q not reached before any rule decided", name, ch.Rule)
		case ch.Verdict == Passed && decided >= 0 && !(threshold[ch.Rule] && threshold[checks[decided].Rule]):
			tb.Errorf("%s: %q passed after %q decided", name, ch.Rule, checks[decided].Rule)
		}
	}
	if decided < 0 || checks[decided].Rule != want.Rule {
		tb.Fatalf("%s: the decision's rule is %q; the checks:\n%s", name, want.Rule, checksText(checks))
	}
	return checks
}

// wantChecks finds each wanted check, in order, in checks.
func wantChecks(tb testing.TB, checks, want []Check) {
	tb.Helper()
	i := 0
	for _, w := range want {
		for i < len(checks) && !(checks[i].Rule == w.Rule && checks[i].Verdict == w.Verdict && strings.Contains(checks[i].Why, w.Why)) {
			i++
		}
		if i == len(checks) {
			tb.Fatalf("no %s %q %q (in this order); the checks:\n%s", w.Verdict, w.Rule, w.Why, checksText(checks))
		}
		i++
	}
}

func checksText(checks []Check) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "  %s [%s]: %s\n", c.Rule, c.Verdict, c.Why)
	}
	return b.String()
}
