package confirm_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

// lifecycle is every (status, event) pair of the lifecycle and what it
// does: "-> status" where it is allowed (the status it leaves the record
// in; the same status where it changes nothing), "-> status until the
// outcomes decide" where the operations' outcomes pick the final status,
// "refused code" where it is refused. A status or an event added to the
// lifecycle fails TestLifecycleTable until its every pair is listed here.
var lifecycle = []struct{ status, event, want string }{
	{"pending", "approve", "-> approved"},
	{"pending", "reject", "-> rejected"},
	{"pending", "time_out", "-> expired"},
	{"pending", "workflow_rejected", "-> rejected"},
	{"pending", "workflow_failed", "-> failed"},
	{"pending", "redeem", "refused confirmation_pending"},
	{"pending", "execute", "refused confirmation_pending"},
	{"pending", "claim", "refused confirmation_pending"},
	{"pending", "finish", "refused confirmation_pending"},
	{"pending", "run_review", "-> redeemed"},
	{"pending", "dismiss_review", "-> rejected"},
	{"pending", "count_approval", "-> pending"},
	{"approved", "approve", "refused confirmation_decided"},
	{"approved", "reject", "refused confirmation_decided"},
	{"approved", "time_out", "-> approved"},
	{"approved", "workflow_rejected", "-> approved"},
	{"approved", "workflow_failed", "-> failed"},
	{"approved", "redeem", "-> redeemed"},
	{"approved", "execute", "-> redeemed"},
	{"approved", "claim", "-> redeemed"},
	{"approved", "finish", "-> approved until the outcomes decide"},
	{"approved", "run_review", "refused confirmation_decided"},
	{"approved", "dismiss_review", "refused confirmation_decided"},
	{"approved", "count_approval", "refused confirmation_decided"},
	{"rejected", "approve", "refused confirmation_decided"},
	{"rejected", "reject", "refused confirmation_decided"},
	{"rejected", "time_out", "-> rejected"},
	{"rejected", "workflow_rejected", "-> rejected"},
	{"rejected", "workflow_failed", "-> rejected"},
	{"rejected", "redeem", "refused confirmation_rejected"},
	{"rejected", "execute", "refused confirmation_rejected"},
	{"rejected", "claim", "refused confirmation_rejected"},
	{"rejected", "finish", "refused confirmation_pending"},
	{"rejected", "run_review", "refused confirmation_decided"},
	{"rejected", "dismiss_review", "refused confirmation_decided"},
	{"rejected", "count_approval", "refused confirmation_decided"},
	{"expired", "approve", "refused confirmation_expired"},
	{"expired", "reject", "refused confirmation_expired"},
	{"expired", "time_out", "-> expired"},
	{"expired", "workflow_rejected", "-> expired"},
	{"expired", "workflow_failed", "-> expired"},
	{"expired", "redeem", "refused confirmation_expired"},
	{"expired", "execute", "refused confirmation_expired"},
	{"expired", "claim", "refused confirmation_expired"},
	{"expired", "finish", "refused confirmation_pending"},
	{"expired", "run_review", "refused confirmation_expired"},
	{"expired", "dismiss_review", "refused confirmation_expired"},
	{"expired", "count_approval", "refused confirmation_expired"},
	{"redeemed", "approve", "refused confirmation_decided"},
	{"redeemed", "reject", "refused confirmation_decided"},
	{"redeemed", "time_out", "-> redeemed"},
	{"redeemed", "workflow_rejected", "-> redeemed"},
	{"redeemed", "workflow_failed", "-> redeemed"},
	{"redeemed", "redeem", "refused confirmation_used"},
	{"redeemed", "execute", "-> redeemed"},
	{"redeemed", "claim", "-> redeemed"},
	{"redeemed", "finish", "-> redeemed until the outcomes decide"},
	{"redeemed", "run_review", "refused confirmation_decided"},
	{"redeemed", "dismiss_review", "refused confirmation_decided"},
	{"redeemed", "count_approval", "refused confirmation_decided"},
	{"executed", "approve", "refused confirmation_decided"},
	{"executed", "reject", "refused confirmation_decided"},
	{"executed", "time_out", "-> executed"},
	{"executed", "workflow_rejected", "-> executed"},
	{"executed", "workflow_failed", "-> executed"},
	{"executed", "redeem", "refused confirmation_used"},
	{"executed", "execute", "-> executed"},
	{"executed", "claim", "refused confirmation_used"},
	{"executed", "finish", "-> executed"},
	{"executed", "run_review", "refused confirmation_decided"},
	{"executed", "dismiss_review", "refused confirmation_decided"},
	{"executed", "count_approval", "refused confirmation_decided"},
	{"partially_executed", "approve", "refused confirmation_decided"},
	{"partially_executed", "reject", "refused confirmation_decided"},
	{"partially_executed", "time_out", "-> partially_executed"},
	{"partially_executed", "workflow_rejected", "-> partially_executed"},
	{"partially_executed", "workflow_failed", "-> partially_executed"},
	{"partially_executed", "redeem", "refused confirmation_used"},
	{"partially_executed", "execute", "-> partially_executed"},
	{"partially_executed", "claim", "refused confirmation_used"},
	{"partially_executed", "finish", "-> partially_executed"},
	{"partially_executed", "run_review", "refused confirmation_decided"},
	{"partially_executed", "dismiss_review", "refused confirmation_decided"},
	{"partially_executed", "count_approval", "refused confirmation_decided"},
	{"failed", "approve", "refused confirmation_decided"},
	{"failed", "reject", "refused confirmation_decided"},
	{"failed", "time_out", "-> failed"},
	{"failed", "workflow_rejected", "-> failed"},
	{"failed", "workflow_failed", "-> failed"},
	{"failed", "redeem", "refused confirmation_used"},
	{"failed", "execute", "-> failed"},
	{"failed", "claim", "refused confirmation_used"},
	{"failed", "finish", "-> failed"},
	{"failed", "run_review", "refused confirmation_decided"},
	{"failed", "dismiss_review", "refused confirmation_decided"},
	{"failed", "count_approval", "refused confirmation_decided"},
}

