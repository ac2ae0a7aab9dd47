package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// auditKey is chain, a NUL and the sequence number in 20 digits, so a
// chain's records are adjacent and in Seq order.
func auditKey(chain string, seq int64) []byte {
	return fmt.Appendf(nil, "%s\x00%020d", chain, seq)
}

func auditPrefix(chain string) []byte { return append([]byte(chain), 0) }

// AppendAudit stores r and moves the chain's head in one transaction.
func (s *Store) AppendAudit(_ context.Context, r *countersign.AuditRecord) error {
	if err := s.appendAudit(r); err != nil {
		return fmt.Errorf("append audit %s/%d: %w", r.Chain, r.Seq, err)
	}
	return nil
}

// SealAudit appends the batch in one transaction: the records up to the
// first taken slot, their pending records deleted, the head moved to the
// last of them.
func (s *Store) SealAudit(_ context.Context, rs []*countersign.AuditRecord, keys []string) (int, error) {
	if len(rs) != len(keys) || len(rs) == 0 {
		return 0, fmt.Errorf("seal audit: %d records and %d keys", len(rs), len(keys))
	}
	chain := rs[0].Chain
	sealed := 0
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		sealed = 0 // the write may run again
		for i, r := range rs {
			if r.Chain != chain || r.Seq < 1 || bytes.IndexByte([]byte(r.Chain), 0) >= 0 || !bytes.HasPrefix([]byte(keys[i]), pendingPrefix(chain)) {
				return fmt.Errorf("bad record %q/%d or pending key %q", r.Chain, r.Seq, keys[i])
			}
			key := auditKey(r.Chain, r.Seq)
			if tx.Bucket(bucketAudit).Get(key) != nil {
				break
			}
			rec := *r
			rec.At = rec.At.UTC()
			if err := put(tx, bucketAudit, key, rec); err != nil {
				return err
			}
			if err := tx.Bucket(bucketAuditPending).Delete([]byte(keys[i])); err != nil {
				return err
			}
			sealed++
		}
		if sealed == 0 {
			return nil
		}
		last := rs[sealed-1]
		return moveHead(tx, last)
	})
	if err != nil {
		return 0, fmt.Errorf("seal audit %s: %w", chain, err)
	}
	if sealed < len(rs) {
		return sealed, fmt.Errorf("seal audit %s/%d: %w", chain, rs[sealed].Seq, store.ErrConflict)
	}
	return sealed, nil
}

// pendingPrefix is the key prefix of a chain's pending records.
func pendingPrefix(chain string) []byte { return append([]byte(chain), 0) }

// AddAudit stores r as a pending record of its chain under chain NUL
// at NUL id, so a chain's pending records are in time order.
func (s *Store) AddAudit(_ context.Context, r *countersign.AuditRecord) error {
	if r.Chain == "" || r.ID == "" || bytes.IndexByte([]byte(r.Chain), 0) >= 0 || bytes.IndexByte([]byte(r.ID), 0) >= 0 {
		return fmt.Errorf("add audit: bad chain %q or id %q", r.Chain, r.ID)
	}
	rec := *r
	rec.At = rec.At.UTC()
	key := fmt.Appendf(pendingPrefix(r.Chain), "%s\x00%s", rec.At.Format("2006-01-02T15:04:05.000000000Z"), r.ID)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketAuditPending).Get(key) != nil {
			return store.ErrConflict
		}
		return put(tx, bucketAuditPending, key, rec)
	})
	if err != nil {
		return fmt.Errorf("add audit %s/%s: %w", r.Chain, r.ID, err)
	}
	return nil
}

// PendingAudit returns up to limit of the chain's pending records in key
// (time) order.
func (s *Store) PendingAudit(_ context.Context, chain string, limit int) ([]countersign.PendingAudit, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("pending audit of %s: limit %d", chain, limit)
	}
	var out []countersign.PendingAudit
	prefix := pendingPrefix(chain)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketAuditPending).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Next() {
			p := countersign.PendingAudit{Key: string(k)}
			if err := decodeRecord(bucketAuditPending, v, &p.Record); err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending audit of %s: %w", chain, err)
	}
	return out, nil
}

// DropPendingAudit deletes a pending record.
func (s *Store) DropPendingAudit(_ context.Context, chain, key string) error {
	if !bytes.HasPrefix([]byte(key), pendingPrefix(chain)) {
		return fmt.Errorf("drop pending audit of %s: key %q is not the chain's", chain, key)
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketAuditPending).Delete([]byte(key)) })
	if err != nil {
		return fmt.Errorf("drop pending audit %q: %w", key, err)
	}
	return nil
}

