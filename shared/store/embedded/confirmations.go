package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// CreateConfirmation stores c with Version 1; store.ErrConflict if its ID exists.
// A store.Along that ctx carries is made in the same transaction.
func (s *Store) CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	if c.ID == "" {
		return errors.New("create confirmation: empty id")
	}
	rec := utcConfirmation(c)
	rec.Version = 1
	alongs, makeAlong := s.along(ctx)
	var made []bool
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		made = nil // the write may run again
		if tx.Bucket(bucketConfirmations).Get([]byte(c.ID)) != nil {
			return store.ErrConflict
		}
		if err := put(tx, bucketConfirmations, []byte(c.ID), rec); err != nil {
			return err
		}
		if err := index(tx, &rec, nil); err != nil {
			return err
		}
		if makeAlong != nil {
			var err error
			made, err = makeAlong(tx, &rec)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create confirmation %s: %w", c.ID, err)
	}
	markAlong(alongs, made)
	c.Version = 1
	return nil
}

// GetConfirmation returns a copy of the stored confirmation.
func (s *Store) GetConfirmation(_ context.Context, id string) (*countersign.Confirmation, error) {
	c := new(countersign.Confirmation)
	err := s.db.View(func(tx *bbolt.Tx) error {
		return get(tx, bucketConfirmations, []byte(id), c)
	})
	if err != nil {
		return nil, fmt.Errorf("get confirmation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConfirmation replaces the confirmation's state if its stored
// Version equals c.Version, and then increments c.Version. The fields fixed
// at creation keep their stored values and the number of operations cannot
// change, as on DynamoDB (store.Store.UpdateConfirmation). A store.Along
// that ctx carries is made in the same transaction.
func (s *Store) UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	rec := utcConfirmation(c)
	rec.Version = c.Version + 1
	alongs, makeAlong := s.along(ctx)
	var made []bool
	var raw []byte // as written
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		made = nil // the write may run again
		data := tx.Bucket(bucketConfirmations).Get([]byte(c.ID))
		if data == nil {
			return store.ErrNotFound
		}
		stored := s.written.stored(c.ID, data)
		if stored == nil {
			stored = new(countersign.Confirmation)
			if err := decodeRecord(bucketConfirmations, data, stored); err != nil {
				return err
			}
		}
		if stored.Version != c.Version {
			return fmt.Errorf("stored version %d, update from version %d: %w", stored.Version, c.Version, store.ErrConflict)
		}
		if (stored.Operations == nil) != (rec.Operations == nil) || len(stored.Operations) != len(rec.Operations) {
			return fmt.Errorf("%d operations, the record has %d: the operations of a confirmation are fixed at creation", len(rec.Operations), len(stored.Operations))
		}
		keepFixed(&rec, stored)
		var err error
		if raw, err = putRecord(tx, bucketConfirmations, []byte(c.ID), rec); err != nil {
			return err
		}
		if err := index(tx, &rec, stored); err != nil {
			return err
		}
		if makeAlong != nil {
			var err error
			made, err = makeAlong(tx, &rec)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update confirmation %s: %w", c.ID, err)
	}
	s.written.remember(c.ID, raw, &rec)
	markAlong(alongs, made)
	c.Version = rec.Version
	return nil
}

// keepFixed copies into rec the fields of stored fixed at creation.
func keepFixed(rec, stored *countersign.Confirmation) {
	rec.ID, rec.Kind, rec.Credential, rec.Reason, rec.Asker = stored.ID, stored.Kind, stored.Credential, stored.Reason, stored.Asker
	rec.CreatedAt, rec.ExpiresAt, rec.GatewayRuns, rec.TTL = stored.CreatedAt, stored.ExpiresAt, stored.GatewayRuns, stored.TTL
	ops := make([]countersign.Operation, len(rec.Operations))
	for i, op := range rec.Operations {
		was := stored.Operations[i]
		op.Connection, op.Method, op.Path, op.Endpoint = was.Connection, was.Method, was.Path, was.Endpoint
		op.Args, op.Binding, op.ContentType, op.Payload, op.RawQuery = was.Args, was.Binding, was.ContentType, was.Payload, was.RawQuery
		op.Negotiation = was.Negotiation
		ops[i] = op
	}
	if rec.Operations != nil {
		rec.Operations = ops
	}
}

// utcConfirmation returns a shallow copy of c with its times in UTC.
func utcConfirmation(c *countersign.Confirmation) countersign.Confirmation {
	rec := *c
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	rec.DecidedAt = utcPtr(rec.DecidedAt)
	rec.RedeemBy = utcPtr(rec.RedeemBy)
	rec.RedeemedAt = utcPtr(rec.RedeemedAt)
	return rec
}
