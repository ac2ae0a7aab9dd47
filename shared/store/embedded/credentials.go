package embedded

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// PutCredential creates or replaces the credential and moves its key hash
// index entry.
func (s *Store) PutCredential(_ context.Context, c countersign.Credential) error {
	if c.ID == "" {
		return errors.New("put credential: empty id")
	}
	c = utcCredential(c)
	err := s.writeCredentials(func(tx *bbolt.Tx) error {
		var old countersign.Credential
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
		return putIndexed(tx, c)
	})
	if err != nil {
		return fmt.Errorf("put credential %s: %w", c.ID, err)
	}
	return nil
}

// UpdateCredential replaces the credential only if it is still stored
// with the same key hash: store.ErrNotFound when it is gone (revoked),
// store.ErrConflict when its key changed (revoked and made again), so a
// change racing a revocation never brings the old key back.
func (s *Store) UpdateCredential(_ context.Context, c countersign.Credential) error {
	if c.ID == "" {
		return errors.New("update credential: empty id")
	}
	c = utcCredential(c)
	err := s.writeCredentials(func(tx *bbolt.Tx) error {
		var old countersign.Credential
		if err := get(tx, bucketCredentials, []byte(c.ID), &old); err != nil {
			return err
		}
		if old.KeyHash != c.KeyHash {
			return store.ErrConflict
		}
		return putIndexed(tx, c)
	})
	if err != nil {
		return fmt.Errorf("update credential %s: %w", c.ID, err)
	}
	return nil
}

// putIndexed writes a credential and its key hash index entry.
func putIndexed(tx *bbolt.Tx, c countersign.Credential) error {
	if err := put(tx, bucketCredentials, []byte(c.ID), c); err != nil {
		return err
	}
	if c.KeyHash != "" {
		if err := tx.Bucket(bucketCredentialKey).Put([]byte(c.KeyHash), []byte(c.ID)); err != nil {
			return fmt.Errorf("index key hash: %w", err)
		}
	}
	return nil
}

// writeCredentials is the only way the credential buckets are written:
// once fn's commit is visible (or failed), what CredentialByKeyHash found
// before is read again (credcache.go).
func (s *Store) writeCredentials(fn func(*bbolt.Tx) error) error {
	defer s.creds.changed()
	return s.writer.Update(fn)
}

// CredentialByKeyHash looks the credential up through the key hash index,
// or returns what the last lookup of keyHash found when no credential was
// written since (credcache.go).
func (s *Store) CredentialByKeyHash(_ context.Context, keyHash string) (countersign.Credential, error) {
	gen := s.creds.gen.Load() // before the transaction: see credentialCache
	if c, ok := s.creds.found(keyHash, gen); ok {
		return c, nil
	}
	var c countersign.Credential
	err := s.db.View(func(tx *bbolt.Tx) error {
		if keyHash == "" {
			return store.ErrNotFound
		}
		id := tx.Bucket(bucketCredentialKey).Get([]byte(keyHash))
		if id == nil {
			return store.ErrNotFound
		}
		data := tx.Bucket(bucketCredentials).Get(id)
		if data == nil {
			return store.ErrNotFound
		}
		return s.creds.decode(id, data, &c)
	})
	if err != nil {
		// The hash identifies a key: log-safe, but keep only a prefix in errors.
		return countersign.Credential{}, fmt.Errorf("credential by key hash %.8s…: %w", keyHash, err)
	}
	s.creds.keep(keyHash, gen, c)
	return c, nil
}

// SetLastClient records the client on the credential; store.ErrNotFound if
// the credential does not exist.
func (s *Store) SetLastClient(_ context.Context, credentialID string, cl countersign.Client) error {
	cl.SeenAt = cl.SeenAt.UTC()
	err := s.writeCredentials(func(tx *bbolt.Tx) error {
		var c countersign.Credential
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

func utcCredential(c countersign.Credential) countersign.Credential {
	if c.LastClient != nil {
		cl := *c.LastClient
		cl.SeenAt = cl.SeenAt.UTC()
		c.LastClient = &cl
	}
	return c
}

// CreateCredential stores c unless a credential with its ID exists
// (store.ErrConflict) or its key hash already names another credential
// (store.ErrConflict too: a key identifies one credential).
func (s *Store) CreateCredential(_ context.Context, c countersign.Credential) error {
	if c.ID == "" {
		return errors.New("create credential: empty id")
	}
	c = utcCredential(c)
	err := s.writeCredentials(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketCredentials).Get([]byte(c.ID)) != nil {
			return store.ErrConflict
		}
		if c.KeyHash != "" {
			if other := tx.Bucket(bucketCredentialKey).Get([]byte(c.KeyHash)); other != nil {
				return fmt.Errorf("the key is already the key of credential %s: %w", other, store.ErrConflict)
			}
		}
		return putIndexed(tx, c)
	})
	if err != nil {
		return fmt.Errorf("create credential %s: %w", c.ID, err)
	}
	return nil
}

// GetCredential returns the credential with the ID.
func (s *Store) GetCredential(_ context.Context, id string) (countersign.Credential, error) {
	var c countersign.Credential
	err := s.db.View(func(tx *bbolt.Tx) error {
		return get(tx, bucketCredentials, []byte(id), &c)
	})
	if err != nil {
		return countersign.Credential{}, fmt.Errorf("get credential %s: %w", id, err)
	}
	return c, nil
}

// DeleteCredential removes the credential, its key hash index entry and
// the sessions of the person it names in one transaction.
func (s *Store) DeleteCredential(_ context.Context, id string) error {
	err := s.writeCredentials(func(tx *bbolt.Tx) error {
		var c countersign.Credential
		if err := get(tx, bucketCredentials, []byte(id), &c); err != nil {
			return err
		}
		keys := tx.Bucket(bucketCredentialKey)
		if c.KeyHash != "" && string(keys.Get([]byte(c.KeyHash))) == id {
			if err := keys.Delete([]byte(c.KeyHash)); err != nil {
				return fmt.Errorf("unindex key hash: %w", err)
			}
		}
		if err := tx.Bucket(bucketCredentials).Delete([]byte(id)); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if c.Subject != "" {
			if _, err := endSessions(tx, store.PersonKey(c.Issuer, c.Subject)); err != nil {
				return fmt.Errorf("end the person's sessions: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete credential %s: %w", id, err)
	}
	return nil
}
