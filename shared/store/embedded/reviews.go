package embedded

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// CreateReview stores r; store.ErrConflict if its ID exists.
func (s *Store) CreateReview(_ context.Context, r *store.Review) error {
	if r.ID == "" {
		return errors.New("create review: empty id")
	}
	rec := *r
	rec.CreatedAt = rec.CreatedAt.UTC()
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketReviews).Get([]byte(r.ID)) != nil {
			return store.ErrConflict
		}
		return put(tx, bucketReviews, []byte(r.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("create review %s: %w", r.ID, err)
	}
	return nil
}

// ListReviews returns every review, oldest CreatedAt first, then by ID.
// The queue is small (operators work it down), so it is read whole and sorted.
func (s *Store) ListReviews(_ context.Context) ([]*store.Review, error) {
	var out []*store.Review
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketReviews).ForEach(func(k, v []byte) error {
			r := new(store.Review)
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("decode review %s: %w", k, err)
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list reviews: %w", err)
	}
	slices.SortFunc(out, func(a, b *store.Review) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
