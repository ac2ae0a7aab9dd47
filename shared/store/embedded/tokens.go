package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// tokenRecord is a confirmation's task token, kept apart from the
// confirmation as on DynamoDB.
type tokenRecord struct {
	Token string `json:"token"`
	TTL   int64  `json:"ttl"`
}

// PutTaskToken stores the task token of confirmation id, replacing any
// earlier one.
func (s *Store) PutTaskToken(_ context.Context, id, token string, ttl int64) error {
	if id == "" || token == "" {
		return errors.New("put task token: empty id or token")
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		return put(tx, bucketTaskTokens, []byte(id), tokenRecord{Token: token, TTL: ttl})
	})
	if err != nil {
		return fmt.Errorf("put task token of %s: %w", id, err)
	}
	return nil
}

// TaskToken returns the task token of confirmation id, or store.ErrNotFound.
func (s *Store) TaskToken(_ context.Context, id string) (string, error) {
	var r tokenRecord
	err := s.db.View(func(tx *bbolt.Tx) error {
		return get(tx, bucketTaskTokens, []byte(id), &r)
	})
	if err != nil {
		return "", fmt.Errorf("task token of %s: %w", id, err)
	}
	return r.Token, nil
}

// TaskTokenAlong returns ctx carrying PutTaskToken's write, to be made in
// the transaction of the next confirmation write made with ctx
// (store.Along): the token a new confirmation's workflow will hand its
// notify task, durable with the confirmation (the local engine knows it
// before the task runs). An empty id or token carries nothing (nil).
func (s *Store) TaskTokenAlong(ctx context.Context, id, token string, ttl int64) (context.Context, *store.Along) {
	if id == "" || token == "" {
		return ctx, nil
	}
	return s.TxAlong(ctx, func(tx *bbolt.Tx) (bool, error) {
		if err := put(tx, bucketTaskTokens, []byte(id), tokenRecord{Token: token, TTL: ttl}); err != nil {
			return false, fmt.Errorf("put task token of %s: %w", id, err)
		}
		return true, nil
	})
}
