package confirm_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/upstream"
)

// trail records what the lifecycle records and announces.
type trail struct {
	mu     sync.Mutex
	recs   []countersign.AuditRecord
	events []notify.Event
}

func (t *trail) Record(_ context.Context, r countersign.AuditRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs = append(t.recs, r)
}

func (t *trail) Notify(ev notify.Event) { _ = t.NotifyWait(context.Background(), ev) }

func (t *trail) NotifyWait(_ context.Context, ev notify.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, ev)
	return nil
}

// seen lists the records as "action outcome" and the events as "type status".
func (t *trail) seen() (recs, events []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.recs {
		recs = append(recs, r.Action+" "+r.Outcome)
	}
	for _, ev := range t.events {
		events = append(events, ev.Type+" "+ev.Status)
	}
	return recs, events
}

// answering is an upstream that answers 204 and counts its calls.
type answering struct {
	mu   sync.Mutex
	keys []string
}

func (u *answering) Send(_ context.Context, _ countersign.Operation, key string) (*upstream.Response, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.keys = append(u.keys, key)
	return &upstream.Response{Status: http.StatusNoContent, Header: http.Header{}}, nil
}

func (u *answering) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.keys)
}

func announcing(tb testing.TB) (*env, *trail) {
	tb.Helper()
	e := newEnv(tb)
	tr := &trail{}
	e.svc.Audit, e.svc.Events, e.svc.SyncEvents = tr, tr, true
	return e, tr
}

// TestTransitionsRecordThemselves: each use case of the lifecycle records
// its transition and announces it, once, whoever called it.
func TestTransitionsRecordThemselves(t *testing.T) {
	t.Run("answer, then redeem", func(t *testing.T) {
		e, tr := announcing(t)
		c := e.createCall(t)
		e.ready(t, c.ID)
		if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		up := &answering{}
		ran, err := e.svc.RedeemCall(e.ctx, confirm.Redemption{ID: c.ID, Credential: "chat-user",
			Bind:     func(approved *countersign.Operation) (string, error) { return approved.Binding, nil },
			Upstream: up, Record: countersign.AuditRecord{Chain: "cred:chat-user", Actor: "chat-user", Tier: "confirm"}})
		if err != nil || ran.Err != nil || ran.Response.Status != http.StatusNoContent || ran.Confirmation.Status != countersign.StatusExecuted {
			t.Fatalf("RedeemCall = %+v, %v", ran, err)
		}
		recs, evs := tr.seen()
		if want := []string{"confirmation.approved approved", "confirmation.redeemed executed"}; !slices.Equal(recs, want) {
			t.Errorf("records %q, want %q", recs, want)
		}
		if want := []string{"confirmation.decided approved", "confirmation.executed executed"}; !slices.Equal(evs, want) {
			t.Errorf("events %q, want %q", evs, want)
		}
		if tr.recs[1].Tier != "confirm" || tr.recs[1].Subject != c.ID || tr.recs[1].Binding != c.Operations[0].Binding {
			t.Errorf("redemption record %+v: want the call's record completed with the confirmation", tr.recs[1])
		}
	})
	t.Run("a refused redemption records nothing and runs nothing", func(t *testing.T) {
		e, tr := announcing(t)
		c := e.createCall(t)
		up := &answering{}
		_, err := e.svc.RedeemCall(e.ctx, confirm.Redemption{ID: c.ID, Credential: "chat-user",
			Bind: func(approved *countersign.Operation) (string, error) { return approved.Binding, nil }, Upstream: up})
		wantCode(t, err, fault.ConfirmationPending)
		if recs, evs := tr.seen(); len(recs)+len(evs) != 0 || up.count() != 0 {
			t.Errorf("records %q, events %q, upstream calls %d", recs, evs, up.count())
		}
	})
	t.Run("the workflow's timer", func(t *testing.T) {
		e, tr := announcing(t)
		c := e.createCall(t)
		e.clock.Advance(10 * time.Minute)
		for range 2 { // the task may run twice
			if _, err := e.svc.Finalize(e.ctx, c.ID, countersign.StatusExpired); err != nil {
				t.Fatal(err)
			}
		}
		recs, evs := tr.seen()
		if !slices.Equal(recs, []string{"confirmation.expired expired"}) || !slices.Equal(evs, []string{"confirmation.expired expired"}) {
			t.Errorf("records %q, events %q; want one expiry of each", recs, evs)
		}
	})
}

