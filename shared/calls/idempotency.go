package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

const (
	// idempotencyTTL is how long an answer is replayed (docs/api.md: 24 hours).
	idempotencyTTL = 24 * time.Hour
	// maxReply bounds the body kept for a replay; a larger one is kept
	// truncated, with a Countersign-Truncated header saying so.
	maxReply = 64 << 10
	// inProgressWait is how long a duplicate waits for the first to finish.
	inProgressWait = 10 * time.Second
	// maxIdempotencyKey is the longest Idempotency-Key accepted.
	maxIdempotencyKey = 255
)

// Reply is a surface's rendered response to a call (status, headers,
// body), kept under its Idempotency-Key for replay. A person's answer is
// confirm.Answer (mcpapi.Answer in an MCP client).
type Reply struct {
	Status  int
	Headers map[string]string
	Body    []byte
	// Retryable marks a reply that is not kept, so a retry with the key
	// runs again: one given before anything was sent upstream (an internal
	// error), or an MCP input request, whose retry carries the person's
	// answer.
	Retryable bool
}

// TruncatedHeader marks a replayed answer whose body was too large to keep
// whole: "<kept> of <length> bytes; sha256=<hex of the whole body>".
const TruncatedHeader = "Countersign-Truncated"

// bounded returns a copy of a whose body fits a store item.
func (a Reply) bounded() Reply {
	if len(a.Body) <= maxReply {
		return a
	}
	sum := sha256.Sum256(a.Body)
	h := make(map[string]string, len(a.Headers)+1)
	for k, v := range a.Headers {
		h[k] = v
	}
	h[TruncatedHeader] = fmt.Sprintf("%d of %d bytes; sha256=%s", maxReply, len(a.Body), hex.EncodeToString(sum[:]))
	a.Headers, a.Body = h, a.Body[:maxReply]
	return a
}

// RequestHash identifies a call on a surface, so the same key with another
// call is refused. A call that forwards headers (REST) is identified by
// Service.RequestHash.
func RequestHash(surface string, c *Call) string { return requestHash(surface, c, nil) }

// RequestHash is the package's RequestHash with the headers the call's
// connection binds (forward_headers): the same key with another tenant is
// another call, idempotency_key_reused, not the first tenant's answer.
func (s *Service) RequestHash(surface string, c *Call) string {
	p := &prepared{Call: c, cfg: s.Current()}
	if p.readHeaders() != nil {
		return RequestHash(surface, c) // the call is refused with 400 anyway
	}
	return requestHash(surface, c, p.headers)
}

func requestHash(surface string, c *Call, headers map[string]string) string {
	body := sha256.Sum256(c.Body)
	m := map[string]any{
		"surface": surface, "connection": c.Connection, "method": c.Method, "path": c.Path,
		"query": confirm.QueryArgs(c.Query), "raw_query": c.RawQuery, "body_sha256": hex.EncodeToString(body[:]),
		"content_type": c.ContentType, "intent": c.Intent.String(),
		"confirmation_id": c.ConfirmationID, "delegated": c.Delegated,
	}
	if len(headers) > 0 {
		m["headers"] = headers // only then: other calls hash as before
	}
	b, err := canon.Marshal(m)
	if err != nil {
		// Only strings and a map go in: this cannot fail, but never share a hash.
		b = []byte(err.Error() + c.Path)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Idempotent runs fn once per (credential, key): a repeat of the same call
// (same hash) returns the stored answer with replayed set, without running
// fn; the same key with another call is idempotency_key_reused; a repeat
// while the first still runs waits up to 10 s, then is
// idempotency_in_progress. Only a Retryable answer (nothing was sent
// upstream) is not kept, so a retry after it runs again. The claim is
// written before fn runs and lasts as long as an answer is kept: if the
// answer cannot be stored (or the process dies), the key stays in progress
// rather than letting the call run twice. An empty key runs fn.
func (s *Service) Idempotent(ctx context.Context, cred *countersign.Credential, key, hash string, fn func() Reply) (a Reply, replayed bool, err error) {
	if key == "" {
		return fn(), false, nil
	}
	if len(key) > maxIdempotencyKey {
		return Reply{}, false, fault.New(fault.InvalidRequest, "Idempotency-Key is longer than 255 characters")
	}
	now := s.now()
	rec := &countersign.Idempotency{Credential: cred.ID, Key: key, RequestHash: hash, CreatedAt: now, ExpiresAt: now.Add(idempotencyTTL)}
	deadline := now.Add(inProgressWait)
	for {
		err := s.Store.CreateIdempotency(ctx, rec)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			s.logger().ErrorContext(ctx, "idempotency record not stored", "credential", cred.ID, "error", err)
			return Reply{}, false, fault.Wrap(err, "the Idempotency-Key could not be recorded; try again")
		}
		prev, err := s.Store.GetIdempotency(ctx, cred.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // it expired in between: claim it
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "idempotency record not read", "credential", cred.ID, "error", err)
			return Reply{}, false, fault.Wrap(err, "the Idempotency-Key could not be checked; try again")
		}
		if prev.RequestHash != hash {
			return Reply{}, false, fault.New(fault.IdempotencyKeyReused, "this Idempotency-Key was used for another call")
		}
		if prev.Done {
			return Reply{Status: prev.Status, Headers: prev.Headers, Body: prev.Body}, true, nil
		}
		if s.now().After(deadline) {
			return Reply{}, false, fault.New(fault.IdempotencyInProgress, "a call with this Idempotency-Key is still running, or was cut off before its answer was kept; retry later, or use a new key")
		}
		select {
		case <-ctx.Done():
			return Reply{}, false, fault.New(fault.IdempotencyInProgress, "a call with this Idempotency-Key is still running; retry later")
		case <-time.After(50 * time.Millisecond):
		}
	}
	a = fn()
	kept := a.bounded()
	rec.Done, rec.Status, rec.Headers, rec.Body = true, kept.Status, kept.Headers, kept.Body
	rec.ExpiresAt = s.now().Add(idempotencyTTL)
	if a.Retryable {
		rec.ExpiresAt = s.now() // not kept: the retry runs again
	}
	if err := s.Store.UpdateIdempotency(context.WithoutCancel(ctx), rec); err != nil {
		s.logger().ErrorContext(ctx, "idempotency answer not stored", "credential", cred.ID, "error", err)
	}
	return a, false, nil
}
