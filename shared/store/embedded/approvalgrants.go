package embedded

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Velocity counts and remembered approvals:
//
//	store_counts          <key>       → {"count", "ttl"}   swept when its ttl passed
//	store_approval_grants <grant ID>  → the grant's JSON    swept when its expires_at passed
//
// Write transactions run one at a time, so an AddCount or a use of a grant
// is exact however many callers race. The grants of a credential are found
// by reading the bucket: a local store holds few, and each is bounded by the
// approvals people gave.
var (
	bucketCounts         = []byte("store_counts")
	bucketApprovalGrants = []byte("store_approval_grants")
)

type countRecord struct {
	Count int64 `json:"count"`
	TTL   int64 `json:"ttl"`
}

// AddCount adds one to key's count in one write transaction.
func (s *Store) AddCount(_ context.Context, key string, until time.Time) (int64, error) {
	if key == "" {
		return 0, errors.New("add count: empty key")
	}
	var n int64
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		var r countRecord
		if err := get(tx, bucketCounts, []byte(key), &r); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if r.TTL > 0 && r.TTL <= s.now().Unix() {
			r = countRecord{} // past its time: the sweep had not come yet
		}
		r.Count++
		r.TTL = max(r.TTL, until.Unix()+1)
		n = r.Count
		return put(tx, bucketCounts, []byte(key), r)
	})
	if err != nil {
		return 0, fmt.Errorf("add count %s: %w", key, err)
	}
	return n, nil
}

// CreateApprovalGrant stores g unless its ID exists.
func (s *Store) CreateApprovalGrant(_ context.Context, g *countersign.ApprovalGrant) error {
	if g.ID == "" {
		return errors.New("create approval grant: empty id")
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketApprovalGrants).Get([]byte(g.ID)) != nil {
			return store.ErrConflict
		}
		return put(tx, bucketApprovalGrants, []byte(g.ID), g)
	})
	if err != nil {
		return fmt.Errorf("create approval grant %s: %w", g.ID, err)
	}
	return nil
}

// UseApprovalGrant takes one call from the live grant that ends first.
func (s *Store) UseApprovalGrant(_ context.Context, credential, connection, method, endpoint string, now time.Time) (*countersign.ApprovalGrant, error) {
	var used *countersign.ApprovalGrant
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		used = nil
		err := tx.Bucket(bucketApprovalGrants).ForEach(func(_, v []byte) error {
			g := new(countersign.ApprovalGrant)
			if err := decodeRecord(bucketApprovalGrants, v, g); err != nil {
				return err
			}
			if g.Credential != credential || g.Connection != connection || g.Method != method || g.Endpoint != endpoint || !g.Live(now) {
				return nil
			}
			if used == nil || g.ExpiresAt.Before(used.ExpiresAt) {
				used = g
			}
			return nil
		})
		if err != nil {
			return err
		}
		if used == nil {
			return store.ErrNotFound
		}
		used.CallsLeft--
		return put(tx, bucketApprovalGrants, []byte(used.ID), used)
	})
	if err != nil {
		return nil, fmt.Errorf("use approval grant of %s: %w", credential, err)
	}
	return used, nil
}

// ApprovalGrantsOf returns the credential's grants in ID order.
func (s *Store) ApprovalGrantsOf(_ context.Context, credential string) ([]*countersign.ApprovalGrant, error) {
	var out []*countersign.ApprovalGrant
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketApprovalGrants).ForEach(func(_, v []byte) error {
			g := new(countersign.ApprovalGrant)
			if err := decodeRecord(bucketApprovalGrants, v, g); err != nil {
				return err
			}
			if g.Credential == credential {
				out = append(out, g)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("approval grants of %s: %w", credential, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ListApprovalGrants returns a page of every grant in ID order.
func (s *Store) ListApprovalGrants(_ context.Context, q countersign.ListQuery) (countersign.Page[*countersign.ApprovalGrant], error) {
	var p countersign.Page[*countersign.ApprovalGrant]
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketApprovalGrants)
		keys, next, err := pageOf(b, "approval_grants", nil, q, false)
		if err != nil {
			return err
		}
		p.Next = next
		for _, k := range keys {
			g := new(countersign.ApprovalGrant)
			if err := decodeRecord(bucketApprovalGrants, b.Get(k), g); err != nil {
				return err
			}
			p.Items = append(p.Items, g)
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("list approval grants: %w", err)
	}
	return p, nil
}

// DeleteApprovalGrant deletes the grant and returns it.
func (s *Store) DeleteApprovalGrant(_ context.Context, id string) (*countersign.ApprovalGrant, error) {
	var g countersign.ApprovalGrant
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if err := get(tx, bucketApprovalGrants, []byte(id), &g); err != nil {
			return err
		}
		return tx.Bucket(bucketApprovalGrants).Delete([]byte(id))
	})
	if err != nil {
		return nil, fmt.Errorf("delete approval grant %s: %w", id, err)
	}
	return &g, nil
}
