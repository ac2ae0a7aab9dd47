package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

func fullAudit(chain string, seq int64, at time.Time) *countersign.AuditRecord {
	since := at.Add(-time.Minute).UTC()
	return &countersign.AuditRecord{
		Chain: chain, Seq: seq, At: at.In(zone).Add(987654321 * time.Nanosecond),
		Actor: "approver:ops", Action: "confirmation.approved", Subject: "cf_" + chain,
		Credential: "chat-user", Connection: "crm", Method: "DELETE", Path: "/contacts/12",
		Tier: "confirm", Rule: "connections/crm/policy.json endpoints[4] DELETE /contacts/{id} confirm: true",
		Binding: keyHash("binding"), Outcome: "approved", Reason: "ünïcode ✓ <b>",
		Hook:      &countersign.AuditHook{Decision: "ask", Reason: "after hours"},
		PathBytes: 100_000, PathSHA256: keyHash("path"), ReasonBytes: 5000, ReasonSHA256: keyHash("reason"),
		Count: 99, First: seq, Since: &since,
		TTL: at.Add(90 * 24 * time.Hour).Unix(), PrevTTL: at.Add(89 * 24 * time.Hour).Unix(),
		Prev: keyHash(fmt.Sprint("prev", seq)), Hash: keyHash(fmt.Sprint("hash", seq)),
	}
}

func (s *suite) audit(t *testing.T) {
	ctx := context.Background()

	t.Run("AppendRoundTripsEveryFieldAndMovesTheHead", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		r := fullAudit(chain, 1, s.now())
		assertNoZeroFields(t, *r)
		if err := st.AppendAudit(ctx, r); err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
		got, err := st.LastAudit(ctx, chain)
		if err != nil {
			t.Fatalf("LastAudit: %v", err)
		}
		assertUTC(t, *got)
		assertEqual(t, "record", *got, roundTrip(t, *r))
		head, err := st.AuditHead(ctx, chain)
		if err != nil {
			t.Fatalf("AuditHead: %v", err)
		}
		assertEqual(t, "head", head, countersign.AuditHead{Chain: chain, Seq: 1, Hash: r.Hash, Expires: r.TTL})
	})

	t.Run("HeadKeepsItsRecordsTTL", func(t *testing.T) {
		// A record with a TTL goes when the store expires it; the head,
		// which the chain goes on from, stays and keeps the TTL.
		st := s.newStore(t)
		chain := "calls:" + uid(t)
		r := fullAudit(chain, 1, s.now())
		r.TTL, r.PrevTTL = s.now().Add(-time.Hour).Unix(), 0 // expired already
		if err := st.AppendAudit(ctx, r); err != nil {
			t.Fatal(err)
		}
		head, err := st.AuditHead(ctx, chain)
		if err != nil || head.Seq != 1 || head.Expires != r.TTL {
			t.Fatalf("head = %+v, %v; want seq 1 expiring at %d", head, err, r.TTL)
		}
	})

	t.Run("TakenSlotConflictsAndKeepsTheFirst", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		first := fullAudit(chain, 1, s.now())
		if err := st.AppendAudit(ctx, first); err != nil {
			t.Fatal(err)
		}
		second := fullAudit(chain, 1, s.now())
		second.Action, second.Hash = "call.denied", keyHash("other")
		assertErrIs(t, "AppendAudit(taken slot)", st.AppendAudit(ctx, second), store.ErrConflict)
		got, _ := st.LastAudit(ctx, chain)
		assertEqual(t, "record after conflict", *got, roundTrip(t, *first))
		head, _ := st.AuditHead(ctx, chain)
		assertEqual(t, "head after conflict", head.Hash, first.Hash)
	})

	t.Run("HeadOnlyMovesForward", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		for _, seq := range []int64{1, 3, 2} {
			if err := st.AppendAudit(ctx, fullAudit(chain, seq, s.now())); err != nil {
				t.Fatal(err)
			}
		}
		head, _ := st.AuditHead(ctx, chain)
		if head.Seq != 3 || head.Hash != keyHash("hash3") {
			t.Fatalf("head = %+v, want seq 3", head)
		}
	})

	t.Run("ListInOrderAfterAndLimit", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		other := chain + "x" // a chain whose name extends this one's
		for seq := int64(1); seq <= 12; seq++ {
			if err := st.AppendAudit(ctx, fullAudit(chain, seq, s.now())); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AppendAudit(ctx, fullAudit(other, 1, s.now())); err != nil {
			t.Fatal(err)
		}
		seqs := func(q countersign.AuditQuery) []int64 {
			t.Helper()
			rs, err := st.ListAudit(ctx, q)
			if err != nil {
				t.Fatalf("ListAudit(%+v): %v", q, err)
			}
			var out []int64
			for _, r := range rs {
				if r.Chain != q.Chain {
					t.Fatalf("ListAudit(%s) returned a record of %s", q.Chain, r.Chain)
				}
				out = append(out, r.Seq)
			}
			return out
		}
		assertEqual(t, "all", seqs(countersign.AuditQuery{Chain: chain}), []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
		assertEqual(t, "after 9", seqs(countersign.AuditQuery{Chain: chain, After: 9}), []int64{10, 11, 12})
		assertEqual(t, "limit 2", seqs(countersign.AuditQuery{Chain: chain, Limit: 2}), []int64{1, 2})
		assertEqual(t, "newest 3", seqs(countersign.AuditQuery{Chain: chain, Limit: 3, Newest: true}), []int64{12, 11, 10})
		assertEqual(t, "newest after 10", seqs(countersign.AuditQuery{Chain: chain, After: 10, Newest: true}), []int64{12, 11})
		last, err := st.LastAudit(ctx, chain)
		if err != nil || last.Seq != 12 {
			t.Fatalf("LastAudit = %v, %v; want seq 12", last, err)
		}
		chains := listAll(t, st.AuditChains, countersign.ListQuery{Limit: 1}, "")
		found := 0
		for _, c := range chains {
			if c == chain || c == other {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("AuditChains = %v, want %s and %s among them", chains, chain, other)
		}
	})

	t.Run("EmptyChainIsNotFound", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		_, err := st.LastAudit(ctx, chain)
		assertErrIs(t, "LastAudit(empty)", err, store.ErrNotFound)
		_, err = st.AuditHead(ctx, chain)
		assertErrIs(t, "AuditHead(empty)", err, store.ErrNotFound)
		rs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
		if err != nil || len(rs) != 0 {
			t.Fatalf("ListAudit(empty) = %v, %v", rs, err)
		}
	})

	t.Run("RacingAppendsOneWinsEachSlot", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		errs := race(s.racers, func(i int) error {
			r := fullAudit(chain, 1, s.now())
			r.Hash = keyHash(fmt.Sprint("racer", i))
			return st.AppendAudit(ctx, r)
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			default:
				assertErrIs(t, "losing append", err, store.ErrConflict)
			}
		}
		if won != 1 {
			t.Fatalf("%d appends won slot 1, want exactly 1", won)
		}
		last, _ := st.LastAudit(ctx, chain)
		head, _ := st.AuditHead(ctx, chain)
		if head.Hash != last.Hash {
			t.Fatalf("head %s does not name the winner %s", head.Hash, last.Hash)
		}
	})
}
