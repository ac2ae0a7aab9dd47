package policy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/countersign/countersign"
)

// benchPolicy generates a 100-endpoint policy: 4 connections of 25
// endpoints, five methods, literal and parameter templates mixed, a
// threshold on every POST.
func benchPolicy(tb testing.TB) *Set {
	tb.Helper()
	var conns []*Connection
	n := 0
	for c := 0; c < 4; c++ {
		conn := &Connection{Name: fmt.Sprintf("conn%d", c), EscalateDelegated: c%2 == 0}
		for r := 0; r < 5; r++ {
			res := fmt.Sprintf("/v1/resource%d", r)
			add := func(method, path string, t Tier, esc ...Threshold) {
				conn.Endpoints = append(conn.Endpoints, &Endpoint{Method: method, Path: path, Tier: t, Escalate: esc})
				n++
			}
			add("GET", res+"/{id}", Auto)
			add("GET", res+"/search", Auto)
			amount := []Threshold{{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 10000, Escalate: Review}}
			if c == 0 {
				// Two levels on one field, as on POST /payments in bench/.
				amount = append(amount, Threshold{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 1000000, Escalate: Never})
			}
			add("POST", res, Confirm, amount...)
			add("DELETE", res+"/{id}", Confirm)
			add("PATCH", res+"/{id}/items/{item}", [...]Tier{Auto, Confirm, Review, Never}[r%4])
		}
		conns = append(conns, conn)
	}
	if n != 100 {
		tb.Fatalf("generated %d endpoints, want 100", n)
	}
	p, err := NewPolicy(conns)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func BenchmarkEvaluate(b *testing.B) {
	p := benchPolicy(b)
	var body any
	if err := json.Unmarshal([]byte(`{"amount": 20000, "currency": "EUR"}`), &body); err != nil {
		b.Fatal(err)
	}
	var small any
	if err := json.Unmarshal([]byte(`{"amount": 500, "currency": "EUR"}`), &small); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name    string
		call    Call
		cred    *Credential
		outcome Outcome
		code    Code
	}{
		{name: "auto_GET", call: Call{Connection: "conn3", Method: "GET", Path: "/v1/resource4/12345", Intent: IntentRead},
			cred: &Credential{ID: "k", Choice: countersign.Refuse}, outcome: Execute},
		{name: "confirm_DELETE_pause", call: Call{Connection: "conn2", Method: "DELETE", Path: "/v1/resource3/12345", Intent: IntentWrite},
			cred: &Credential{ID: "k", Choice: countersign.AskPerson, Connections: []string{"conn1", "conn2"}}, outcome: Pause},
		{name: "threshold_escalation", call: Call{Connection: "conn1", Method: "POST", Path: "/v1/resource2", Intent: IntentWrite, Body: body},
			cred: &Credential{ID: "k", Choice: countersign.AskPerson}, outcome: Deny, code: CodeReviewRequired},
		{name: "threshold_two_levels", call: Call{Connection: "conn0", Method: "POST", Path: "/v1/resource2", Intent: IntentWrite, Body: body},
			cred: &Credential{ID: "k", Choice: countersign.AskPerson}, outcome: Deny, code: CodeReviewRequired},
		{name: "threshold_two_levels_below", call: Call{Connection: "conn0", Method: "POST", Path: "/v1/resource2", Intent: IntentWrite, Body: small},
			cred: &Credential{ID: "k", Choice: countersign.AskPerson}, outcome: Pause},
	}
	for _, bc := range cases {
		in := Input{Call: &bc.call, Credential: bc.cred}
		if d := Evaluate(p, in); d.Outcome != bc.outcome || d.Code != bc.code {
			b.Fatalf("%s: got %s %s (%s), want %s %s", bc.name, d.Outcome, d.Code, d.Reason, bc.outcome, bc.code)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Evaluate(p, in)
			}
		})
	}
}
