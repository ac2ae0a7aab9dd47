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

// GetQuota returns a copy of the quota record of key.
func (s *Store) GetQuota(_ context.Context, key string) (*countersign.Quota, error) {
	q := new(countersign.Quota)
	if err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketQuotas, []byte(key), q) }); err != nil {
		return nil, fmt.Errorf("get quota %s: %w", key, err)
	}
	return q, nil
}

// PutQuota creates the record when q.Version is 0, else replaces it if its
// stored Version equals q.Version; q.Version is then incremented.
func (s *Store) PutQuota(_ context.Context, q *countersign.Quota) error {
	rec := *q
	rec.Version = q.Version + 1
	rec.Until = make([]time.Time, len(q.Until))
	for i, u := range q.Until {
		rec.Until[i] = u.UTC()
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketQuotas, []byte(q.Key))
		switch {
		case errors.Is(err, store.ErrNotFound):
			if q.Version != 0 {
				return err
			}
		case err != nil:
			return err
		case v != q.Version:
			return fmt.Errorf("stored version %d, put from version %d: %w", v, q.Version, store.ErrConflict)
		}
		return put(tx, bucketQuotas, []byte(q.Key), rec)
	})
	if err != nil {
		return fmt.Errorf("put quota %s: %w", q.Key, err)
	}
	q.Version = rec.Version
	return nil
}