// TestConcurrentEndsAnnounceOnce: of runs racing to the same end, exactly
// one records and announces it.
func TestConcurrentEndsAnnounceOnce(t *testing.T) {
	t.Run("gateway executions of a card", func(t *testing.T) {
		e, tr := announcing(t)
		c := e.createCard(t, 3)
		e.ready(t, c.ID)
		if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		up := &answering{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := e.svc.Execute(e.ctx, c.ID, up); err != nil {
					t.Errorf("Execute: %v", err)
				}
			})
		}
		wg.Wait()
		if up.count() != 3 {
			t.Errorf("upstream called %d times, want 3 (each operation once)", up.count())
		}
		recs, evs := tr.seen()
		if n := count(recs, "confirmation.executed"); n != 1 {
			t.Errorf("%d executed records (%q), want 1", n, recs)
		}
		if n := count(evs, "confirmation.executed"); n != 1 {
			t.Errorf("%d executed events (%q), want 1", n, evs)
		}
	})
	t.Run("a script's ends", func(t *testing.T) {
		e, tr := announcing(t)
		c := e.createScript(t, 1)
		e.ready(t, c.ID)
		if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.RunOne(e.ctx, c.ID, 0, &answering{}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := e.svc.EndScript(e.ctx, c.ID, []byte(`1`), nil); err != nil {
					t.Errorf("EndScript: %v", err)
				}
			})
		}
		wg.Wait()
		recs, evs := tr.seen()
		want := []string{"script.paused pending", "confirmation.approved approved", "script.operation 204 No Content", "script.finished executed (204)"}
		if !slices.Equal(recs, want) {
			t.Errorf("records %q, want %q", recs, want)
		}
		if n := count(evs, "confirmation.executed"); n != 1 {
			t.Errorf("%d executed events (%q), want 1", n, evs)
		}
	})
}

func count(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix+" ") {
			n++
		}
	}
	return n
}

// TestQuorumAnnouncesEachCount: a quorum of 3 approved by three people at
// once announces each approval it counts once (1 of 3, 2 of 3, by whom),
// then one decision carrying the full count; the same person approving
// twice at once is counted and announced once.
func TestQuorumAnnouncesEachCount(t *testing.T) {
	people := func(n int) []countersign.Person {
		out := make([]countersign.Person, n)
		for i := range out {
			s := string(rune('a' + i))
			out[i] = countersign.Person{Issuer: "https://idp.example.com", Subject: s, Email: s + "@example.com"}
		}
		return out
	}
	t.Run("three people at once", func(t *testing.T) {
		e, tr := announcing(t)
		if err := e.st.PutCredential(e.ctx, countersign.Credential{ID: "chat-user", Issuer: "https://idp.example.com", Subject: "caller"}); err != nil {
			t.Fatal(err)
		}
		c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Reason: "r",
			Operations: []countersign.Operation{deleteOp(t, "chat-user", "12")}, Required: 3, SeparateApprover: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, c.ID); got.Required != 3 || !got.SeparateApprover {
			t.Fatalf("stored rules: required %d, separate_approver %v; want what the pause asked", got.Required, got.SeparateApprover)
		}
		e.ready(t, c.ID)
		var wg sync.WaitGroup
		for _, p := range people(3) {
			wg.Go(func() {
				if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: &p}); err != nil {
					t.Errorf("%s: %v", p.Email, err)
				}
			})
		}
		wg.Wait()
		// The announcements may arrive in any order (each is sent after its
		// own write); each count is announced once.
		evs := slices.Clone(tr.events)
		slices.SortFunc(evs, func(a, b notify.Event) int {
			return a.Confirmation.Approvals.Received - b.Confirmation.Approvals.Received
		})
		seen := map[string]bool{}
		for i, ev := range evs {
			a := ev.Confirmation.Approvals
			if want := []string{notify.TypeApprovalCounted, notify.TypeApprovalCounted, notify.TypeDecided}; len(evs) != 3 || ev.Type != want[i] {
				_, types := tr.seen()
				t.Fatalf("events %q, want two counts then a decision", types)
			}
			if a == nil || a.Required != 3 || a.Received != i+1 || len(a.By) != i+1 {
				t.Fatalf("event %d (%s) approvals %+v, want %d of 3", i, ev.Type, a, i+1)
			}
			last := a.By[i].Email
			if seen[last] {
				t.Errorf("%s announced twice", last)
			}
			seen[last] = true
		}
		if d := evs[2].Confirmation.DecidedBy; d == nil || d.Email != evs[2].Confirmation.Approvals.By[2].Email {
			t.Errorf("decided by %+v, want the third approver", d)
		}
	})
	t.Run("one person twice at once", func(t *testing.T) {
		e, tr := announcing(t)
		c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Reason: "r",
			Operations: []countersign.Operation{deleteOp(t, "chat-user", "12")}, Required: 2})
		if err != nil {
			t.Fatal(err)
		}
		e.ready(t, c.ID)
		p := people(1)[0]
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for range 4 {
			wg.Go(func() {
				_, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: &p})
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			})
		}
		wg.Wait()
		refused := 0
		for _, err := range errs {
			if fault.CodeOf(err) == fault.Forbidden {
				refused++
			} else if err != nil {
				t.Errorf("unexpected error %v", err)
			}
		}
		_, evs := tr.seen()
		if refused != 3 || !slices.Equal(evs, []string{"confirmation.approval_counted pending"}) || e.get(t, c.ID).Status != countersign.StatusPending {
			t.Errorf("refused %d of 4, events %q, status %s; want 3 refused, one count announced, still pending", refused, evs, e.get(t, c.ID).Status)
		}
	})
}
