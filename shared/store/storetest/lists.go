package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// maxPages bounds a listing the suite pages through.
const maxPages = 10000

// listAll pages through a listing with q (its Limit and filters) and
// returns the items whose ID starts with prefix, in store order. Every page
// must hold at most the page size, and a cursor must move the listing on.
func listAll[T any](tb testing.TB, list func(context.Context, countersign.ListQuery) (countersign.Page[T], error), q countersign.ListQuery, prefix string) []T {
	tb.Helper()
	size, err := q.PageSize()
	if err != nil {
		tb.Fatal(err)
	}
	var out []T
	seen := map[string]bool{}
	for range maxPages {
		p, err := list(context.Background(), q)
		if err != nil {
			tb.Fatalf("list %+v: %v", q, err)
		}
		if len(p.Items) > size {
			tb.Fatalf("a page of %d items, the page size is %d", len(p.Items), size)
		}
		for _, it := range p.Items {
			if id := idOf(it); strings.HasPrefix(id, prefix) {
				out = append(out, it)
			}
		}
		if p.Next == "" {
			return out
		}
		if seen[p.Next] {
			tb.Fatalf("the cursor %q came back twice", p.Next)
		}
		seen[p.Next] = true
		q.Cursor = p.Next
	}
	tb.Fatalf("more than %d pages", maxPages)
	return nil
}

func idOf(v any) string {
	switch v := v.(type) {
	case *countersign.Confirmation:
		return v.ID
	case countersign.Credential:
		return v.ID
	case string:
		return v
	}
	panic(fmt.Sprintf("idOf(%T)", v))
}

func ids[T any](items []T, prefix string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, strings.TrimPrefix(idOf(it), prefix))
	}
	return out
}

// listings: every listing pages in its order through cursors, confirmations
// and review items by status and by time in both directions, and a bad
// cursor or page size is refused.
func (s *suite) listings(t *testing.T) {
	ctx := context.Background()

	t.Run("ConfirmationsByStatusAndTime", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		now := s.now()
		for i, name := range []string{"-a", "-b", "-c", "-d"} {
			mustCreateConfirmation(t, st, minimalConfirmation(prefix+name, now.Add(time.Duration(i)*time.Second)))
		}
		for _, name := range []string{"-b", "-d"} {
			c, err := st.GetConfirmation(ctx, prefix+name)
			if err != nil {
				t.Fatal(err)
			}
			c.Status = countersign.StatusApproved
			if err := st.UpdateConfirmation(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		c, err := st.GetConfirmation(ctx, prefix+"-d")
		if err != nil {
			t.Fatal(err)
		}
		c.Status = countersign.StatusExecuted
		if err := st.UpdateConfirmation(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			q    countersign.ListQuery
			want []string
		}{
			{"all", countersign.ListQuery{Limit: 1}, []string{"-a", "-b", "-c", "-d"}},
			{"all newest first", countersign.ListQuery{Limit: 3, Newest: true}, []string{"-d", "-c", "-b", "-a"}},
			{"pending", countersign.ListQuery{Status: countersign.StatusPending, Limit: 1}, []string{"-a", "-c"}},
			{"pending newest first", countersign.ListQuery{Status: countersign.StatusPending, Limit: 2, Newest: true}, []string{"-c", "-a"}},
			{"approved", countersign.ListQuery{Status: countersign.StatusApproved}, []string{"-b"}},
			{"executed", countersign.ListQuery{Status: countersign.StatusExecuted, Limit: 1}, []string{"-d"}},
			{"rejected", countersign.ListQuery{Status: countersign.StatusRejected}, []string{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				assertEqual(t, tc.name, ids(listAll(t, st.ListConfirmations, tc.q, prefix), prefix), tc.want)
			})
		}
	})

	t.Run("ReviewsByStatus", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		for i, name := range []string{"-a", "-b"} {
			r := fullReview(prefix+name, s.now().Add(time.Duration(i)*time.Second))
			r.Status = countersign.StatusPending
			mustCreateConfirmation(t, st, r)
		}
		r, err := st.GetConfirmation(ctx, prefix+"-a")
		if err != nil {
			t.Fatal(err)
		}
		r.Status = countersign.StatusRejected
		if err := st.UpdateConfirmation(ctx, r); err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "pending", ids(listAll(t, st.ListReviews, countersign.ListQuery{Status: countersign.StatusPending}, prefix), prefix), []string{"-b"})
		assertEqual(t, "rejected", ids(listAll(t, st.ListReviews, countersign.ListQuery{Status: countersign.StatusRejected}, prefix), prefix), []string{"-a"})
		assertEqual(t, "confirmations", ids(listAll(t, st.ListConfirmations, countersign.ListQuery{}, prefix), prefix), []string{})
	})

	t.Run("CredentialsInIDOrder", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		for _, name := range []string{"-c", "-a", "-b"} {
			mustPutCredential(t, st, fullCredential(prefix+name, s.now()))
		}
		assertEqual(t, "credentials", ids(listAll(t, st.ListCredentials, countersign.ListQuery{Limit: 2}, prefix), prefix), []string{"-a", "-b", "-c"})
		if err := st.DeleteCredential(ctx, prefix+"-b"); err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "after a delete", ids(listAll(t, st.ListCredentials, countersign.ListQuery{Limit: 1}, prefix), prefix), []string{"-a", "-c"})
	})

	t.Run("BadCursorOrPageSize", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		for _, name := range []string{"-a", "-b"} {
			mustPutCredential(t, st, fullCredential(prefix+name, s.now()))
			mustCreateConfirmation(t, st, minimalConfirmation(prefix+name, s.now()))
		}
		creds, err := st.ListCredentials(ctx, countersign.ListQuery{Limit: 1})
		if err != nil || creds.Next == "" {
			t.Fatalf("ListCredentials: next %q, %v; want a cursor", creds.Next, err)
		}
		confs, err := st.ListConfirmations(ctx, countersign.ListQuery{Limit: 1})
		if err != nil || confs.Next == "" {
			t.Fatalf("ListConfirmations: next %q, %v; want a cursor", confs.Next, err)
		}
		for name, call := range map[string]func() error{
			"garbage": func() error {
				_, err := st.ListConfirmations(ctx, countersign.ListQuery{Cursor: "not a cursor!"})
				return err
			},
			"a credentials cursor for confirmations": func() error {
				_, err := st.ListConfirmations(ctx, countersign.ListQuery{Cursor: creds.Next})
				return err
			},
			"a confirmations cursor for credentials": func() error {
				_, err := st.ListCredentials(ctx, countersign.ListQuery{Cursor: confs.Next})
				return err
			},
			"a confirmations cursor for chains": func() error {
				_, err := st.AuditChains(ctx, countersign.ListQuery{Cursor: confs.Next})
				return err
			},
		} {
			if err := call(); !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("%s: %v, want ErrBadCursor", name, err)
			}
		}
		for _, limit := range []int{-1, countersign.MaxPageSize + 1} {
			if _, err := st.ListConfirmations(ctx, countersign.ListQuery{Limit: limit}); err == nil {
				t.Errorf("page size %d accepted", limit)
			}
		}
	})
}

