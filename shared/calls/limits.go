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

// maxQuotaAttempts bounds the read-modify-write loop of a quota.
const maxQuotaAttempts = 32

// takeSlot counts one use of a stored per-credential limit for window, or
// refuses with rate_limited when limit uses are still counted. The count is
// kept in the store with conditional writes, so every instance sees it.
func (s *Service) takeSlot(ctx context.Context, key string, window time.Duration, limit int, what string) error {
	for range maxQuotaAttempts {
		q, err := s.Store.GetQuota(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			q, err = &countersign.Quota{Key: key}, nil
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "quota not read", "quota", key, "error", err)
			return fault.Wrap(err, "the credential's limits could not be checked; try again")
		}
		now := s.now()
		live := q.Until[:0]
		for _, u := range q.Until {
			if u.After(now) {
				live = append(live, u)
			}
		}
		if len(live) >= limit {
			retry := max(1, int(math.Ceil(earliest(live).Sub(now).Seconds())))
			return &fault.Error{Code: fault.RateLimited, RetryAfter: retry,
				Reason: fmt.Sprintf("%s: the limit of %d is reached; retry in %d s", what, limit, retry)}
		}
		q.Until = append(live, now.Add(window))
		q.TTL = latest(q.Until).Add(time.Minute).Unix()
		err = s.Store.PutQuota(ctx, q)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			s.logger().ErrorContext(ctx, "quota not written", "quota", key, "error", err)
			return fault.Wrap(err, "the credential's limits could not be recorded; try again")
		}
	}
	return fault.New(fault.Internal, "the credential's limits are under too much contention; try again")
}

func earliest(ts []time.Time) time.Time {
	e := ts[0]
	for _, t := range ts[1:] {
		if t.Before(e) {
			e = t
		}
	}
	return e
}

func latest(ts []time.Time) time.Time {
	l := ts[0]
	for _, t := range ts[1:] {
		if t.After(l) {
			l = t
		}
	}
	return l
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
