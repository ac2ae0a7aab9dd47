package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/countersign/countersign/shared/canon"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/store"
)

const (
	// idempotencyTTL is how long a response is replayed (API.md: 24 hours).
	idempotencyTTL = 24 * time.Hour
	// claimTTL bounds a claim whose request died before it answered, so a
	// retry can go ahead after it.
	claimTTL = time.Minute
	// inProgressWait is how long a duplicate waits for the first to finish.
	inProgressWait = 10 * time.Second
)

// requestHash identifies a call, so the same key with another call is refused.
func requestHash(surface string, c *call) string {
	b, err := canon.Marshal(map[string]any{
		"surface": surface, "connection": c.tier.Connection, "method": c.tier.Method, "path": c.tier.Path,
		"query": confirm.QueryArgs(c.tier.Query), "raw_query": c.rawQuery, "body": c.arg, "intent": c.tier.Intent.String(),
		"confirmation_id": c.confirmationID, "delegated": c.tier.Delegated,
	})
	if err != nil {
		// The body was validated JSON; this cannot happen, but never share a hash.
		b = []byte(err.Error() + c.tier.Path)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// idempotent runs fn once per (credential, Idempotency-Key): a repeat of the
// same call answers the stored response without calling anything again; the
// same key with another call is refused with 422. Server errors are not kept,
// so a retry after one runs again.
func (g *Gateway) idempotent(ctx context.Context, cred *store.Credential, surface string, c *call, fn func() Response) Response {
	if c.idempotencyKey == "" {
		return fn()
	}
	if len(c.idempotencyKey) > 255 {
		return codeError("invalid_request", "Idempotency-Key is longer than 255 characters")
	}
	hash := requestHash(surface, c)
	now := g.now()
	rec := &store.Idempotency{Credential: cred.ID, Key: c.idempotencyKey, RequestHash: hash, CreatedAt: now, ExpiresAt: now.Add(claimTTL)}
	deadline := now.Add(inProgressWait)
	for {
		err := g.Store.CreateIdempotency(ctx, rec)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			g.logger().Error("idempotency record not stored", "credential", cred.ID, "error", err)
			return codeError("internal", "internal error")
		}
		prev, err := g.Store.GetIdempotency(ctx, cred.ID, c.idempotencyKey)
		if errors.Is(err, store.ErrNotFound) {
			continue // it expired in between: claim it
		}
		if err != nil {
			return codeError("internal", "internal error")
		}
		if prev.RequestHash != hash {
			return codeError("idempotency_key_reused", "this Idempotency-Key was used for another call")
		}
		if prev.Done {
			return replay(prev)
		}
		if g.now().After(deadline) {
			return codeError("idempotency_in_progress", "a call with this Idempotency-Key is still running; retry later")
		}
		select {
		case <-ctx.Done():
			return codeError("idempotency_in_progress", "a call with this Idempotency-Key is still running; retry later")
		case <-time.After(50 * time.Millisecond):
		}
	}
	resp := fn()
	rec.Done, rec.Status, rec.Headers = true, resp.StatusCode, resp.Headers
	rec.Body = []byte(resp.Body)
	if resp.IsBase64Encoded {
		rec.Body, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	rec.ExpiresAt = g.now().Add(idempotencyTTL)
	if resp.StatusCode >= 500 {
		rec.ExpiresAt = g.now() // not kept: the retry runs again
	}
	if err := g.Store.UpdateIdempotency(context.WithoutCancel(ctx), rec); err != nil {
		g.logger().Error("idempotency response not stored", "credential", cred.ID, "error", err)
	}
	return resp
}

func replay(r *store.Idempotency) Response {
	resp := rawResponse(r.Status, map[string]string{}, r.Body)
	for k, v := range r.Headers {
		resp.Headers[k] = v
	}
	resp.Headers["Idempotent-Replayed"] = "true"
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	return resp
}
