package embedded

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Passkeys are keyed by their person, then their credential id: a
// person's passkeys are one prefix of the bucket. Ceremonies are keyed by
// their id and swept once expired.
var (
	bucketPasskeys          = []byte("store_passkeys")           // personKey "/" credential id → JSON
	bucketPasskeyCeremonies = []byte("store_passkey_ceremonies") // ceremony id → JSON
)

// personPrefix is the key prefix of a person's passkeys: the SHA-256 of
// issuer and subject (neither can hold the other's separator after it).
func personPrefix(issuer, subject string) []byte {
	sum := sha256.Sum256([]byte(issuer + "\n" + subject))
	return []byte(hex.EncodeToString(sum[:]) + "/")
}

func passkeyKey(issuer, subject, id string) []byte {
	return append(personPrefix(issuer, subject), id...)
}

// CreatePasskey stores a new passkey with Version 1 unless its person has
// one with its ID.
func (s *Store) CreatePasskey(_ context.Context, p *countersign.Passkey) error {
	if p.ID == "" || p.Subject == "" {
		return errors.New("create passkey: empty id or subject")
	}
	rec := *p
	rec.Version = 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		return create(tx, bucketPasskeys, passkeyKey(p.Issuer, p.Subject, p.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("create passkey: %w", err)
	}
	p.Version = 1
	return nil
}

// PersonPasskeys returns the person's passkeys, ordered by ID.
func (s *Store) PersonPasskeys(_ context.Context, issuer, subject string) ([]*countersign.Passkey, error) {
	out := []*countersign.Passkey{}
	prefix := personPrefix(issuer, subject)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketPasskeys).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var p countersign.Passkey
			if err := decodeRecord(bucketPasskeys, v, &p); err != nil {
				return err
			}
			out = append(out, &p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("passkeys of %s: %w", subject, err)
	}
	return out, nil
}

// UpdatePasskey replaces the passkey if its stored Version equals p.Version.
func (s *Store) UpdatePasskey(_ context.Context, p *countersign.Passkey) error {
	rec := *p
	rec.Version = p.Version + 1
	key := passkeyKey(p.Issuer, p.Subject, p.ID)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketPasskeys, key)
		if err != nil {
			return err
		}
		if v != p.Version {
			return store.ErrConflict
		}
		return put(tx, bucketPasskeys, key, rec)
	})
	if err != nil {
		return fmt.Errorf("update passkey: %w", err)
	}
	p.Version = rec.Version
	return nil
}

// DeletePasskey removes the person's passkey id.
func (s *Store) DeletePasskey(_ context.Context, issuer, subject, id string) error {
	key := passkeyKey(issuer, subject, id)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPasskeys)
		if b.Get(key) == nil {
			return store.ErrNotFound
		}
		return b.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("delete passkey: %w", err)
	}
	return nil
}

// CreatePasskeyCeremony stores a ceremony unless its ID exists.
func (s *Store) CreatePasskeyCeremony(_ context.Context, c countersign.PasskeyCeremony) error {
	if c.ID == "" {
		return errors.New("create passkey ceremony: empty id")
	}
	if err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketPasskeyCeremonies, []byte(c.ID), c) }); err != nil {
		return fmt.Errorf("create passkey ceremony: %w", err)
	}
	return nil
}

// TakePasskeyCeremony reads and deletes the ceremony in one transaction.
func (s *Store) TakePasskeyCeremony(_ context.Context, id string) (countersign.PasskeyCeremony, error) {
	var c countersign.PasskeyCeremony
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		c = countersign.PasskeyCeremony{} // Update may run fn more than once
		if err := get(tx, bucketPasskeyCeremonies, []byte(id), &c); err != nil {
			return err
		}
		return tx.Bucket(bucketPasskeyCeremonies).Delete([]byte(id))
	})
	if err != nil {
		return countersign.PasskeyCeremony{}, fmt.Errorf("take passkey ceremony: %w", err)
	}
	return c, nil
}