func (s *Store) appendAudit(r *countersign.AuditRecord) error {
	if r.Chain == "" || r.Seq < 1 || bytes.IndexByte([]byte(r.Chain), 0) >= 0 {
		return fmt.Errorf("bad chain %q or seq %d", r.Chain, r.Seq)
	}
	rec := *r
	rec.At = rec.At.UTC()
	return s.writer.Update(func(tx *bbolt.Tx) error {
		key := auditKey(r.Chain, r.Seq)
		if tx.Bucket(bucketAudit).Get(key) != nil {
			return store.ErrConflict
		}
		if err := put(tx, bucketAudit, key, rec); err != nil {
			return err
		}
		return moveHead(tx, r)
	})
}

// moveHead moves the chain's head to r unless it is at r.Seq or beyond.
func moveHead(tx *bbolt.Tx, r *countersign.AuditRecord) error {
	var head countersign.AuditHead
	switch err := get(tx, bucketAuditHeads, []byte(r.Chain), &head); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case head.Seq >= r.Seq:
		return nil
	}
	return put(tx, bucketAuditHeads, []byte(r.Chain), countersign.AuditHead{Chain: r.Chain, Seq: r.Seq, Hash: r.Hash, Expires: r.TTL})
}

// LastAudit returns the chain's record with the highest Seq.
func (s *Store) LastAudit(ctx context.Context, chain string) (*countersign.AuditRecord, error) {
	rs, err := s.ListAudit(ctx, countersign.AuditQuery{Chain: chain, Limit: 1, Newest: true})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("last audit record of %s: %w", chain, store.ErrNotFound)
	}
	return rs[0], nil
}

// AuditHead returns the chain's head.
func (s *Store) AuditHead(_ context.Context, chain string) (countersign.AuditHead, error) {
	var h countersign.AuditHead
	err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketAuditHeads, []byte(chain), &h) })
	if err != nil {
		return countersign.AuditHead{}, fmt.Errorf("audit head of %s: %w", chain, err)
	}
	return h, nil
}

