package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// counts: AddCount counts one per call, exactly under racing writers, and
// keys are independent.
func (s *suite) counts(t *testing.T) {
	ctx := context.Background()
	t.Run("CountsOnePerCall", func(t *testing.T) {
		st := s.newStore(t)
		key := "rate:" + uid(t)
		until := s.now().Add(time.Minute)
		for want := int64(1); want <= 3; want++ {
			n, err := st.AddCount(ctx, key, until)
			if err != nil || n != want {
				t.Fatalf("AddCount = %d, %v; want %d", n, err, want)
			}
		}
		if n, err := st.AddCount(ctx, key+"-other", until); err != nil || n != 1 {
			t.Errorf("another key: %d, %v; want 1", n, err)
		}
	})
	t.Run("RacingWritersGetEveryCountOnce", func(t *testing.T) {
		st := s.newStore(t)
		key := "race:" + uid(t)
		got := make([]int64, s.racers)
		errs := race(s.racers, func(i int) error {
			n, err := st.AddCount(ctx, key, s.now().Add(time.Minute))
			got[i] = n
			return err
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got)
		for i, n := range got {
			if n != int64(i+1) {
				t.Fatalf("counts %v: want each of 1..%d once", got, s.racers)
			}
		}
	})
}

func testGrant(id, credential string, now time.Time, calls int) *countersign.ApprovalGrant {
	return &countersign.ApprovalGrant{ID: id, Credential: credential, Connection: "crm", Method: "DELETE", Endpoint: "/contacts/{id}",
		Confirmation: "cf_" + id, GrantedBy: "ops", GrantedByPerson: &countersign.Person{Issuer: "https://idp", Subject: "ada", Email: "ada@example.com"},
		CreatedAt: now.UTC(), ExpiresAt: now.Add(10 * time.Minute).UTC(), MaxCalls: calls, CallsLeft: calls}
}

// approvalGrants: a grant is created once, used by its credential and
// endpoint only, exactly CallsLeft times however many race, never past
// ExpiresAt, listed, and revoked for good.
func (s *suite) approvalGrants(t *testing.T) {
	ctx := context.Background()
	t.Run("CreateUseAndList", func(t *testing.T) {
		st := s.newStore(t)
		cred, now := uid(t), s.now()
		g := testGrant("gr_"+uid(t), cred, now, 2)
		if err := st.CreateApprovalGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		assertErrIs(t, "create again", st.CreateApprovalGrant(ctx, testGrant(g.ID, cred, now, 2)), store.ErrConflict)
		gs, err := st.ApprovalGrantsOf(ctx, cred)
		if err != nil || len(gs) != 1 {
			t.Fatalf("ApprovalGrantsOf = %v, %v", gs, err)
		}
		assertEqual(t, "listed grant", gs[0], g)
		for _, miss := range []struct{ cred, conn, method, ep string }{
			{uid(t), "crm", "DELETE", "/contacts/{id}"}, // another credential
			{cred, "billing", "DELETE", "/contacts/{id}"},
			{cred, "crm", "POST", "/contacts/{id}"},
			{cred, "crm", "DELETE", "/contacts"},
		} {
			_, err := st.UseApprovalGrant(ctx, miss.cred, miss.conn, miss.method, miss.ep, now)
			assertErrIs(t, "use by "+miss.cred+" "+miss.conn+" "+miss.method+" "+miss.ep, err, store.ErrNotFound)
		}
		for left := 1; left >= 0; left-- {
			u, err := st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", now)
			if err != nil || u.ID != g.ID || u.CallsLeft != left {
				t.Fatalf("use: %+v, %v; want %s with %d left", u, err, g.ID, left)
			}
		}
		_, err = st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", now)
		assertErrIs(t, "use when spent", err, store.ErrNotFound)
		p, err := st.ListApprovalGrants(ctx, countersign.ListQuery{Limit: countersign.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for {
			for _, lg := range p.Items {
				if lg.ID == g.ID {
					found = lg.CallsLeft == 0
				}
			}
			if p.Next == "" {
				break
			}
			if p, err = st.ListApprovalGrants(ctx, countersign.ListQuery{Limit: countersign.MaxPageSize, Cursor: p.Next}); err != nil {
				t.Fatal(err)
			}
		}
		if !found {
			t.Errorf("ListApprovalGrants does not list %s with no calls left", g.ID)
		}
		_, err = st.ListApprovalGrants(ctx, countersign.ListQuery{Cursor: "not-a-cursor"})
		assertErrIs(t, "bad cursor", err, store.ErrBadCursor)
	})
	t.Run("NeverPastItsTime", func(t *testing.T) {
		st := s.newStore(t)
		cred, now := uid(t), s.now()
		g := testGrant("gr_"+uid(t), cred, now, 5)
		if err := st.CreateApprovalGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		_, err := st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", g.ExpiresAt)
		assertErrIs(t, "use at its expiry", err, store.ErrNotFound)
		if u, err := st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", g.ExpiresAt.Add(-time.Nanosecond)); err != nil || u.CallsLeft != 4 {
			t.Errorf("use a nanosecond before: %+v, %v", u, err)
		}
	})
	t.Run("TheOneEndingFirstIsUsed", func(t *testing.T) {
		st := s.newStore(t)
		cred, now := uid(t), s.now()
		long, short := testGrant("gr_a"+uid(t), cred, now, 5), testGrant("gr_b"+uid(t), cred, now, 5)
		short.ExpiresAt = now.Add(time.Minute).UTC()
		for _, g := range []*countersign.ApprovalGrant{long, short} {
			if err := st.CreateApprovalGrant(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		if u, err := st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", now); err != nil || u.ID != short.ID {
			t.Errorf("used %+v, %v; want %s", u, err, short.ID)
		}
	})
	t.Run("RacingUsersExactlyTheCalls", func(t *testing.T) {
		st := s.newStore(t)
		cred, now := uid(t), s.now()
		g := testGrant("gr_"+uid(t), cred, now, 3)
		if err := st.CreateApprovalGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		errs := race(s.racers, func(int) error {
			_, err := st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", now)
			return err
		})
		used := 0
		for _, err := range errs {
			switch {
			case err == nil:
				used++
			case !errors.Is(err, store.ErrNotFound):
				t.Fatal(err)
			}
		}
		if used != 3 {
			t.Errorf("%d of %d racing users succeeded, want exactly 3", used, s.racers)
		}
	})
	t.Run("RevokedForGood", func(t *testing.T) {
		st := s.newStore(t)
		cred, now := uid(t), s.now()
		g := testGrant("gr_"+uid(t), cred, now, 3)
		if err := st.CreateApprovalGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		d, err := st.DeleteApprovalGrant(ctx, g.ID)
		if err != nil || d.ID != g.ID || d.Credential != cred {
			t.Fatalf("delete: %+v, %v", d, err)
		}
		_, err = st.UseApprovalGrant(ctx, cred, "crm", "DELETE", "/contacts/{id}", now)
		assertErrIs(t, "use after revocation", err, store.ErrNotFound)
		_, err = st.DeleteApprovalGrant(ctx, g.ID)
		assertErrIs(t, "delete again", err, store.ErrNotFound)
		if gs, err := st.ApprovalGrantsOf(ctx, cred); err != nil || len(gs) != 0 {
			t.Errorf("grants after revocation: %v, %v", gs, err)
		}
	})
}
