package embedded

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// The listings read ordered keys, never the whole bucket:
//
//	listing        bucket                      key
//	confirmations  store_confirmation_index    <list> NUL <status or ""> NUL <created_at> NUL <id>
//	credentials    store_credentials           <id>
//	audit chains   store_audit_heads           <chain>
//
// <list> is "reviews" for review items and "confirmations" for the rest;
// each confirmation has two index entries, one under its status and one
// under "" (every status), which CreateConfirmation, UpdateConfirmation and
// Sweep keep in step with the record in the same transaction. A cursor is
// the last key of its page, base64url-encoded: a cursor whose key is not in
// the listing's own range is refused (store.ErrBadCursor).

const (
	listConfirmations = "confirmations"
	listReviews       = "reviews"
)

func listOf(kind countersign.Kind) string {
	if kind == countersign.KindReview {
		return listReviews
	}
	return listConfirmations
}

// indexPrefix is the key prefix of a list's entries with status ("" for all).
func indexPrefix(list string, status countersign.Status) []byte {
	return appendIndexPrefix(make([]byte, 0, len(list)+len(status)+2), list, status)
}

func appendIndexPrefix(b []byte, list string, status countersign.Status) []byte {
	b = append(append(b, list...), 0)
	return append(append(b, status...), 0)
}

// indexTime is the layout of an index key's creation time: fixed width,
// so the keys sort by time.
const indexTime = "2006-01-02T15:04:05.000000000Z"

// indexKey is built in one allocation: a handshake builds fourteen.
func indexKey(list string, status countersign.Status, created time.Time, id string) []byte {
	b := make([]byte, 0, len(list)+len(status)+len(indexTime)+len(id)+3)
	b = appendIndexPrefix(b, list, status)
	b = append(created.UTC().AppendFormat(b, indexTime), 0)
	return append(b, id...)
}

// index writes c's index entries, deleting those of was (the record it
// replaces; nil for a new one). An entry already in place is left as it
// is: an update that keeps the status (the claim of an approved call)
// writes nothing to the index, whose pages would otherwise be rewritten
// and synced for nothing.
func index(tx *bbolt.Tx, c, was *countersign.Confirmation) error {
	b := tx.Bucket(bucketConfirmationIndex)
	list := listOf(c.Kind)
	keys := [2][]byte{indexKey(list, "", c.CreatedAt, c.ID), indexKey(list, c.Status, c.CreatedAt, c.ID)}
	if was != nil {
		wasList := listOf(was.Kind)
		for _, st := range []countersign.Status{"", was.Status} {
			k := indexKey(wasList, st, was.CreatedAt, was.ID)
			if bytes.Equal(k, keys[0]) || bytes.Equal(k, keys[1]) {
				continue
			}
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("unindex confirmation %s: %w", was.ID, err)
			}
		}
	}
	for _, k := range keys {
		if b.Get(k) != nil {
			continue
		}
		if err := b.Put(k, nil); err != nil {
			return fmt.Errorf("index confirmation %s: %w", c.ID, err)
		}
	}
	return nil
}

func unindex(tx *bbolt.Tx, c *countersign.Confirmation) error {
	b := tx.Bucket(bucketConfirmationIndex)
	list := listOf(c.Kind)
	for _, st := range []countersign.Status{"", c.Status} {
		if err := b.Delete(indexKey(list, st, c.CreatedAt, c.ID)); err != nil {
			return fmt.Errorf("unindex confirmation %s: %w", c.ID, err)
		}
	}
	return nil
}

// ListConfirmations returns a page of the confirmations (review items
// excluded) from the index bucket.
func (s *Store) ListConfirmations(_ context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	p, err := s.listConfirmations(listConfirmations, q)
	if err != nil {
		return p, fmt.Errorf("list confirmations: %w", err)
	}
	return p, nil
}

// ListReviews returns a page of the review items from the index bucket.
func (s *Store) ListReviews(_ context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	p, err := s.listConfirmations(listReviews, q)
	if err != nil {
		return p, fmt.Errorf("list reviews: %w", err)
	}
	return p, nil
}

