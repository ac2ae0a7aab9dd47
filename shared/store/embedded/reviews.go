package embedded

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/countersign/countersign"
	"go.etcd.io/bbolt"
)

// ListReviews returns the confirmations of kind review, oldest CreatedAt
// first, then by ID. The local store is small (the sweep deletes what TTL
// would), so the confirmations are read whole and filtered.
func (s *Store) ListReviews(_ context.Context) ([]*countersign.Confirmation, error) {
	out, err := s.listConfirmations(countersign.KindReview)
	if err != nil {
		return nil, fmt.Errorf("list reviews: %w", err)
	}
	return out, nil
}

// ListConfirmations returns every stored confirmation, oldest first.
func (s *Store) ListConfirmations(_ context.Context) ([]*countersign.Confirmation, error) {
	out, err := s.listConfirmations("")
	if err != nil {
		return nil, fmt.Errorf("list confirmations: %w", err)
	}
	return out, nil
}

// listConfirmations reads the confirmations of kind (all for "").
func (s *Store) listConfirmations(kind countersign.Kind) ([]*countersign.Confirmation, error) {
	var out []*countersign.Confirmation
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketConfirmations).ForEach(func(k, v []byte) error {
			var head struct {
				Kind countersign.Kind `json:"kind"`
			}
			if err := json.Unmarshal(v, &head); err != nil {
				return fmt.Errorf("decode confirmation %s: %w", k, err)
			}
			if kind != "" && head.Kind != kind {
				return nil
			}
			c := new(countersign.Confirmation)
			if err := json.Unmarshal(v, c); err != nil {
				return fmt.Errorf("decode confirmation %s: %w", k, err)
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *countersign.Confirmation) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
