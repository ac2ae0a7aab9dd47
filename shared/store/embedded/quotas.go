package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// A quota is a count and its uses:
//
//	store_quotas      <key>                                → {"key", "count", "ttl"}
//	store_quota_uses  <key> NUL <until, 8 bytes big-endian> <n, 8 bytes>  → nothing
//
// The uses sort by when they stop counting, so a take deletes the ended
// ones from the front of the key's range, then counts one more unless the
// count is at the limit: its cost does not grow with the uses counted.
// The count and the uses change together in one write transaction; the
// sweep deletes a quota's record and its uses together, once its ttl (a
// minute after its last use ends) has passed.
type quotaCount struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
	Next  uint64 `json:"next"`
	TTL   int64  `json:"ttl"`
}

func quotaPrefix(key string) []byte { return append([]byte(key), 0) }

// TakeQuota counts one use of key in one write transaction. Transactions
// run one at a time, so the count is exact and takers never conflict.
func (s *Store) TakeQuota(_ context.Context, key string, limit int, now, until time.Time) error {
	if limit < 1 || bytes.IndexByte([]byte(key), 0) >= 0 {
		return fmt.Errorf("take quota %q: limit %d", key, limit)
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error { return takeQuota(tx, key, limit, now, until) })
	if err != nil {
		return fmt.Errorf("take quota %s: %w", key, err)
	}
	return nil
}

// TakeQuotaAlong returns ctx carrying TakeQuota's write, to be made in the
// transaction of the next confirmation write made with ctx (store.Along):
// the use counted and the confirmation it counts in one commit. A full
// quota fails that write with TakeQuota's *store.QuotaFullError, writing
// neither. A bad key or limit carries nothing (nil): the caller takes the
// quota on its own, which reports it.
func (s *Store) TakeQuotaAlong(ctx context.Context, key string, limit int, now, until time.Time) (context.Context, *store.Along) {
	if limit < 1 || bytes.IndexByte([]byte(key), 0) >= 0 {
		return ctx, nil
	}
	return s.TxAlong(ctx, func(tx *bbolt.Tx) (bool, error) {
		if err := takeQuota(tx, key, limit, now, until); err != nil {
			return false, fmt.Errorf("take quota %s: %w", key, err)
		}
		return true, nil
	})
}

// takeQuota is TakeQuota's write in tx.
func takeQuota(tx *bbolt.Tx, key string, limit int, now, until time.Time) error {
	var q quotaCount
	switch err := get(tx, bucketQuotas, []byte(key), &q); {
	case errors.Is(err, store.ErrNotFound):
		q = quotaCount{Key: key}
	case err != nil:
		return err
	}
	uses := tx.Bucket(bucketQuotaUses)
	prefix := quotaPrefix(key)
	var ended [][]byte
	var free time.Time
	c := uses.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		u := useUntil(k[len(prefix):])
		if u.After(now) {
			free = u
			break
		}
		ended = append(ended, bytes.Clone(k))
	}
	for _, k := range ended {
		if err := uses.Delete(k); err != nil {
			return err
		}
	}
	q.Count = max(0, q.Count-len(ended))
	if q.Count >= limit {
		return &store.QuotaFullError{Key: key, Limit: limit, Free: free}
	}
	q.Next++
	k := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(prefix, uint64(max(0, until.UnixNano()))), q.Next)
	if err := uses.Put(k, nil); err != nil {
		return err
	}
	q.Count++
	q.TTL = max(q.TTL, until.Add(time.Minute).Unix())
	return put(tx, bucketQuotas, []byte(key), q)
}

// useUntil reads when a use stops counting from the rest of its key.
func useUntil(rest []byte) time.Time {
	if len(rest) < 8 {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(rest[:8]))).UTC()
}

// dropQuotaUses deletes the uses of the quota key (the sweep, with its record).
func dropQuotaUses(tx *bbolt.Tx, key []byte) error {
	uses := tx.Bucket(bucketQuotaUses)
	prefix := append(bytes.Clone(key), 0)
	var keys [][]byte
	c := uses.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := uses.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
