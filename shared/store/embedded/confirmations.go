package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// CreateConfirmation stores c with Version 1; store.ErrConflict if its ID exists.
func (s *Store) CreateConfirmation(_ context.Context, c *store.Confirmation) error {
	if c.ID == "" {
		return errors.New("create confirmation: empty id")
	}
	rec := utcConfirmation(c)
	rec.Version = 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketConfirmations).Get([]byte(c.ID)) != nil {
			return store.ErrConflict
		}
		return put(tx, bucketConfirmations, []byte(c.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("create confirmation %s: %w", c.ID, err)
	}
	c.Version = 1
	return nil
}

// GetConfirmation returns a copy of the stored confirmation.
func (s *Store) GetConfirmation(_ context.Context, id string) (*store.Confirmation, error) {
	c := new(store.Confirmation)
	err := s.db.View(func(tx *bbolt.Tx) error {
		return get(tx, bucketConfirmations, []byte(id), c)
	})
	if err != nil {
		return nil, fmt.Errorf("get confirmation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConfirmation replaces the confirmation if its stored Version equals
// c.Version, and then increments c.Version.
func (s *Store) UpdateConfirmation(_ context.Context, c *store.Confirmation) error {
	rec := utcConfirmation(c)
	rec.Version = c.Version + 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketConfirmations, []byte(c.ID))
		if err != nil {
			return err
		}
		if v != c.Version {
			return fmt.Errorf("stored version %d, update from version %d: %w", v, c.Version, store.ErrConflict)
		}
		return put(tx, bucketConfirmations, []byte(c.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("update confirmation %s: %w", c.ID, err)
	}
	c.Version = rec.Version
	return nil
}

// utcConfirmation returns a shallow copy of c with its times in UTC.
func utcConfirmation(c *store.Confirmation) store.Confirmation {
	rec := *c
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	rec.DecidedAt = utcPtr(rec.DecidedAt)
	rec.RedeemBy = utcPtr(rec.RedeemBy)
	rec.RedeemedAt = utcPtr(rec.RedeemedAt)
	return rec
}
