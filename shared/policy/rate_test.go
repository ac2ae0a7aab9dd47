package policy

import (
	"strings"
	"testing"
)

func ratePolicy(tb testing.TB) *Set {
	tb.Helper()
	p, err := NewPolicy([]*Connection{{Name: "crm", Endpoints: []*Endpoint{
		{Method: "DELETE", Path: "/contacts/{id}", Tier: Confirm, Rates: []Rate{
			{Calls: 20, PerSeconds: 600, Escalate: Review, Rule: "endpoints[0].escalate[0]"},
			{Calls: 100, PerSeconds: 3600, Escalate: Never, Rule: "escalate[0]"},
		}},
		{Method: "GET", Path: "/contacts/{id}", Tier: Auto, Rates: []Rate{{Calls: 3, PerSeconds: 60, Escalate: Review}}},
		{Method: "POST", Path: "/payments", Tier: Confirm,
			Escalate: []Threshold{{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 10, Escalate: Never}},
			Rates:    []Rate{{Calls: 1, PerSeconds: 60, Escalate: Review, Rule: "payments rate"}}},
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestRateEscalates: the call past a rate's calls in its window is
// escalated (denied, the rule named); the count the pipeline passes in is
// all the decision reads; the stricter of a rate and a threshold decides.
func TestRateEscalates(t *testing.T) {
	p := ratePolicy(t)
	del := call("crm", "DELETE", "/contacts/12", IntentWrite)
	get := call("crm", "GET", "/contacts/12", IntentRead)
	big := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 99}`)
	small := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 1}`)
	tests := []struct {
		name    string
		call    *Call
		counts  []int64
		outcome Outcome
		code    Code
		rule    string
	}{
		{"no count passed: nothing to escalate", &del, nil, Pause, CodeNone, ""},
		{"the 20th call pauses", &del, []int64{20, 20}, Pause, CodeNone, ""},
		{"the 21st call is escalated to review", &del, []int64{21, 21}, Deny, CodeReviewRequired, "endpoints[0].escalate[0]"},
		{"the hourly rule to never wins over review", &del, []int64{21, 101}, Deny, CodeBlocked, "escalate[0]"},
		{"an auto read past its rate", &get, []int64{4}, Deny, CodeReviewRequired, "rate 3 calls per 60 s"},
		{"an auto read within its rate", &get, []int64{3}, Execute, CodeNone, ""},
		{"a threshold to never beats a rate to review", &big, []int64{2}, Deny, CodeBlocked, ""},
		{"a rate past its calls, the threshold not", &small, []int64{2}, Deny, CodeReviewRequired, "payments rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Evaluate(p, Input{Call: tt.call, Credential: askPerson, Counts: tt.counts})
			if d.Outcome != tt.outcome || d.Code != tt.code {
				t.Fatalf("got %s %s (%s), want %s %s", d.Outcome, d.Code, d.Reason, tt.outcome, tt.code)
			}
			if tt.outcome == Deny && !d.Escalated {
				t.Errorf("not marked escalated: %+v", d)
			}
			if tt.rule != "" && d.Rule != tt.rule {
				t.Errorf("rule %q, want %q", d.Rule, tt.rule)
			}
			if tt.rule != "" && !strings.Contains(d.Reason, "more than") {
				t.Errorf("reason %q does not say the rate", d.Reason)
			}
		})
	}
}

// TestRateDoesNotAllocate: a call under its rates decides without
// allocating, as every other decision that does not escalate.
func TestRateDoesNotAllocate(t *testing.T) {
	p := ratePolicy(t)
	del := call("crm", "DELETE", "/contacts/12", IntentWrite)
	counts := []int64{5, 5}
	in := Input{Call: &del, Credential: askPerson, Counts: counts}
	if n := testing.AllocsPerRun(100, func() { Evaluate(p, in) }); n != 0 {
		t.Errorf("Evaluate allocates %v times, want 0", n)
	}
	in.Counts = []int64{21, 21}
	if n := testing.AllocsPerRun(100, func() { Evaluate(p, in) }); n != 0 {
		t.Errorf("an escalation by rate allocates %v times, want 0 (its reason is precomputed)", n)
	}
}

// TestRateRulesChecked: NewPolicy refuses a rate that cannot be counted.
func TestRateRulesChecked(t *testing.T) {
	for _, r := range []Rate{
		{Calls: 0, PerSeconds: 60, Escalate: Review},
		{Calls: 5, PerSeconds: 0, Escalate: Review},
		{Calls: 5, PerSeconds: MaxRatePerSeconds + 1, Escalate: Review},
		{Calls: 5, PerSeconds: 60, Escalate: Confirm},
	} {
		if _, err := NewPolicy([]*Connection{{Name: "c", Endpoints: []*Endpoint{{Method: "GET", Path: "/x", Rates: []Rate{r}}}}}); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
}