func (s *Store) listConfirmations(list string, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	var p countersign.Page[*countersign.Confirmation]
	err := s.db.View(func(tx *bbolt.Tx) error {
		keys, next, err := pageOf(tx.Bucket(bucketConfirmationIndex), list, indexPrefix(list, q.Status), q, q.Newest)
		if err != nil {
			return err
		}
		p.Next = next
		for _, k := range keys {
			id := k[bytes.LastIndexByte(k, 0)+1:]
			c := new(countersign.Confirmation)
			if err := get(tx, bucketConfirmations, id, c); err != nil {
				// Written with its record in one transaction: an entry
				// without one is a bug, not a race.
				return fmt.Errorf("index entry %q: confirmation %s: %w", k, id, err)
			}
			p.Items = append(p.Items, c)
		}
		return nil
	})
	return p, err
}

// ListCredentials returns a page of the credentials in ID order (bbolt
// keeps keys sorted bytewise).
func (s *Store) ListCredentials(_ context.Context, q countersign.ListQuery) (countersign.Page[countersign.Credential], error) {
	var p countersign.Page[countersign.Credential]
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketCredentials)
		keys, next, err := pageOf(b, "credentials", nil, q, false)
		if err != nil {
			return err
		}
		p.Next = next
		for _, k := range keys {
			var c countersign.Credential
			if err := decodeRecord(bucketCredentials, b.Get(k), &c); err != nil {
				return err
			}
			p.Items = append(p.Items, c)
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("list credentials: %w", err)
	}
	return p, nil
}

// AuditChains returns a page of the chains with a head, sorted.
func (s *Store) AuditChains(_ context.Context, q countersign.ListQuery) (countersign.Page[string], error) {
	var p countersign.Page[string]
	err := s.db.View(func(tx *bbolt.Tx) error {
		keys, next, err := pageOf(tx.Bucket(bucketAuditHeads), "chains", nil, q, false)
		for _, k := range keys {
			p.Items = append(p.Items, string(k))
		}
		p.Next = next
		return err
	})
	if err != nil {
		return p, fmt.Errorf("list audit chains: %w", err)
	}
	return p, nil
}

// pageOf returns the keys of one page of b's keys under prefix, after the
// cursor, and the cursor of the next page ("" when none is left): the
// listing's name, a NUL and the page's last key.
func pageOf(b *bbolt.Bucket, name string, prefix []byte, q countersign.ListQuery, newest bool) (keys [][]byte, next string, err error) {
	size, err := q.PageSize()
	if err != nil {
		return nil, "", err
	}
	var after []byte
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		after, _ = bytes.CutPrefix(raw, []byte(name+"\x00"))
		if err != nil || len(after) == len(raw) || !bytes.HasPrefix(after, prefix) || len(after) == len(prefix) {
			return nil, "", fmt.Errorf("cursor %.40q: %w", q.Cursor, store.ErrBadCursor)
		}
	}
	c := b.Cursor()
	var k []byte
	step := c.Next
	switch {
	case newest:
		step = c.Prev
		if after != nil {
			k, _ = c.Seek(after)
			if k == nil {
				k, _ = c.Last()
			}
			for k != nil && bytes.Compare(k, after) >= 0 {
				k, _ = c.Prev()
			}
		} else {
			// The last key under prefix: seek past it and step back.
			k, _ = c.Seek(append(bytes.Clone(prefix), 0xff))
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
	case after != nil:
		k, _ = c.Seek(after)
		if k != nil && bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	default:
		k, _ = c.Seek(prefix)
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = step() {
		if len(keys) == size {
			return keys, base64.RawURLEncoding.EncodeToString(append([]byte(name+"\x00"), keys[len(keys)-1]...)), nil
		}
		keys = append(keys, bytes.Clone(k))
	}
	return keys, "", nil
}

// buildIndex indexes every stored confirmation: Open calls it when it
// creates the index bucket in a file written before the bucket existed.
func buildIndex(tx *bbolt.Tx) error {
	return tx.Bucket(bucketConfirmations).ForEach(func(k, v []byte) error {
		c := new(countersign.Confirmation)
		if err := decodeRecord(bucketConfirmations, v, c); err != nil {
			return fmt.Errorf("confirmation %s: %w", k, err)
		}
		return index(tx, c, nil)
	})
}