// ListAudit walks the chain's keys in order (backwards with q.Newest).
func (s *Store) ListAudit(_ context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error) {
	var out []*countersign.AuditRecord
	prefix := auditPrefix(q.Chain)
	take := func(k, v []byte) (more bool, err error) {
		r := new(countersign.AuditRecord)
		if err := json.Unmarshal(v, r); err != nil {
			return false, fmt.Errorf("decode audit record %q: %w", k, err)
		}
		if r.Seq <= q.After {
			return !q.Newest, nil
		}
		out = append(out, r)
		return q.Limit <= 0 || len(out) < q.Limit, nil
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		if q.Newest {
			k, _ := c.Seek(append(slices.Clone(prefix), 0xff))
			var v []byte
			if k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
			for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
				if more, err := take(k, v); err != nil || !more {
					return err
				}
			}
			return nil
		}
		for k, v := c.Seek(auditKey(q.Chain, q.After+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if more, err := take(k, v); err != nil || !more {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list audit records of %s: %w", q.Chain, err)
	}
	return out, nil
}

// AddAuditChained adds r to the end of its chain in one transaction: the
// record numbered after the chain's head, its Prev, PrevTTL and Hash set
// (hash computes Hash from the rest), and the head moved to it. A process
// holds the file alone (Open), so no other sealer races for the slot and the
// record needs no pending copy: one durable write instead of AddAudit's and
// SealAudit's two. It returns store.ErrConflict, writing nothing, when the
// chain still has pending records (a process stopped before sealing them):
// the caller then adds r as pending, to be sealed after them in time order.
// On success r holds the stored record.
func (s *Store) AddAuditChained(_ context.Context, r *countersign.AuditRecord, hash func(*countersign.AuditRecord) string) error {
	if err := checkChained(r); err != nil {
		return err
	}
	var stored countersign.AuditRecord
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		ok, err := chainAudit(tx, r, hash, &stored)
		if err == nil && !ok {
			err = store.ErrConflict
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("add audit %s/%s: %w", r.Chain, r.ID, err)
	}
	*r = stored
	return nil
}

func checkChained(r *countersign.AuditRecord) error {
	if r.Chain == "" || r.ID == "" || bytes.IndexByte([]byte(r.Chain), 0) >= 0 || bytes.IndexByte([]byte(r.ID), 0) >= 0 {
		return fmt.Errorf("add audit: bad chain %q or id %q", r.Chain, r.ID)
	}
	return nil
}

// chainAudit is AddAuditChained's write in tx: false, writing nothing, when
// the chain has pending records or no head but records; stored gets the
// record written.
func chainAudit(tx *bbolt.Tx, r *countersign.AuditRecord, hash func(*countersign.AuditRecord) string, stored *countersign.AuditRecord) (bool, error) {
	prefix := pendingPrefix(r.Chain)
	if k, _ := tx.Bucket(bucketAuditPending).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		return false, nil
	}
	rec := *r
	rec.At = rec.At.UTC()
	var head countersign.AuditHead
	switch err := get(tx, bucketAuditHeads, []byte(r.Chain), &head); {
	case errors.Is(err, store.ErrNotFound):
		// No head: the chain must be empty too, else leave it to the
		// sealer, which reads the chain's records.
		if k, _ := tx.Bucket(bucketAudit).Cursor().Seek(auditPrefix(r.Chain)); k != nil && bytes.HasPrefix(k, auditPrefix(r.Chain)) {
			return false, nil
		}
	case err != nil:
		return false, err
	}
	rec.Seq, rec.Prev, rec.PrevTTL = head.Seq+1, head.Hash, head.Expires
	// Along a chain the TTL never decreases (audit.Trail.append).
	if rec.TTL > 0 {
		rec.TTL = max(rec.TTL, rec.PrevTTL)
	}
	rec.Hash = hash(&rec)
	key := auditKey(rec.Chain, rec.Seq)
	if tx.Bucket(bucketAudit).Get(key) != nil {
		return false, nil
	}
	if err := put(tx, bucketAudit, key, rec); err != nil {
		return false, err
	}
	// The head just read is the one this record follows (rec.Seq is one
	// past it): it moves without reading it again (moveHead).
	if err := put(tx, bucketAuditHeads, []byte(rec.Chain), countersign.AuditHead{Chain: rec.Chain, Seq: rec.Seq, Hash: rec.Hash, Expires: rec.TTL}); err != nil {
		return false, err
	}
	*stored = rec
	return true, nil
}

// auditAlong is the embedded store's form of a store.Along: the audit
// record is chained (chainAudit) in the confirmation write's transaction.
type auditAlong struct {
	store *Store
	hash  func(*countersign.AuditRecord) string
}

// AuditAlong returns the Write of a store.Along whose record is added to
// its chain in the same transaction as the confirmation write it goes with.
func (s *Store) AuditAlong(hash func(*countersign.AuditRecord) string) any {
	return &auditAlong{store: s, hash: hash}
}

// txAlong is the form of a store.Along written by a component that keeps
// its own buckets in the store's file (the local workflow engine): fn
// writes in the transaction, or declines (false) without writing.
type txAlong struct {
	store *Store
	fn    func(tx *bbolt.Tx) (bool, error)
}

// TxAlong returns ctx carrying fn, to run in the transaction of the next
// confirmation write made with ctx (store.Along), and the Along that says
// whether it did. fn must act only through tx, may run more than once,
// and must check before it writes: it returns false, having written
// nothing, to decline; an error fails the confirmation write too.
func (s *Store) TxAlong(ctx context.Context, fn func(tx *bbolt.Tx) (bool, error)) (context.Context, *store.Along) {
	a := &store.Along{Write: &txAlong{store: s, fn: fn}}
	return store.WithAlong(ctx, a), a
}

// along returns the writes ctx carries for a confirmation write that are
// this store's, and the function that makes them in the confirmation
// write's transaction after it, reporting which it made (a record the
// builder declines, or a chain with pending records, is not: the caller
// writes it on its own).
func (s *Store) along(ctx context.Context) ([]*store.Along, func(tx *bbolt.Tx, c *countersign.Confirmation) ([]bool, error)) {
	var mine []*store.Along
	for _, a := range store.AlongOf(ctx) {
		switch w := a.Write.(type) {
		case *auditAlong:
			if w.store == s && a.Record != nil {
				mine = append(mine, a)
			}
		case *txAlong:
			if w.store == s {
				mine = append(mine, a)
			}
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	return mine, func(tx *bbolt.Tx, c *countersign.Confirmation) ([]bool, error) {
		made := make([]bool, len(mine))
		for i, a := range mine {
			var err error
			switch w := a.Write.(type) {
			case *auditAlong:
				r, ok := a.Record(c)
				if !ok || checkChained(&r) != nil {
					continue
				}
				var stored countersign.AuditRecord
				made[i], err = chainAudit(tx, &r, w.hash, &stored)
			case *txAlong:
				made[i], err = w.fn(tx)
			}
			if err != nil {
				return nil, err
			}
		}
		return made, nil
	}
}

// markAlong marks the writes made once their transaction committed.
func markAlong(alongs []*store.Along, made []bool) {
	for i, ok := range made {
		if ok {
			alongs[i].MarkDone()
		}
	}
}
