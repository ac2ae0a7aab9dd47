package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/countersign/countersign/shared/store"
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
	Head store.AuditHead
	// Lag is how many records lie past the head: an append cut off
	// between its record and its head (the next append repairs it).
	Lag int64
	// Break is the first broken record, if any.
	Break *Break
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

// Verify checks every chain of st: records numbered 1, 2, ... without a
// gap, each one's Prev the Hash of the one before, each one's Hash its own,
// and the head naming the newest record. The error is for a store that
// cannot be read; what is broken is in the report.
func Verify(ctx context.Context, st Store) (*Report, error) {
	chains, err := st.AuditChains(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(chains)
	rep := &Report{}
	for _, chain := range chains {
		cr, err := verifyChain(ctx, st, chain)
		if err != nil {
			return nil, err
		}
		rep.Chains = append(rep.Chains, cr)
	}
	return rep, nil
}

func verifyChain(ctx context.Context, st Store, chain string) (ChainReport, error) {
	cr := ChainReport{Chain: chain}
	head, err := st.AuditHead(ctx, chain)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return cr, fmt.Errorf("verify %s: %w", chain, err)
	default:
		cr.Head = head
	}
	records, err := st.ListAudit(ctx, store.AuditQuery{Chain: chain})
	if err != nil {
		return cr, fmt.Errorf("verify %s: %w", chain, err)
	}
	cr.Records = len(records)
	brk := func(seq int64, format string, args ...any) ChainReport {
		cr.Break = &Break{Chain: chain, Seq: seq, Problem: fmt.Sprintf(format, args...)}
		return cr
	}
	prev := ""
	var byHead *store.AuditRecord
	for i, r := range records {
		want := int64(i) + 1
		switch {
		case r.Seq != want:
			return brk(want, "missing: the chain goes from record %d to record %d", want-1, r.Seq), nil
		case r.Chain != chain:
			return brk(r.Seq, "edited: it names chain %q", r.Chain), nil
		case r.Prev != prev:
			return brk(r.Seq, "does not follow record %d: its prev is %.12s…, record %d hashes to %.12s…", want-1, r.Prev, want-1, prev), nil
		case Hash(r) != r.Hash:
			return brk(r.Seq, "edited: its content hashes to %.12s…, not to the hash it carries (%.12s…)", Hash(r), r.Hash), nil
		}
		prev = r.Hash
		if r.Seq == head.Seq {
			byHead = r
		}
	}
	last := int64(len(records))
	switch {
	case head.Seq == 0 && last > 0:
		return brk(last, "the chain has no head: its head was deleted"), nil
	case head.Seq > last:
		return brk(last+1, "missing: the head names record %d (%.12s…) but the chain ends at record %d", head.Seq, head.Hash, last), nil
	case byHead != nil && byHead.Hash != head.Hash:
		return brk(head.Seq, "edited or replaced: the head says it hashes to %.12s…, it hashes to %.12s…", head.Hash, byHead.Hash), nil
	}
	cr.Lag = last - head.Seq
	return cr, nil
}
