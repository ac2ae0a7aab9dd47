package callbody_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/policy"
)

// payments is the demo configuration's threshold: POST /payments at the
// confirm tier, escalated to review above 10000.
func payments(tb testing.TB) *policy.Set {
	tb.Helper()
	p, err := policy.NewPolicy([]*policy.Connection{{Name: "crm", Endpoints: []*policy.Endpoint{
		{Method: "POST", Path: "/payments", Tier: policy.Confirm, Escalate: []policy.Threshold{
			{Field: "body.amount", Source: policy.SourceBody, Path: []string{"amount"}, Above: 10000, Escalate: policy.Review}}},
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestIssue11Findings replays the threshold bypasses of issue 11 (items 1 to
// 3 of "Why") through Read and the decision: each body the demo CRM read as
// a 99,999 payment ran without asking; now each escalates, or is refused
// with an error the gateway answers 400 with.
func TestIssue11Findings(t *testing.T) {
	pol := payments(t)
	runner := &policy.Credential{ID: "runner", Choice: countersign.RunWithoutAsking}
	tests := []struct {
		name   string
		ct     string
		body   string
		err    error  // Body.Err: the gateway may answer 400
		reason string // the escalation's reason; empty: not escalated
	}{
		{name: "finding 1: a case-variant key", ct: "application/json", body: `{"amount": 5, "Amount": 99999}`, reason: "body.amount 99999 is above 10000"},
		{name: "finding 2: JSON with one extra brace", ct: "application/json", body: `{"amount": 99999}}`, err: callbody.ErrTrailingData, reason: "the body could not be checked"},
		{name: "finding 2: a form-encoded body", ct: "application/x-www-form-urlencoded", body: "amount=99999", reason: "body.amount 99999 is above 10000"},
		{name: "finding 2: curl -d with JSON (form content type)", ct: "application/x-www-form-urlencoded", body: `{"amount":99999}`, reason: "body.amount 99999 is above 10000"},
		{name: "finding 2: JSON sent as text/plain", ct: "text/plain", body: `{"amount":99999}`, reason: "the body could not be checked"},
		{name: "finding 3: duplicate keys, the upstream reading the first", ct: "application/json", body: `{"amount": 99999, "amount": 5}`, err: callbody.ErrDuplicateKey, reason: "the body could not be checked"},
		{name: "finding 3: 1e400 (was a 500 on the pause path)", ct: "application/json", body: `{"amount": 1e400}`, err: callbody.ErrNumber, reason: "the body could not be checked"},
		{name: "finding 5: 2^53 + 1, which the binding could not tell from 2^53", ct: "application/json", body: `{"amount": 9007199254740993}`, err: callbody.ErrNumber, reason: "the body could not be checked"},
		{name: "a payment under the limit still runs", ct: "application/json", body: `{"amount": 5, "Amount": 7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := callbody.Read(tt.ct, []byte(tt.body), nil)
			if tt.err == nil && b.Err != nil || tt.err != nil && !errors.Is(b.Err, tt.err) {
				t.Errorf("Err = %v, want %v", b.Err, tt.err)
			}
			c := policy.Call{Connection: "crm", Method: "POST", Path: "/payments", Intent: policy.IntentWrite}
			b.ApplyTo(&c)
			d := policy.Evaluate(pol, policy.Input{Call: &c, Credential: runner})
			if tt.reason == "" {
				if d.Outcome != policy.Execute || d.Escalated {
					t.Errorf("got %s %s: %s", d.Outcome, d.Code, d.Reason)
				}
				return
			}
			if d.Outcome != policy.Deny || d.Code != policy.CodeReviewRequired || !d.Escalated || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("got %s %s escalated=%v: %s; want review_required saying %q", d.Outcome, d.Code, d.Escalated, d.Reason, tt.reason)
			}
		})
	}
}

// ExampleRead shows how a surface reads a call's body before the decision.
func ExampleRead() {
	b := callbody.Read("Application/JSON; charset=utf-8", []byte(`{"amount": 5, "Amount": 99999}`), nil)
	if b.Err != nil {
		fmt.Println("400:", b.Err) // malformed under a JSON content type
		return
	}
	c := policy.Call{Connection: "crm", Method: "POST", Path: "/payments", Intent: policy.IntentWrite}
	b.ApplyTo(&c) // Body, BodyForm, BodyUnreadable
	fmt.Println(b.Kind, c.Body)
	// Output: json map[Amount:99999 amount:5]
}

// ExampleDecodeStrict shows the /v1/calls envelope refusing a field in the
// wrong case, which encoding/json would take.
func ExampleDecodeStrict() {
	var req struct {
		Connection string `json:"connection"`
		Intent     string `json:"intent"`
	}
	err := callbody.DecodeStrict([]byte(`{"connection": "crm", "Intent": "write"}`), &req, nil)
	fmt.Println(err)
	// Output: $.Intent: field name in the wrong case: "Intent" matches the field "intent" only when case is ignored (at byte 22)
}
