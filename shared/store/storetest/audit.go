package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

func fullAudit(chain string, seq int64, at time.Time) *countersign.AuditRecord {
	since := at.Add(-time.Minute).UTC()
	return &countersign.AuditRecord{
		Chain: chain, Seq: seq, At: at.In(zone).Add(987654321 * time.Nanosecond), ID: fmt.Sprintf("ar_%s_%d", chain, seq),
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

	t.Run("PendingRecordsAreSealedInOrder", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		now := s.now()
		// Added out of time order, by racing writers: listed by time.
		errs := race(3, func(i int) error {
			r := fullAudit(chain, 0, now.Add(time.Duration(2-i)*time.Second))
			r.ID, r.Subject, r.Seq, r.Prev, r.Hash = fmt.Sprint("ar_", i), fmt.Sprint("third-", i), 0, "", ""
			return st.AddAudit(ctx, r)
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		pending, err := st.PendingAudit(ctx, chain, 10)
		if err != nil || len(pending) != 3 {
			t.Fatalf("PendingAudit = %d, %v; want 3", len(pending), err)
		}
		var subjects []string
		for _, p := range pending {
			subjects = append(subjects, p.Record.Subject)
		}
		assertEqual(t, "pending order", subjects, []string{"third-2", "third-1", "third-0"})
		assertEqual(t, "a pending record", pending[0].Record, roundTrip(t, func() countersign.AuditRecord {
			r := fullAudit(chain, 0, now)
			r.ID, r.Subject, r.Seq, r.Prev, r.Hash = "ar_2", "third-2", 0, "", ""
			return *r
		}()))
		if _, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain}); err != nil {
			t.Fatal(err)
		}
		if rs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain}); len(rs) != 0 {
			t.Fatalf("pending records listed as sealed: %d", len(rs))
		}
		if one, err := st.PendingAudit(ctx, chain, 1); err != nil || len(one) != 1 {
			t.Fatalf("PendingAudit limit 1 = %d, %v", len(one), err)
		}

		// Seal the first two; a taken third slot stops the batch there.
		if err := st.AppendAudit(ctx, fullAudit(chain, 3, now)); err != nil {
			t.Fatal(err)
		}
		var batch []*countersign.AuditRecord
		var keys []string
		for i, p := range pending {
			r := p.Record
			r.Seq, r.Hash = int64(i+1), keyHash(fmt.Sprint("sealed", i))
			batch, keys = append(batch, &r), append(keys, p.Key)
		}
		n, err := st.SealAudit(ctx, batch, keys)
		if n != 2 || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("SealAudit = %d, %v; want 2 and ErrConflict", n, err)
		}
		left, err := st.PendingAudit(ctx, chain, 10)
		if err != nil || len(left) != 1 || left[0].Record.Subject != "third-0" {
			t.Fatalf("pending after the seal = %+v, %v; want third-0 alone", left, err)
		}
		if err := st.DropPendingAudit(ctx, chain, left[0].Key); err != nil {
			t.Fatal(err)
		}
		if left, err := st.PendingAudit(ctx, chain, 10); err != nil || len(left) != 0 {
			t.Fatalf("pending after the drop = %d, %v", len(left), err)
		}
		rs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
		if err != nil || len(rs) != 3 || rs[0].Subject != "third-2" || rs[1].Subject != "third-1" {
			t.Fatalf("sealed = %v, %v", rs, err)
		}
		// The head is at 3 (the appended record); a batch never moves it back.
		if h, err := st.AuditHead(ctx, chain); err != nil || h.Seq != 3 {
			t.Fatalf("head %+v, %v; want seq 3", h, err)
		}
	})

	t.Run("SealedBatchMovesTheHead", func(t *testing.T) {
		st := s.newStore(t)
		chain := "cred:" + uid(t)
		r := fullAudit(chain, 0, s.now())
		r.Seq, r.Prev, r.Hash = 0, "", ""
		if err := st.AddAudit(ctx, r); err != nil {
			t.Fatal(err)
		}
		pending, err := st.PendingAudit(ctx, chain, 5)
		if err != nil || len(pending) != 1 {
			t.Fatalf("%d, %v", len(pending), err)
		}
		rec := pending[0].Record
		rec.Seq, rec.Hash = 1, keyHash("one")
		if n, err := st.SealAudit(ctx, []*countersign.AuditRecord{&rec}, []string{pending[0].Key}); n != 1 || err != nil {
			t.Fatalf("SealAudit = %d, %v", n, err)
		}
		h, err := st.AuditHead(ctx, chain)
		if err != nil || h.Seq != 1 || h.Hash != rec.Hash || h.Expires != rec.TTL {
			t.Fatalf("head %+v, %v", h, err)
		}
		if got, err := st.LastAudit(ctx, chain); err != nil || got.ID != rec.ID {
			t.Fatalf("LastAudit = %+v, %v", got, err)
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
