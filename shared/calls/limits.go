package calls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// limits are the configured limits, with the defaults for any left zero
// (a configuration built by hand in a test).
func (s *Service) limits() config.Limits {
	l := s.Current().Settings.Limits
	d := config.DefaultLimits
	if l.CallsPerMinute <= 0 {
		l.CallsPerMinute = d.CallsPerMinute
	}
	if l.PendingConfirmations <= 0 {
		l.PendingConfirmations = d.PendingConfirmations
	}
	if l.PendingReviews <= 0 {
		l.PendingReviews = d.PendingReviews
	}
	if l.StoredBodyBytes <= 0 {
		l.StoredBodyBytes = d.StoredBodyBytes
	}
	if l.ReviewRetentionDays <= 0 {
		l.ReviewRetentionDays = d.ReviewRetentionDays
	}
	return l
}

// rateLimiter is a token bucket per credential: CallsPerMinute tokens,
// refilled evenly over a minute. It lives in the process: exact on the local
// stack, per instance on Lambda (docs/configuration.md, settings.json).
type rateLimiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes a token for credential, or says how many seconds until one
// is available.
func (r *rateLimiter) allow(credential string, perMinute int, now time.Time) (ok bool, retryAfter int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[string]*bucket{}
	}
	rate := float64(perMinute) / 60 // tokens per second
	b := r.buckets[credential]
	if b == nil {
		b = &bucket{tokens: float64(perMinute), last: now}
		r.buckets[credential] = b
	}
	b.tokens = math.Min(float64(perMinute), b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		r.sweep(now, perMinute)
		return true, 0
	}
	return false, max(1, int(math.Ceil((1-b.tokens)/rate)))
}

// sweep drops buckets that refilled completely, at most once a minute.
func (r *rateLimiter) sweep(now time.Time, perMinute int) {
	if now.Sub(r.swept) < time.Minute {
		return
	}
	r.swept = now
	for k, b := range r.buckets {
		if now.Sub(b.last) > time.Minute && b.tokens+now.Sub(b.last).Seconds()*float64(perMinute)/60 >= float64(perMinute) {
			delete(r.buckets, k)
		}
	}
}

// rateLimit takes one call of the credential's per-minute allowance.
func (s *Service) rateLimit(cred *countersign.Credential) error {
	perMinute := s.limits().CallsPerMinute
	if ok, retry := s.rate.allow(cred.ID, perMinute, s.now()); !ok {
		return &fault.Error{Code: fault.RateLimited, RetryAfter: retry,
			Reason: fmt.Sprintf("credential %s made more than %d calls in a minute; retry in %d s", cred.ID, perMinute, retry)}
	}
	return nil
}

// takeSlot counts one use of a stored per-credential limit for window, or
// refuses with rate_limited when limit uses are still counted. The store
// counts (store.Store.TakeQuota): exactly, across every instance, and
// without funnelling a credential's calls through one record.
func (s *Service) takeSlot(ctx context.Context, key string, window time.Duration, limit int, what string) error {
	now := s.now()
	err := s.Store.TakeQuota(ctx, key, limit, now, now.Add(window))
	if err == nil {
		return nil
	}
	if fe := quotaFull(err, now, limit, what); fe != nil {
		return fe
	}
	s.logger().ErrorContext(ctx, "quota not taken", "quota", key, "error", err)
	return fault.Wrap(err, "the credential's limits could not be checked; try again")
}

// quotaFull is the rate_limited refusal of a full quota (err holds a
// *store.QuotaFullError), or nil.
func quotaFull(err error, now time.Time, limit int, what string) error {
	var full *store.QuotaFullError
	if !errors.As(err, &full) {
		return nil
	}
	retry := max(1, int(math.Ceil(full.Free.Sub(now).Seconds())))
	return &fault.Error{Code: fault.RateLimited, RetryAfter: retry,
		Reason: fmt.Sprintf("%s: the limit of %d is reached; retry in %d s", what, limit, retry)}
}

// quotaAlong is a store that counts a use of a quota in the transaction
// of the confirmation it counts (store/embedded).
type quotaAlong interface {
	TakeQuotaAlong(ctx context.Context, key string, limit int, now, until time.Time) (context.Context, *store.Along)
}

// reserveAlong is Reserve for a confirmation about to be created with the
// returned context: where the store can, the use is counted in the
// transaction that creates it (one commit), and done, called with the
// creation's error, returns the refusal of a full quota (or nil) and
// counts the use on its own if the store did not (the caller then ends
// the confirmation when that is refused). Elsewhere, or when the store
// carries nothing, it reserves at once, as Reserve does.
func (s *Service) reserveAlong(ctx context.Context, cred *countersign.Credential, kind countersign.Kind) (context.Context, func(ctx context.Context, created error) error, error) {
	key, window, limit, what := "confirmations:"+cred.ID, s.Confirm.Wait(kind), s.limits().PendingConfirmations, "confirmations pending for "+cred.ID
	none := func(context.Context, error) error { return nil }
	qa, ok := s.Store.(quotaAlong)
	if !ok {
		return ctx, none, s.takeSlot(ctx, key, window, limit, what)
	}
	now := s.now()
	actx, along := qa.TakeQuotaAlong(ctx, key, limit, now, now.Add(window))
	if along == nil {
		return ctx, none, s.takeSlot(ctx, key, window, limit, what)
	}
	return actx, func(ctx context.Context, created error) error {
		switch {
		case created != nil:
			return quotaFull(created, now, limit, what)
		case along.Done():
			return nil
		}
		return s.takeSlot(ctx, key, window, limit, what)
	}, nil
}

// Reserve counts a confirmation of kind about to be created for cred
// against the credential's pending_confirmations limit (for as long as the
// confirmation can stay pending), or refuses with rate_limited. Every path
// that creates a confirmation calls it first.
func (s *Service) Reserve(ctx context.Context, cred *countersign.Credential, kind countersign.Kind) error {
	return s.takeSlot(ctx, "confirmations:"+cred.ID, s.Confirm.Wait(kind), s.limits().PendingConfirmations,
		"confirmations pending for "+cred.ID)
}

// holdable refuses a body too large to be held for a person.
func (s *Service) holdable(p *prepared) error {
	if limit := s.limits().StoredBodyBytes; len(p.Body) > limit {
		return fault.Errorf(fault.PayloadTooLarge, "the body (%d bytes) is too large to be held for approval or review: the limit is %d bytes", len(p.Body), limit)
	}
	return nil
}
