package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/store"
)

// Sessions are kept under the person and the session ID's hash, so that a
// person's sessions are one range of keys:
//
//	store_sessions  <person> NUL <id>  → JSON
//
// The sweep deletes them past their expiry.
func sessionKey(person, id string) []byte { return []byte(person + "\x00" + id) }

func checkSessionKey(person, id string) error {
	if person == "" || id == "" || strings.ContainsRune(person, 0) || strings.ContainsRune(id, 0) {
		return errors.New("empty or malformed person or session id")
	}
	return nil
}

// CreateSession stores a new session unless the person has one with its ID.
func (s *Store) CreateSession(_ context.Context, sess store.Session) error {
	if err := checkSessionKey(sess.Person, sess.ID); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	if err := s.writer.Update(func(tx *bbolt.Tx) error { return create(tx, bucketSessions, sessionKey(sess.Person, sess.ID), sess) }); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// Session returns the person's session with the ID, or store.ErrNotFound.
func (s *Store) Session(_ context.Context, person, id string) (store.Session, error) {
	var sess store.Session
	if err := checkSessionKey(person, id); err != nil {
		return sess, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	if err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketSessions, sessionKey(person, id), &sess) }); err != nil {
		return store.Session{}, fmt.Errorf("session: %w", err)
	}
	return sess, nil
}

// EndSession deletes the person's session with the ID.
func (s *Store) EndSession(_ context.Context, person, id string) error {
	if err := checkSessionKey(person, id); err != nil {
		return fmt.Errorf("end session: %w", store.ErrNotFound)
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b.Get(sessionKey(person, id)) == nil {
			return store.ErrNotFound
		}
		return b.Delete(sessionKey(person, id))
	})
	if err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// EndSessions deletes every session of the person in one transaction.
func (s *Store) EndSessions(_ context.Context, person string) (int, error) {
	if person == "" || strings.ContainsRune(person, 0) {
		return 0, errors.New("end sessions: empty or malformed person")
	}
	n := 0
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		n = 0 // Update may run fn more than once
		var err error
		n, err = endSessions(tx, person)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("end sessions: %w", err)
	}
	return n, nil
}

// endSessions deletes the person's sessions within tx.
func endSessions(tx *bbolt.Tx, person string) (int, error) {
	b := tx.Bucket(bucketSessions)
	prefix := []byte(person + "\x00")
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
