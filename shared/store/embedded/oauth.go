package embedded

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// create stores v under key in bucket unless something is there
// (store.ErrConflict).
func create(tx *bbolt.Tx, bucket, key []byte, v any) error {
	if tx.Bucket(bucket).Get(key) != nil {
		return store.ErrConflict
	}
	return put(tx, bucket, key, v)
}

// CreateOAuthClient stores a registered client unless its ID exists.
func (s *Store) CreateOAuthClient(_ context.Context, c countersign.OAuthClient) error {
	if c.ID == "" {
		return errors.New("create oauth client: empty id")
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketOAuthClients, []byte(c.ID), c) })
	if err != nil {
		return fmt.Errorf("create oauth client %s: %w", c.ID, err)
	}
	return nil
}

// PutOAuthClient creates or replaces a client.
func (s *Store) PutOAuthClient(_ context.Context, c countersign.OAuthClient) error {
	if c.ID == "" {
		return errors.New("put oauth client: empty id")
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error { return put(tx, bucketOAuthClients, []byte(c.ID), c) })
	if err != nil {
		return fmt.Errorf("put oauth client %s: %w", c.ID, err)
	}
	return nil
}

// OAuthClient returns the client with the ID, or store.ErrNotFound.
func (s *Store) OAuthClient(_ context.Context, id string) (countersign.OAuthClient, error) {
	var c countersign.OAuthClient
	err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketOAuthClients, []byte(id), &c) })
	if err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("oauth client %s: %w", id, err)
	}
	return c, nil
}

// CreateOAuthCode stores a code by its hash unless it exists.
func (s *Store) CreateOAuthCode(_ context.Context, c countersign.OAuthCode) error {
	if c.Hash == "" {
		return errors.New("create oauth code: empty hash")
	}
	if err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketOAuthCodes, []byte(c.Hash), c) }); err != nil {
		return fmt.Errorf("create oauth code: %w", err)
	}
	return nil
}

// TakeOAuthCode reads and deletes the code in one transaction.
func (s *Store) TakeOAuthCode(_ context.Context, hash string) (countersign.OAuthCode, error) {
	var c countersign.OAuthCode
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		c = countersign.OAuthCode{} // Update may run fn more than once
		if err := get(tx, bucketOAuthCodes, []byte(hash), &c); err != nil {
			return err
		}
		return tx.Bucket(bucketOAuthCodes).Delete([]byte(hash))
	})
	if err != nil {
		return countersign.OAuthCode{}, fmt.Errorf("take oauth code: %w", err)
	}
	return c, nil
}

// CreateOAuthToken stores a token by its hash unless it exists.
func (s *Store) CreateOAuthToken(_ context.Context, t countersign.OAuthToken) error {
	if t.Hash == "" {
		return errors.New("create oauth token: empty hash")
	}
	if err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketOAuthTokens, []byte(t.Hash), t) }); err != nil {
		return fmt.Errorf("create oauth token: %w", err)
	}
	return nil
}

// OAuthToken returns the token with the hash, or store.ErrNotFound.
func (s *Store) OAuthToken(_ context.Context, hash string) (countersign.OAuthToken, error) {
	var t countersign.OAuthToken
	if err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketOAuthTokens, []byte(hash), &t) }); err != nil {
		return countersign.OAuthToken{}, fmt.Errorf("oauth token: %w", err)
	}
	return t, nil
}

// DeleteOAuthToken deletes the token with the hash; store.ErrNotFound if there is none.
func (s *Store) DeleteOAuthToken(_ context.Context, hash string) error {
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketOAuthTokens)
		if b.Get([]byte(hash)) == nil {
			return store.ErrNotFound
		}
		return b.Delete([]byte(hash))
	})
	if err != nil {
		return fmt.Errorf("delete oauth token: %w", err)
	}
	return nil
}

// CreateOAuthGrant stores a new grant with Version 1 unless its ID exists.
func (s *Store) CreateOAuthGrant(_ context.Context, g *countersign.OAuthGrant) error {
	if g.ID == "" {
		return errors.New("create oauth grant: empty id")
	}
	rec := *g
	rec.Version = 1
	if err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketOAuthGrants, []byte(g.ID), rec) }); err != nil {
		return fmt.Errorf("create oauth grant %s: %w", g.ID, err)
	}
	g.Version = 1
	return nil
}

// OAuthGrant returns the grant, or store.ErrNotFound.
func (s *Store) OAuthGrant(_ context.Context, id string) (*countersign.OAuthGrant, error) {
	var g countersign.OAuthGrant
	if err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketOAuthGrants, []byte(id), &g) }); err != nil {
		return nil, fmt.Errorf("oauth grant %s: %w", id, err)
	}
	return &g, nil
}

// UpdateOAuthGrant replaces the grant if its stored Version equals g.Version.
func (s *Store) UpdateOAuthGrant(_ context.Context, g *countersign.OAuthGrant) error {
	rec := *g
	rec.Version = g.Version + 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketOAuthGrants, []byte(g.ID))
		if err != nil {
			return err
		}
		if v != g.Version {
			return store.ErrConflict
		}
		return put(tx, bucketOAuthGrants, []byte(g.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("update oauth grant %s: %w", g.ID, err)
	}
	g.Version = rec.Version
	return nil
}

// OAuthGrants returns the grants of a credential, ordered by ID.
func (s *Store) OAuthGrants(_ context.Context, credentialID string) ([]*countersign.OAuthGrant, error) {
	var out []*countersign.OAuthGrant
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketOAuthGrants).ForEach(func(k, v []byte) error {
			var g countersign.OAuthGrant
			if err := decodeRecord(bucketOAuthGrants, v, &g); err != nil {
				return err
			}
			if g.Credential == credentialID {
				out = append(out, &g)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("oauth grants of %s: %w", credentialID, err)
	}
	slices.SortFunc(out, func(a, b *countersign.OAuthGrant) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// ListOAuthGrants returns a page of the credential's grants in ID order:
// the grants bucket is read in key order from the cursor, keeping the
// credential's (a local file, not a table: reading past the others is
// cheap).
func (s *Store) ListOAuthGrants(_ context.Context, credentialID string, q countersign.ListQuery) (countersign.Page[*countersign.OAuthGrant], error) {
	var p countersign.Page[*countersign.OAuthGrant]
	size, err := q.PageSize()
	if err != nil {
		return p, fmt.Errorf("list oauth grants of %s: %w", credentialID, err)
	}
	name := "oauth-grants\x00" + credentialID + "\x00"
	var after []byte
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		rest, ok := bytes.CutPrefix(raw, []byte(name))
		if err != nil || !ok || len(rest) == 0 {
			return p, fmt.Errorf("list oauth grants of %s: cursor %.40q: %w", credentialID, q.Cursor, store.ErrBadCursor)
		}
		after = rest
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketOAuthGrants).Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			var g countersign.OAuthGrant
			if err := decodeRecord(bucketOAuthGrants, v, &g); err != nil {
				return err
			}
			if g.Credential != credentialID {
				continue
			}
			if len(p.Items) == size {
				p.Next = base64.RawURLEncoding.EncodeToString(append([]byte(name), p.Items[size-1].ID...))
				return nil
			}
			p.Items = append(p.Items, &g)
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("list oauth grants of %s: %w", credentialID, err)
	}
	return p, nil
}
