package countersign

import (
	"testing"
	"time"
)

func TestStatusValid(t *testing.T) {
	for _, s := range AllStatuses {
		if !s.Valid() {
			t.Errorf("%s is listed and not valid", s)
		}
	}
	for _, s := range []Status{"", "Pending", "pending ", "decided", "executing"} {
		if s.Valid() {
			t.Errorf("%q is valid", s)
		}
	}
}

// TestEveryStatusHasAText: a status added without its words fails here
// (pending has none: it is not decided).
func TestEveryStatusHasAText(t *testing.T) {
	for _, s := range AllStatuses {
		if _, ok := statusTexts[s]; ok == (s == StatusPending) {
			t.Errorf("%s: text listed %v", s, ok)
		}
	}
	if len(statusTexts) != len(AllStatuses)-1 {
		t.Errorf("%d texts for %d decided statuses", len(statusTexts), len(AllStatuses)-1)
	}
}

func TestDecidedText(t *testing.T) {
	decided := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	redeemBy := decided.Add(10 * time.Minute)
	agent := &Confirmation{Kind: KindCall, DecidedAt: &decided}
	waiting := &Confirmation{Kind: KindCall, DecidedAt: &decided, RedeemBy: &redeemBy}
	gateway := &Confirmation{Kind: KindCall, DecidedAt: &decided, GatewayRuns: true}
	script := &Confirmation{Kind: KindScript, DecidedAt: &decided}
	undecided := &Confirmation{Kind: KindCall}
	for _, tc := range []struct {
		name string
		c    *Confirmation
		st   Status
		by   string
		want string
	}{
		{"rejected", agent, StatusRejected, " by ana@example.com", "Rejected by ana@example.com; nothing ran."},
		{"rejected in the card", gateway, StatusRejected, "", "Rejected; nothing ran."},
		{"approved, for the agent", agent, StatusApproved, " by ops", "Approved by ops; waiting for the agent to run it."},
		{"approved, redeem by", waiting, StatusApproved, "", "Approved; the agent can run it until 1 Mar 2026, 10:10:00 UTC (redeem by)."},
		{"approved, the gateway runs it", gateway, StatusApproved, "", "Approved; running."},
		{"approved, a script's batch", script, StatusApproved, "", "Approved; running."},
		{"redeemed", agent, StatusRedeemed, " by ops", "Approved by ops; running."},
		{"executed", gateway, StatusExecuted, "", "Approved and executed."},
		{"partially executed", agent, StatusPartiallyExecuted, "", "Approved; some operations failed."},
		{"failed", agent, StatusFailed, "", "Approved; the operation failed."},
		{"expired after approval", agent, StatusExpired, " by ops", "Approved by ops, but the agent did not run it in time."},
		{"expired after approval in the card", gateway, StatusExpired, "", "Approved, but it was not run in time."},
		{"expired undecided", undecided, StatusExpired, "", "expired"},
		{"pending", undecided, StatusPending, "", "pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.DecidedText(tc.st, tc.by); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecider(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Confirmation
		want string
	}{
		{"nobody yet", Confirmation{}, ""},
		{"a channel", Confirmation{DecidedBy: "console"}, "console"},
		{"a person through a channel", Confirmation{DecidedBy: "console", DecidedByPerson: &Person{Issuer: "https://idp", Subject: "ada", Email: "ada@example.com"}}, "ada@example.com"},
		{"a person without an e-mail", Confirmation{DecidedByPerson: &Person{Issuer: "https://idp", Subject: "ada"}}, "ada at https://idp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Decider(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
