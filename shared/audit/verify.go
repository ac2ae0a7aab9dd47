package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/telemetry"
)

// Break is the first broken record of a chain.
type Break struct {
	Chain string
	// Seq is the broken (or missing) record's sequence number.
	Seq     int64
	Problem string
}

func (b Break) String() string {
	return fmt.Sprintf("chain %s record %d: %s", b.Chain, b.Seq, b.Problem)
}

// ChainReport is what Verify found in one chain.
type ChainReport struct {
	Chain string
	// Records is how many records the chain holds.
	Records int
	// Head is the stored head (zero when there is none).
	Head countersign.AuditHead
	// Lag is how many records lie past the head: an append cut off
	// between its record and its head (the next append repairs it).
	Lag int64
	// From is the record the chain was verified from, when the records
	// before it expired (0: from the first).
	From int64
	// Break is the first broken record, if any.
	Break *Break
	// Pending is how many records were written but not yet sealed into
	// the chain (at most 1000 are counted): they are not verified.
	Pending int
}

// Report is the result of Verify.
type Report struct {
	Chains []ChainReport
}

// OK reports whether no chain is broken.
func (r *Report) OK() bool { return len(r.Breaks()) == 0 }

// Breaks lists the first broken record of each broken chain.
func (r *Report) Breaks() []Break {
	var out []Break
	for _, c := range r.Chains {
		if c.Break != nil {
			out = append(out, *c.Break)
		}
	}
	return out
}

// Verify checks every chain of st as of now (see VerifyAt).
func Verify(ctx context.Context, st Store) (*Report, error) {
	return VerifyAt(ctx, st, time.Now())
}

// VerifyAt checks every chain of st: each record's Hash its own, each
// one's Prev the Hash of the one before, records numbered without a gap,
// and the head naming the newest record. A chain whose oldest records
// expired (an expiring chain: denials and auto-tier calls) is verified
// from its oldest surviving record: a gap is allowed only where the record
// after it shows (PrevTTL) that the record before it had expired by now;
// TTLs never decrease along a chain, so every record in the gap had too.
// Deleting a record that has not expired, or editing any record, breaks
// the chain. The error is for a store that cannot be read; what is broken
// is in the report.
func VerifyAt(ctx context.Context, st Store, now time.Time) (*Report, error) {
	chains, err := Chains(ctx, st)
	if err != nil {
		return nil, err
	}
	slices.Sort(chains)
	rep := &Report{}
	for _, chain := range chains {
		cr, err := verifyChain(ctx, st, chain, now.Unix())
		if err != nil {
			return nil, err
		}
		rep.Chains = append(rep.Chains, cr)
	}
	telemetry.AuditVerified(len(rep.Breaks()))
	return rep, nil
}

func verifyChain(ctx context.Context, st Store, chain string, now int64) (ChainReport, error) {
	cr := ChainReport{Chain: chain}
	head, err := st.AuditHead(ctx, chain)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return cr, fmt.Errorf("verify %s: %w", chain, err)
	default:
		cr.Head = head
	}
	records, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if err != nil {
		return cr, fmt.Errorf("verify %s: %w", chain, err)
	}
	pending, err := st.PendingAudit(ctx, chain, 1000)
	if err != nil {
		return cr, fmt.Errorf("verify %s: %w", chain, err)
	}
	cr.Pending = len(pending)
	cr.Records = len(records)
	brk := func(seq int64, format string, args ...any) ChainReport {
		cr.Break = &Break{Chain: chain, Seq: seq, Problem: fmt.Sprintf(format, args...)}
		return cr
	}
	expired := func(ttl int64) bool { return ttl > 0 && ttl <= now }
	var before *countersign.AuditRecord
	var byHead *countersign.AuditRecord
	for _, r := range records {
		want := int64(1)
		if before != nil {
			want = before.Seq + 1
		}
		switch {
		case r.Chain != chain:
			return brk(r.Seq, "edited: it names chain %q", r.Chain), nil
		case Hash(r) != r.Hash:
			return brk(r.Seq, "edited: its content hashes to %.12s…, not to the hash it carries (%.12s…)", Hash(r), r.Hash), nil
		case r.TTL < r.PrevTTL || (r.TTL > 0) != Expiring(chain):
			return brk(r.Seq, "edited: its TTL (%d) breaks the chain's order of expiry", r.TTL), nil
		case r.Seq < want:
			return brk(r.Seq, "out of order: it follows record %d", want-1), nil
		case r.Seq > want && (!expired(r.PrevTTL) || before != nil && before.TTL > r.PrevTTL):
			return brk(want, "missing: the chain goes from record %d to record %d, and record %d had not expired", want-1, r.Seq, r.Seq-1), nil
		case r.Seq > want:
			cr.From = r.Seq // the records before it expired
		case before != nil && (r.Prev != before.Hash || r.PrevTTL != before.TTL):
			return brk(r.Seq, "does not follow record %d: its prev is %.12s…, record %d hashes to %.12s…", before.Seq, r.Prev, before.Seq, before.Hash), nil
		case before == nil && r.Prev != "":
			return brk(r.Seq, "does not follow anything: its prev is %.12s…", r.Prev), nil
		}
		before = r
		if r.Seq == head.Seq {
			byHead = r
		}
	}
	last := int64(0)
	if before != nil {
		last = before.Seq
	}
	switch {
	case head.Seq == 0 && last > 0:
		return brk(last, "the chain has no head: its head was deleted"), nil
	case head.Seq > last && !expired(head.Expires):
		return brk(last+1, "missing: the head names record %d (%.12s…) but the chain ends at record %d", head.Seq, head.Hash, last), nil
	case head.Seq > last:
		cr.From = head.Seq + 1 // every record expired
	case byHead != nil && (byHead.Hash != head.Hash || byHead.TTL != head.Expires):
		return brk(head.Seq, "edited or replaced: the head says it hashes to %.12s…, it hashes to %.12s…", head.Hash, byHead.Hash), nil
	}
	if head.Seq <= last {
		cr.Lag = last - head.Seq
	}
	return cr, nil
}
