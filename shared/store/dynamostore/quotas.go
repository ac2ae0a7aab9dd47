package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign"
)

// GetQuota reads the quota record of key consistently.
func (s *Store) GetQuota(ctx context.Context, key string) (*countersign.Quota, error) {
	item, err := s.getItem(ctx, prefixQuota+key, skQuota)
	if err != nil {
		return nil, fmt.Errorf("get quota %s: %w", key, err)
	}
	q := new(countersign.Quota)
	if err := decode(item, q); err != nil {
		return nil, fmt.Errorf("get quota %s: %w", key, err)
	}
	return q, nil
}

// PutQuota creates the record when q.Version is 0 (conditional on its
// absence), else replaces it conditionally on its version.
func (s *Store) PutQuota(ctx context.Context, q *countersign.Quota) error {
	rec := *q
	rec.Version = q.Version + 1
	rec.Until = make([]time.Time, len(q.Until))
	for i, u := range q.Until {
		rec.Until[i] = u.UTC()
	}
	item, err := newItem(prefixQuota+q.Key, skQuota, rec)
	if err == nil {
		item[attrVersion] = num(rec.Version)
		if rec.TTL > 0 {
			item[attrTTL] = num(rec.TTL)
		}
		if q.Version == 0 {
			err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
		} else {
			err = s.putIfVersion(ctx, item, q.Version)
		}
	}
	if err != nil {
		return fmt.Errorf("put quota %s from version %d: %w", q.Key, q.Version, err)
	}
	q.Version = rec.Version
	return nil
}
