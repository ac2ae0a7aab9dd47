package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Script journals live in three buckets: headers by run ID, calls by
// "<run ID>/<index as 8 digits>" and parts by "<run ID>/<part key>", so
// that a run's calls and parts are contiguous and in order. Run IDs never
// contain "/".

// CreateScriptRun stores r with Version 1; store.ErrConflict if its ID exists.
func (s *Store) CreateScriptRun(_ context.Context, r *countersign.ScriptRun) error {
	if r.ID == "" {
		return errors.New("create script run: empty id")
	}
	rec := utcScriptRun(r)
	rec.Version = 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketScriptRuns).Get([]byte(r.ID)) != nil {
			return store.ErrConflict
		}
		return put(tx, bucketScriptRuns, []byte(r.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("create script run %s: %w", r.ID, err)
	}
	r.Version = 1
	return nil
}

// GetScriptRun returns a copy of the stored header.
func (s *Store) GetScriptRun(_ context.Context, id string) (*countersign.ScriptRun, error) {
	r := new(countersign.ScriptRun)
	err := s.db.View(func(tx *bbolt.Tx) error {
		return get(tx, bucketScriptRuns, []byte(id), r)
	})
	if err != nil {
		return nil, fmt.Errorf("get script run %s: %w", id, err)
	}
	return r, nil
}

// UpdateScriptRun replaces the header if its stored Version equals
// r.Version, and then increments r.Version.
func (s *Store) UpdateScriptRun(_ context.Context, r *countersign.ScriptRun) error {
	rec := utcScriptRun(r)
	rec.Version = r.Version + 1
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		v, err := storedVersion(tx, bucketScriptRuns, []byte(r.ID))
		if err != nil {
			return err
		}
		if v != r.Version {
			return fmt.Errorf("stored version %d, update from version %d: %w", v, r.Version, store.ErrConflict)
		}
		return put(tx, bucketScriptRuns, []byte(r.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("update script run %s: %w", r.ID, err)
	}
	r.Version = rec.Version
	return nil
}

// PutScriptCall creates the call (Version 0) or replaces it if its stored
// Version equals c.Version, and then increments c.Version.
func (s *Store) PutScriptCall(_ context.Context, c *countersign.ScriptCall) error {
	if c.RunID == "" || c.Index < 0 {
		return fmt.Errorf("put script call: run id %q, index %d", c.RunID, c.Index)
	}
	rec := *c
	rec.Version = c.Version + 1
	key := scriptCallKey(c.RunID, c.Index)
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		if c.Version == 0 {
			if tx.Bucket(bucketScriptCalls).Get(key) != nil {
				return store.ErrConflict
			}
			return put(tx, bucketScriptCalls, key, rec)
		}
		v, err := storedVersion(tx, bucketScriptCalls, key)
		if err != nil {
			return err
		}
		if v != c.Version {
			return fmt.Errorf("stored version %d, update from version %d: %w", v, c.Version, store.ErrConflict)
		}
		return put(tx, bucketScriptCalls, key, rec)
	})
	if err != nil {
		return fmt.Errorf("put script call %s #%d: %w", c.RunID, c.Index, err)
	}
	c.Version = rec.Version
	return nil
}

// ScriptCalls returns the run's calls in Index order.
func (s *Store) ScriptCalls(_ context.Context, runID string) ([]*countersign.ScriptCall, error) {
	out := []*countersign.ScriptCall{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return scan(tx, bucketScriptCalls, []byte(runID+"/"), func(v []byte) error {
			c := new(countersign.ScriptCall)
			if err := decodeRecord(bucketScriptCalls, v, c); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("script calls of %s: %w", runID, err)
	}
	return out, nil
}

// PutScriptPart creates or replaces the part.
func (s *Store) PutScriptPart(_ context.Context, p *countersign.ScriptPart) error {
	if p.RunID == "" || p.Key == "" {
		return fmt.Errorf("put script part: run id %q, key %q", p.RunID, p.Key)
	}
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		return put(tx, bucketScriptParts, []byte(p.RunID+"/"+p.Key), p)
	})
	if err != nil {
		return fmt.Errorf("put script part %s %s: %w", p.RunID, p.Key, err)
	}
	return nil
}

// ScriptParts returns the run's parts whose key starts with prefix, in key order.
func (s *Store) ScriptParts(_ context.Context, runID, prefix string) ([]*countersign.ScriptPart, error) {
	out := []*countersign.ScriptPart{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return scan(tx, bucketScriptParts, []byte(runID+"/"+prefix), func(v []byte) error {
			p := new(countersign.ScriptPart)
			if err := decodeRecord(bucketScriptParts, v, p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("script parts of %s %q: %w", runID, prefix, err)
	}
	return out, nil
}

// scan calls fn with each value whose key starts with prefix, in key order.
func scan(tx *bbolt.Tx, bucket, prefix []byte, fn func(v []byte) error) error {
	c := tx.Bucket(bucket).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// scriptCallKey orders a run's calls by index.
func scriptCallKey(runID string, index int) []byte {
	return fmt.Appendf(nil, "%s/%08d", runID, index)
}

// utcScriptRun returns a shallow copy of r with its times in UTC.
func utcScriptRun(r *countersign.ScriptRun) countersign.ScriptRun {
	rec := *r
	rec.StartedAt = rec.StartedAt.UTC()
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.LeaseUntil = utcPtr(rec.LeaseUntil)
	rec.FinishedAt = utcPtr(rec.FinishedAt)
	if c := rec.Credential.LastClient; c != nil {
		cl := *c
		cl.SeenAt = cl.SeenAt.UTC()
		rec.Credential.LastClient = &cl
	}
	return rec
}
