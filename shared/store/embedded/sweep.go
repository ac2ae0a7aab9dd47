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
func (s *Store) Sweep(now time.Time) (int, error) {
	deleted := 0
	err := s.writer.Update(func(tx *bbolt.Tx) error {
		for _, sw := range []struct {
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
		} {
			var keys [][]byte
			b := tx.Bucket(sw.bucket)
			if err := b.ForEach(func(k, v []byte) error {
				if sw.expired(v) {
					keys = append(keys, append([]byte(nil), k...))
				}
				return nil
			}); err != nil {
				return err
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			deleted += len(keys)
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
