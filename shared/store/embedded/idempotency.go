package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// CreateIdempotency stores r with Version 1; store.ErrConflict if a record
// for (r.Credential, r.Key) exists and has not expired.
func (s *Store) CreateIdempotency(_ context.Context, r *countersign.Idempotency) error {
	rec := utcIdempotency(r)
	rec.Version = 1
	key := idempotencyKey(r.Credential, r.Key)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		var old countersign.Idempotency
		switch err := get(tx, bucketIdempotency, key, &old); {
		case err == nil:
			if old.ExpiresAt.After(s.now()) {
				return store.ErrConflict
			}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return put(tx, bucketIdempotency, key, rec)
	})
	if err != nil {
		return fmt.Errorf("create idempotency record %s/%s: %w", r.Credential, r.Key, err)
	}
	r.Version = 1
	return nil
}

// GetIdempotency returns a copy of the record; store.ErrNotFound if there is
// none or it has expired.
func (s *Store) GetIdempotency(_ context.Context, credentialID, key string) (*countersign.Idempotency, error) {
	r := new(countersign.Idempotency)
	err := s.db.View(func(tx *bbolt.Tx) error {
		if err := get(tx, bucketIdempotency, idempotencyKey(credentialID, key), r); err != nil {
			return err
		}
		if !r.ExpiresAt.After(s.now()) {
			return fmt.Errorf("expired at %s: %w", r.ExpiresAt.Format(time.RFC3339Nano), store.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get idempotency record %s/%s: %w", credentialID, key, err)
	}
	return r, nil
}

// UpdateIdempotency replaces the record if its stored Version equals
// r.Version, and then increments r.Version.
func (s *Store) UpdateIdempotency(_ context.Context, r *countersign.Idempotency) error {
	rec := utcIdempotency(r)
	rec.Version = r.Version + 1
	key := idempotencyKey(r.Credential, r.Key)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketIdempotency, key)
		if err != nil {
			return err
		}
		if v != r.Version {
			return fmt.Errorf("stored version %d, update from version %d: %w", v, r.Version, store.ErrConflict)
		}
		return put(tx, bucketIdempotency, key, rec)
	})
	if err != nil {
		return fmt.Errorf("update idempotency record %s/%s: %w", r.Credential, r.Key, err)
	}
	r.Version = rec.Version
	return nil
}

// idempotencyKey joins credential and key unambiguously: the credential's
// length, then the credential, then the key.
func idempotencyKey(credential, key string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(credential)))
	b = append(b, credential...)
	return append(b, key...)
}

// utcIdempotency returns a shallow copy of r with its times in UTC.
func utcIdempotency(r *countersign.Idempotency) countersign.Idempotency {
	rec := *r
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	return rec
}
