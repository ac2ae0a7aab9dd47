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
	if r.Chain == "" || r.Seq < 1 || bytes.IndexByte([]byte(r.Chain), 0) >= 0 {
		return fmt.Errorf("append audit: bad chain %q or seq %d", r.Chain, r.Seq)
	}
	rec := *r
	rec.At = rec.At.UTC()
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		key := auditKey(r.Chain, r.Seq)
		if tx.Bucket(bucketAudit).Get(key) != nil {
			return store.ErrConflict
		}
		if err := put(tx, bucketAudit, key, rec); err != nil {
			return err
		}
		var head countersign.AuditHead
		switch err := get(tx, bucketAuditHeads, []byte(r.Chain), &head); {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case head.Seq >= r.Seq:
			return nil
		}
		return put(tx, bucketAuditHeads, []byte(r.Chain), countersign.AuditHead{Chain: r.Chain, Seq: r.Seq, Hash: r.Hash, Expires: r.TTL})
	})
	if err != nil {
		return fmt.Errorf("append audit %s/%d: %w", r.Chain, r.Seq, err)
	}
	return nil
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
			k, v := c.Seek(append(slices.Clone(prefix), 0xff))
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
