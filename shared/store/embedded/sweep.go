package embedded

import (
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// Sweep deletes what DynamoDB's TTL deletes in a deployment: confirmations
// (review items among them), their task tokens, script journals (headers,
// calls, parts) and quota records whose ttl has passed, and idempotency
// records past their expiry. Readers never depend on it (effective status
// comes from the clock),
// it only keeps the file from growing. It returns how many records it deleted.
//
// The records are scanned in a read transaction, so the scan never holds
// the writer; only when something expired does a write delete it (checking
// each record again: it may have changed since), and a sweep that finds
// nothing writes nothing.
func (s *Store) Sweep(now time.Time) (int, error) {
	sweeps := []struct {
		bucket  []byte
		expired func(raw []byte) bool
	}{
		{bucketConfirmations, ttlPassed(now)},
		{bucketQuotas, ttlPassed(now)},
		{bucketScriptRuns, ttlPassed(now)},
		{bucketScriptCalls, ttlPassed(now)},
		{bucketScriptParts, ttlPassed(now)},
		{bucketTaskTokens, ttlPassed(now)},
		{bucketIdempotency, func(raw []byte) bool {
			var r struct {
				ExpiresAt time.Time `json:"expires_at"`
			}
			return json.Unmarshal(raw, &r) == nil && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
		}},
	}
	keys := make([][][]byte, len(sweeps))
	found := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		for i, sw := range sweeps {
			err := tx.Bucket(sw.bucket).ForEach(func(k, v []byte) error {
				if sw.expired(v) {
					keys[i] = append(keys[i], append([]byte(nil), k...))
					found++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	if found == 0 {
		return 0, nil
	}
	deleted := 0
	err = s.writer.Update(func(tx *bbolt.Tx) error {
		deleted = 0 // the write may run again
		for i, sw := range sweeps {
			b := tx.Bucket(sw.bucket)
			for _, k := range keys[i] {
				if v := b.Get(k); v == nil || !sw.expired(v) {
					continue
				}
				if err := b.Delete(k); err != nil {
					return err
				}
				deleted++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	return deleted, nil
}

// ttlPassed reports records whose ttl (unix seconds) is set and has passed.
func ttlPassed(now time.Time) func(raw []byte) bool {
	return func(raw []byte) bool {
		var r struct {
			TTL int64 `json:"ttl"`
		}
		return json.Unmarshal(raw, &r) == nil && r.TTL > 0 && r.TTL <= now.Unix()
	}
}
