package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

const (
	// idempotencyTTL is how long an answer is replayed (API.md: 24 hours).
	idempotencyTTL = 24 * time.Hour
	// claimTTL bounds a claim whose request died before it answered, so a
	// retry can go ahead after it.
	claimTTL = time.Minute
	// inProgressWait is how long a duplicate waits for the first to finish.
	inProgressWait = 10 * time.Second
	// maxIdempotencyKey is the longest Idempotency-Key accepted.
	maxIdempotencyKey = 255
)

// Answer is a surface's rendered answer to a call, kept for replay.
type Answer struct {
	Status  int
	Headers map[string]string
	Body    []byte
	// Transient answers are not kept, so the repeated call runs again: an
	// MCP input request, whose retry carries the person's answer.
	Transient bool
}

// RequestHash identifies a call on a surface, so the same key with another
// call is refused.
func RequestHash(surface string, c *Call) string {
	p := prepare(c)
	b, err := canon.Marshal(map[string]any{
		"surface": surface, "connection": c.Connection, "method": c.Method, "path": c.Path,
		"query": confirm.QueryArgs(c.Query), "raw_query": c.RawQuery, "body": p.arg, "intent": c.Intent.String(),
		"confirmation_id": c.ConfirmationID, "delegated": c.Delegated,
	})
	if err != nil {
		// The body is valid JSON or encoded as a string; never share a hash.
		b = []byte(err.Error() + c.Path)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Idempotent runs fn once per (credential, key): a repeat of the same call
// (same hash) returns the stored answer with replayed set, without running
// fn; the same key with another call is idempotency_key_reused; a repeat
// while the first still runs waits up to 10 s, then is
// idempotency_in_progress. Server errors (5xx) and transient answers are
// not kept, so a retry after one runs again. An empty key runs fn.
func (s *Service) Idempotent(ctx context.Context, cred *store.Credential, key, hash string, fn func() Answer) (a Answer, replayed bool, err error) {
	if key == "" {
		return fn(), false, nil
	}
	if len(key) > maxIdempotencyKey {
		return Answer{}, false, fault.New(fault.InvalidRequest, "Idempotency-Key is longer than 255 characters")
	}
	now := s.now()
	rec := &store.Idempotency{Credential: cred.ID, Key: key, RequestHash: hash, CreatedAt: now, ExpiresAt: now.Add(claimTTL)}
	deadline := now.Add(inProgressWait)
	for {
		err := s.Store.CreateIdempotency(ctx, rec)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			s.logger().ErrorContext(ctx, "idempotency record not stored", "credential", cred.ID, "error", err)
			return Answer{}, false, fault.Wrap(err, "the Idempotency-Key could not be recorded; try again")
		}
		prev, err := s.Store.GetIdempotency(ctx, cred.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // it expired in between: claim it
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "idempotency record not read", "credential", cred.ID, "error", err)
			return Answer{}, false, fault.Wrap(err, "the Idempotency-Key could not be checked; try again")
		}
		if prev.RequestHash != hash {
			return Answer{}, false, fault.New(fault.IdempotencyKeyReused, "this Idempotency-Key was used for another call")
		}
		if prev.Done {
			return Answer{Status: prev.Status, Headers: prev.Headers, Body: prev.Body}, true, nil
		}
		if s.now().After(deadline) {
			return Answer{}, false, fault.New(fault.IdempotencyInProgress, "a call with this Idempotency-Key is still running; retry later")
		}
		select {
		case <-ctx.Done():
			return Answer{}, false, fault.New(fault.IdempotencyInProgress, "a call with this Idempotency-Key is still running; retry later")
		case <-time.After(50 * time.Millisecond):
		}
	}
	a = fn()
	rec.Done, rec.Status, rec.Headers, rec.Body = true, a.Status, a.Headers, a.Body
	rec.ExpiresAt = s.now().Add(idempotencyTTL)
	if a.Status >= 500 || a.Transient {
		rec.ExpiresAt = s.now() // not kept: the retry runs again
	}
	if err := s.Store.UpdateIdempotency(context.WithoutCancel(ctx), rec); err != nil {
		s.logger().ErrorContext(ctx, "idempotency answer not stored", "credential", cred.ID, "error", err)
	}
	return a, false, nil
}
