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
	var full *store.QuotaFullError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &full):
		retry := max(1, int(math.Ceil(full.Free.Sub(now).Seconds())))
		return &fault.Error{Code: fault.RateLimited, RetryAfter: retry,
			Reason: fmt.Sprintf("%s: the limit of %d is reached; retry in %d s", what, limit, retry)}
	}
	s.logger().ErrorContext(ctx, "quota not taken", "quota", key, "error", err)
	return fault.Wrap(err, "the credential's limits could not be checked; try again")
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
