package confirm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/workflow"
)

func TestEffective(t *testing.T) {
	exp := t0.Add(10 * time.Minute)
	redeemBy := t0.Add(20 * time.Minute)
	tests := []struct {
		name string
		c    countersign.Confirmation
		now  time.Time
		want countersign.Status
	}{
		{"pending before expiry", countersign.Confirmation{Status: countersign.StatusPending, ExpiresAt: exp}, exp.Add(-time.Nanosecond), countersign.StatusPending},
		{"pending exactly at expiry", countersign.Confirmation{Status: countersign.StatusPending, ExpiresAt: exp}, exp, countersign.StatusExpired},
		{"pending past expiry", countersign.Confirmation{Status: countersign.StatusPending, ExpiresAt: exp}, exp.Add(time.Hour), countersign.StatusExpired},
		{"approved before redeem_by", countersign.Confirmation{Status: countersign.StatusApproved, ExpiresAt: exp, RedeemBy: &redeemBy}, redeemBy.Add(-time.Nanosecond), countersign.StatusApproved},
		{"approved exactly at redeem_by", countersign.Confirmation{Status: countersign.StatusApproved, ExpiresAt: exp, RedeemBy: &redeemBy}, redeemBy, countersign.StatusExpired},
		{"approved past redeem_by", countersign.Confirmation{Status: countersign.StatusApproved, ExpiresAt: exp, RedeemBy: &redeemBy}, redeemBy.Add(time.Hour), countersign.StatusExpired},
		{"approved past expires_at but within redeem_by", countersign.Confirmation{Status: countersign.StatusApproved, ExpiresAt: exp, RedeemBy: &redeemBy}, exp.Add(time.Minute), countersign.StatusApproved},
		{"approved batch without redeem_by never expires by the clock", countersign.Confirmation{Status: countersign.StatusApproved, ExpiresAt: exp}, exp.Add(24 * time.Hour), countersign.StatusApproved},
		{"rejected stays rejected", countersign.Confirmation{Status: countersign.StatusRejected, ExpiresAt: exp}, exp.Add(time.Hour), countersign.StatusRejected},
		{"redeemed stays redeemed past redeem_by", countersign.Confirmation{Status: countersign.StatusRedeemed, ExpiresAt: exp, RedeemBy: &redeemBy}, redeemBy.Add(time.Hour), countersign.StatusRedeemed},
		{"executed stays executed", countersign.Confirmation{Status: countersign.StatusExecuted, ExpiresAt: exp}, exp.Add(time.Hour), countersign.StatusExecuted},
		{"expired stays expired", countersign.Confirmation{Status: countersign.StatusExpired, ExpiresAt: exp}, t0, countersign.StatusExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := confirm.Effective(&tt.c, tt.now); got != tt.want {
				t.Errorf("Effective = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestNewID: ids are cf_ and 26 lower-case base32 characters, never
// repeated; those made in the same millisecond share their first nine
// characters (the time: what keeps a group commit's pauses on shared leaf
// pages of the store's trees) and differ after them (80 random bits), and
// an id made later has another prefix.
func TestNewID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[string]bool{}
		first := confirm.NewID()
		for range 100 {
			id := confirm.NewID()
			if !strings.HasPrefix(id, "cf_") || len(id) != len("cf_")+26 || strings.ToLower(id) != id {
				t.Fatalf("NewID() = %q, want cf_ and 26 lower-case base32 characters", id)
			}
			if seen[id] {
				t.Fatalf("NewID() repeated %q", id)
			}
			seen[id] = true
			if id[:3+9] != first[:3+9] {
				t.Errorf("ids of one millisecond %q and %q do not share their time", first, id)
			}
			if id[3+10:] == first[3+10:] {
				t.Errorf("ids %q and %q share their random part", first, id)
			}
		}
		time.Sleep(time.Hour)
		if later := confirm.NewID(); later[:3+9] == first[:3+9] {
			t.Errorf("an id an hour later %q has the prefix of %q", later, first)
		}
	})
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name        string
		kind        countersign.Kind
		ops         int
		wantMachine workflow.Machine
		wantWait    time.Duration
	}{
		{"call", countersign.KindCall, 1, workflow.Confirm, 600 * time.Second},
		{"script", countersign.KindScript, 3, workflow.Batch, 1800 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ops := make([]countersign.Operation, tt.ops)
			for i := range ops {
				ops[i] = deleteOp(t, "chat-user", string(rune('1'+i)))
			}
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: tt.kind, Credential: "chat-user", Reason: "why", Operations: ops})
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			stored := e.get(t, c.ID)
			want := &countersign.Confirmation{
				ID: "cf_testa", Kind: tt.kind, Credential: "chat-user", Status: countersign.StatusPending, Reason: "why",
				CreatedAt: t0, ExpiresAt: t0.Add(tt.wantWait), Operations: ops, Version: 1, Required: 1,
				TTL: t0.Add(tt.wantWait + 600*time.Second + 24*time.Hour).Unix(),
			}
			if stored.WriteID == "" {
				t.Error("the record has no write tag")
			}
			want.WriteID = stored.WriteID // random
			if diff := cmp.Diff(want, stored); diff != "" {
				t.Errorf("stored record (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("returned record (-want +got):\n%s", diff)
			}
			starts := e.wf.started()
			if len(starts) != 1 {
				t.Fatalf("workflow started %d times, want 1", len(starts))
			}
			if starts[0].Machine != tt.wantMachine || starts[0].Name != c.ID {
				t.Errorf("started %s %q, want %s %q", starts[0].Machine, starts[0].Name, tt.wantMachine, c.ID)
			}
			var in map[string]any
			if err := json.Unmarshal(starts[0].Input, &in); err != nil {
				t.Fatalf("workflow input %s: %v", starts[0].Input, err)
			}
			wantIn := map[string]any{"confirmation_id": c.ID, "timeout_seconds": tt.wantWait.Seconds()}
			if diff := cmp.Diff(wantIn, in); diff != "" {
				t.Errorf("workflow input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateShortenedTimeouts(t *testing.T) {
	e := newEnv(t)
	e.svc.Timeouts = confirm.Timeouts{Call: 2 * time.Second, Redeem: 3 * time.Second}
	c := e.createCall(t)
	if want := t0.Add(2 * time.Second); !c.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %s, want %s", c.ExpiresAt, want)
	}
	if want := t0.Add(5*time.Second + 24*time.Hour).Unix(); c.TTL != want {
		t.Errorf("TTL = %d, want %d", c.TTL, want)
	}
	if got := string(e.wf.started()[0].Input); !strings.Contains(got, `"timeout_seconds":2`) {
		t.Errorf("workflow input %s, want timeout_seconds 2", got)
	}
}

func TestCreateErrors(t *testing.T) {
	t.Run("no operations", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user"}); err == nil {
			t.Fatal("Create without operations: err = nil")
		}
		if n := len(e.wf.started()); n != 0 {
			t.Errorf("workflow started %d times", n)
		}
	})
	t.Run("workflow does not start", func(t *testing.T) {
		e := newEnv(t)
		e.wf.startErr = errBoom
		c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user",
			Operations: []countersign.Operation{deleteOp(t, "chat-user", "12")}})
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("Create = %v, %v; want the start error", c, err)
		}
		stored := e.get(t, "cf_testa")
		if stored.Status != countersign.StatusFailed {
			t.Errorf("stored status %s, want failed (nobody can be asked)", stored.Status)
		}
		// Nothing can approve it afterwards.
		if _, ok, err := e.svc.AttachToken(e.ctx, "cf_testa", "tok:cf_testa"); err != nil || ok {
			t.Errorf("AttachToken on a failed record = ok %v, err %v; want ok false", ok, err)
		}
		_, err = e.svc.Answer(e.ctx, "cf_testa", confirm.Answer{Approve: true, Approver: "ops"})
		wantCode(t, err, fault.ConfirmationDecided)
	})
}
