package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// TakeQuota counts one use of key in one write transaction: it reads the
// key's record (the uses still counted), drops those that stopped
// counting by now, and adds one unless limit are left. Transactions run
// one at a time, so the count is exact and takers never conflict.
func (s *Store) TakeQuota(_ context.Context, key string, limit int, now, until time.Time) error {
	if limit < 1 {
		return fmt.Errorf("take quota %s: limit %d", key, limit)
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		var q countersign.Quota
		switch err := get(tx, bucketQuotas, []byte(key), &q); {
		case errors.Is(err, store.ErrNotFound):
			q = countersign.Quota{Key: key}
		case err != nil:
			return err
		}
		live := q.Until[:0]
		free := time.Time{}
		for _, u := range q.Until {
			if u.After(now) {
				live = append(live, u)
				if free.IsZero() || u.Before(free) {
					free = u
				}
			}
		}
		if len(live) >= limit {
			return &store.QuotaFullError{Key: key, Limit: limit, Free: free}
		}
		q.Until = append(live, until.UTC())
		q.Version++
		for _, u := range q.Until {
			q.TTL = max(q.TTL, u.Add(time.Minute).Unix())
		}
		return put(tx, bucketQuotas, []byte(key), q)
	})
	if err != nil {
		return fmt.Errorf("take quota %s: %w", key, err)
	}
	return nil
}