// quotas: TakeQuota counts exactly, under racing takers too, and frees a
// use when its time passes.
func (s *suite) quotas(t *testing.T) {
	ctx := context.Background()

	t.Run("CountsUpToTheLimitThenRefuses", func(t *testing.T) {
		st := s.newStore(t)
		key := "confirmations:" + uid(t)
		now := s.now().In(zone)
		for i := range 3 {
			if err := st.TakeQuota(ctx, key, 3, now, now.Add(time.Duration(i+1)*time.Minute)); err != nil {
				t.Fatalf("take %d: %v", i, err)
			}
		}
		err := st.TakeQuota(ctx, key, 3, now, now.Add(time.Hour))
		var full *store.QuotaFullError
		if !errors.As(err, &full) || !errors.Is(err, store.ErrQuotaFull) {
			t.Fatalf("take over the limit: %v, want a QuotaFullError", err)
		}
		if !full.Free.Equal(now.Add(time.Minute)) {
			t.Errorf("free at %s, want %s (the earliest use's end)", full.Free, now.Add(time.Minute))
		}
		// A minute on, the first use stops counting: one more fits.
		later := now.Add(time.Minute)
		if err := st.TakeQuota(ctx, key, 3, later, later.Add(time.Hour)); err != nil {
			t.Fatalf("take after a use ended: %v", err)
		}
		assertErrIs(t, "take again", st.TakeQuota(ctx, key, 3, later, later.Add(time.Hour)), store.ErrQuotaFull)
		// A higher limit counts the same uses.
		if err := st.TakeQuota(ctx, key, 4, later, later.Add(time.Hour)); err != nil {
			t.Fatalf("take under a higher limit: %v", err)
		}
	})

	t.Run("RacingTakersExactlyTheLimit", func(t *testing.T) {
		st := s.newStore(t)
		key := "race:" + uid(t)
		const limit = 7
		now := s.now()
		errs := race(s.racers, func(int) error {
			return st.TakeQuota(ctx, key, limit, now, now.Add(time.Minute))
		})
		took := 0
		for _, err := range errs {
			switch {
			case err == nil:
				took++
			case !errors.Is(err, store.ErrQuotaFull):
				t.Errorf("racer: %v", err)
			}
		}
		if took != min(limit, s.racers) {
			t.Errorf("%d takes succeeded, want exactly %d", took, min(limit, s.racers))
		}
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		st := s.newStore(t)
		a, b := "a:"+uid(t), "b:"+uid(t)
		now := s.now()
		if err := st.TakeQuota(ctx, a, 1, now, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.TakeQuota(ctx, b, 1, now, now.Add(time.Minute)); err != nil {
			t.Fatalf("another key: %v", err)
		}
		assertErrIs(t, "the first key again", st.TakeQuota(ctx, a, 1, now, now.Add(time.Minute)), store.ErrQuotaFull)
	})
}
