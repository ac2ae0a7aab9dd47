package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
)

// Sweep deletes what DynamoDB's TTL deletes in a deployment: confirmations
// (review items among them), their task tokens, script journals (headers,
// calls, parts), quota records with their uses, and audit records whose ttl has passed
// (heads stay; see sweepAudit), and idempotency records and the
// authorization server's codes, tokens, grants and clients, and people's
// sessions, past their expiry. Readers never depend on it (effective status
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
		{bucketIdempotency, expiresAtPassed(now)},
		{bucketOAuthCodes, expiresAtPassed(now)},
		{bucketOAuthTokens, expiresAtPassed(now)},
		{bucketOAuthGrants, expiresAtPassed(now)},
		{bucketOAuthClients, expiresAtPassed(now)}, // metadata documents' copies, and registered clients nobody used
		{bucketCounts, ttlPassed(now)},
		{bucketApprovalGrants, expiresAtPassed(now)},
		{bucketSessions, expiresAtPassed(now)},
		{bucketPasskeyCeremonies, expiresAtPassed(now)},
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
	audits, err := s.sweepAudit(now)
	if err != nil {
		return audits, err
	}
	if found == 0 {
		return audits, nil
	}
	deleted := 0
	err = s.writer.Update(func(tx *bbolt.Tx) error {
		deleted = 0 // the write may run again
		for i, sw := range sweeps {
			b := tx.Bucket(sw.bucket)
			for _, k := range keys[i] {
				v := b.Get(k)
				if v == nil || !sw.expired(v) {
					continue
				}
				if bytes.Equal(sw.bucket, bucketConfirmations) {
					c := new(countersign.Confirmation)
					if err := decodeRecord(bucketConfirmations, v, c); err != nil {
						return err
					}
					if err := unindex(tx, c); err != nil {
						return err
					}
				}
				if bytes.Equal(sw.bucket, bucketQuotas) {
					if err := dropQuotaUses(tx, k); err != nil {
						return err
					}
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
		return audits, fmt.Errorf("sweep: %w", err)
	}
	return audits + deleted, nil
}

// sweepAuditBatch bounds the audit records one write transaction deletes,
// so a sweep after a long pause never holds the writer for long.
const sweepAuditBatch = 5000

// sweepAudit deletes the audit records whose ttl has passed, in batches of
// at most sweepAuditBatch per write. Along a chain the ttl never decreases
// (package audit), so the scan of each chain stops at its first record
// that has not expired: a chain of permanent records costs one read, and
// a sweep reads what it deletes plus one record per chain. Heads stay.
func (s *Store) sweepAudit(now time.Time) (int, error) {
	expired := ttlPassed(now)
	deleted := 0
	for range 1 << 20 { // bounded: each round deletes a batch or ends the sweep
		var keys [][]byte
		err := s.db.View(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucketAudit).Cursor()
			for k, v := c.First(); k != nil && len(keys) < sweepAuditBatch; {
				if expired(v) {
					keys = append(keys, append([]byte(nil), k...))
					k, v = c.Next()
					continue
				}
				i := bytes.IndexByte(k, 0)
				if i < 0 {
					k, v = c.Next()
					continue
				}
				k, v = c.Seek(append(append([]byte(nil), k[:i]...), 1)) // the next chain
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			if err != nil {
				err = fmt.Errorf("sweep audit records: %w", err)
			}
			return deleted, err
		}
		err = s.writer.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketAudit)
			for _, k := range keys {
				if v := b.Get(k); v != nil && expired(v) {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return deleted, fmt.Errorf("sweep audit records: %w", err)
		}
		deleted += len(keys)
		if len(keys) < sweepAuditBatch {
			return deleted, nil
		}
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

// expiresAtPassed reports a record whose expires_at is set and passed.
func expiresAtPassed(now time.Time) func(raw []byte) bool {
	return func(raw []byte) bool {
		var r struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		return json.Unmarshal(raw, &r) == nil && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
	}
}
