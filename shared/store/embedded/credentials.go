package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// PutCredential creates or replaces the credential and moves its key hash
// index entry.
func (s *Store) PutCredential(_ context.Context, c store.Credential) error {
	if c.ID == "" {
		return errors.New("put credential: empty id")
	}
	c = utcCredential(c)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var old store.Credential
		switch err := get(tx, bucketCredentials, []byte(c.ID), &old); {
		case err == nil:
			if old.KeyHash != "" && old.KeyHash != c.KeyHash {
				if err := tx.Bucket(bucketCredentialKey).Delete([]byte(old.KeyHash)); err != nil {
					return fmt.Errorf("unindex old key hash: %w", err)
				}
			}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := put(tx, bucketCredentials, []byte(c.ID), c); err != nil {
			return err
		}
		if c.KeyHash != "" {
			if err := tx.Bucket(bucketCredentialKey).Put([]byte(c.KeyHash), []byte(c.ID)); err != nil {
				return fmt.Errorf("index key hash: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put credential %s: %w", c.ID, err)
	}
	return nil
}

// CredentialByKeyHash looks the credential up through the key hash index.
func (s *Store) CredentialByKeyHash(_ context.Context, keyHash string) (store.Credential, error) {
	var c store.Credential
	err := s.db.View(func(tx *bbolt.Tx) error {
		if keyHash == "" {
			return store.ErrNotFound
		}
		id := tx.Bucket(bucketCredentialKey).Get([]byte(keyHash))
		if id == nil {
			return store.ErrNotFound
		}
		return get(tx, bucketCredentials, id, &c)
	})
	if err != nil {
		// The hash identifies a key: log-safe, but keep only a prefix in errors.
		return store.Credential{}, fmt.Errorf("credential by key hash %.8s…: %w", keyHash, err)
	}
	return c, nil
}

// SetLastClient records the client on the credential; store.ErrNotFound if
// the credential does not exist.
func (s *Store) SetLastClient(_ context.Context, credentialID string, cl store.Client) error {
	cl.SeenAt = cl.SeenAt.UTC()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var c store.Credential
		if err := get(tx, bucketCredentials, []byte(credentialID), &c); err != nil {
			return err
		}
		c.LastClient = &cl
		return put(tx, bucketCredentials, []byte(credentialID), c)
	})
	if err != nil {
		return fmt.Errorf("set last client of credential %s: %w", credentialID, err)
	}
	return nil
}

func utcCredential(c store.Credential) store.Credential {
	if c.LastClient != nil {
		cl := *c.LastClient
		cl.SeenAt = cl.SeenAt.UTC()
		c.LastClient = &cl
	}
	return c
}