func TestLifecycleTable(t *testing.T) {
	listed := map[[2]string]bool{}
	for _, tt := range lifecycle {
		key := [2]string{tt.status, tt.event}
		if listed[key] {
			t.Errorf("%s × %s is listed twice", tt.status, tt.event)
		}
		listed[key] = true
	}
	for _, st := range countersign.AllStatuses {
		for _, ev := range confirm.AllEvents {
			if !listed[[2]string{string(st), ev.String()}] {
				t.Errorf("%s × %s is not listed: write down what it does", st, ev)
			}
		}
	}
	if want := len(countersign.AllStatuses) * len(confirm.AllEvents); len(lifecycle) != want {
		t.Errorf("%d pairs listed, want %d (every status × every event)", len(lifecycle), want)
	}
	events := map[string]confirm.Event{}
	for _, ev := range confirm.AllEvents {
		events[ev.String()] = ev
	}
	for _, tt := range lifecycle {
		t.Run(tt.status+"/"+tt.event, func(t *testing.T) {
			ev, ok := events[tt.event]
			if !ok {
				t.Fatalf("no event %q", tt.event)
			}
			got := confirm.Next(countersign.Status(tt.status), ev)
			if got.String() != tt.want {
				t.Fatalf("Next(%s, %s) = %q, want %q", tt.status, tt.event, got, tt.want)
			}
			c := &countersign.Confirmation{ID: "cf_x", Kind: countersign.KindCall, Status: countersign.Status(tt.status), ExpiresAt: t0}
			err := got.Err(c)
			switch {
			case got.Allowed() && err != nil:
				t.Errorf("allowed, but Err = %v", err)
			case !got.Allowed() && fault.CodeOf(err) != got.Refused:
				t.Errorf("refused with %s, but Err = %v", got.Refused, err)
			case !got.Allowed() && fault.ReasonOf(err) == "":
				t.Errorf("refused with %s and no reason", got.Refused)
			}
		})
	}
}

// TestLifecycleUnknown: a pair nobody wrote down moves nothing.
func TestLifecycleUnknown(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status countersign.Status
		event  confirm.Event
	}{
		{"unknown status", "archived", confirm.EventApprove},
		{"no status", "", confirm.EventRedeem},
		{"unknown event", countersign.StatusPending, confirm.Event(200)},
		{"zero event", countersign.StatusApproved, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := confirm.Next(tt.status, tt.event); got.Allowed() || got.Refused != fault.Internal {
				t.Errorf("Next(%q, %s) = %s, want refused internal", tt.status, tt.event, got)
			}
		})
	}
}

// TestLifecycleByTheClock: the table answers for the status the clock
// gives (Effective): a pending record past its expiry is expired, and so
// is an approval past its redemption window.
func TestLifecycleByTheClock(t *testing.T) {
	by := t0.Add(time.Minute)
	pending := &countersign.Confirmation{ID: "cf_p", Kind: countersign.KindCall, Status: countersign.StatusPending, ExpiresAt: t0}
	approved := &countersign.Confirmation{ID: "cf_a", Kind: countersign.KindCall, Status: countersign.StatusApproved, ExpiresAt: t0, RedeemBy: &by}
	for _, tt := range []struct {
		name string
		c    *countersign.Confirmation
		ev   confirm.Event
		now  time.Time
		want string
	}{
		{"pending before expiry", pending, confirm.EventApprove, t0.Add(-time.Second), "-> approved"},
		{"pending at expiry", pending, confirm.EventApprove, t0, "refused confirmation_expired"},
		{"approved within the window", approved, confirm.EventRedeem, by.Add(-time.Second), "-> redeemed"},
		{"approved past the window", approved, confirm.EventRedeem, by, "refused confirmation_expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := confirm.On(tt.c, tt.ev, tt.now).String(); got != tt.want {
				t.Errorf("On = %q, want %q", got, tt.want)
			}
		})
	}
}
