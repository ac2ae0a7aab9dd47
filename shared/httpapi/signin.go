package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/webguard"
)

// An operator session is a record in the store, not a fact carried by the
// cookie. The cookie holds a token sealed with the link signer (purpose
// operator-session) naming the credential and a random session id; the
// store holds, under the SHA-256 of that id, the key hash the credential
// had at sign-in and the session's expiry. A session works while its
// record has not expired or been ended (sign-out), the credential exists
// (revoking its key deletes it), has role operator and still has the key
// it signed in with. Nothing in the cookie is derived from the key.
//
// The record is an idempotency record of the credential (the store's
// expiring, per-credential record), under a key no call can reach: the
// hash of a random id only the cookie holds.
const sessionKeyPrefix = "operator-session/"

// sessionClaims is the sealed cookie's payload.
type sessionClaims struct {
	Credential string `json:"c"`
	// ID names the session record and ties the CSRF tokens to it.
	ID string `json:"n"`
}

func sessionKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return sessionKeyPrefix + hex.EncodeToString(h[:])
}

// sessionBinding is what the record keeps of the credential: its key hash
// at sign-in, so a changed key ends the session. It stays in the store.
func sessionBinding(c *countersign.Credential) string { return "operator-session:" + c.KeyHash }

// startSession stores a new session of cred and returns its claims.
func (o *Operator) startSession(ctx context.Context, cred *countersign.Credential) (*sessionClaims, error) {
	now := o.now()
	cl := &sessionClaims{Credential: cred.ID, ID: randomID()}
	rec := &countersign.Idempotency{Credential: cred.ID, Key: sessionKey(cl.ID), RequestHash: sessionBinding(cred), Done: true,
		CreatedAt: now, ExpiresAt: now.Add(o.sessionTTL())}
	if err := o.Sessions.CreateIdempotency(ctx, rec); err != nil {
		return nil, fault.Wrap(err, "the session could not be stored; try again")
	}
	return cl, nil
}

// endSession ends the session cl names (sign-out): its record expires now.
func (o *Operator) endSession(ctx context.Context, cl *sessionClaims) error {
	rec, err := o.Sessions.GetIdempotency(ctx, cl.Credential, sessionKey(cl.ID))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fault.Wrap(err, "the session could not be ended; try again")
	}
	rec.ExpiresAt = o.now().Add(-time.Second)
	if err := o.Sessions.UpdateIdempotency(ctx, rec); err != nil {
		return fault.Wrap(err, "the session could not be ended; try again")
	}
	return nil
}

// session returns the signed-in operator, or nil. A session whose record
// expired or was ended, whose credential is gone (revoked) or changed its
// key is no session; one whose credential lost the role is refused by the
// caller.
func (o *Operator) session(ctx context.Context, r *http.Request) (*countersign.Credential, *sessionClaims, error) {
	tok := cookieValue(r, sessionCookie)
	if tok == "" {
		return nil, nil, nil
	}
	b, err := o.Signer.Open(purposeSession, tok, o.now())
	if err != nil {
		return nil, nil, nil
	}
	var cl sessionClaims
	if json.Unmarshal(b, &cl) != nil || cl.Credential == "" || len(cl.ID) != 32 {
		return nil, nil, nil
	}
	c, err := o.Sessions.GetCredential(ctx, cl.Credential)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fault.Wrap(err, "the session could not be checked; try again")
	}
	rec, err := o.Sessions.GetIdempotency(ctx, cl.Credential, sessionKey(cl.ID))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fault.Wrap(err, "the session could not be checked; try again")
	}
	if !rec.ExpiresAt.After(o.now()) || subtle.ConstantTimeCompare([]byte(rec.RequestHash), []byte(sessionBinding(&c))) != 1 {
		return nil, nil, nil
	}
	return &c, &cl, nil
}

// loginThrottle slows down key guessing without ever locking everyone
// out. Per client address (an IPv6 address counts by its /64): after
// maxFailures failed sign-ins within failureWindow, that address waits
// out the window (429). Across all addresses: past globalFailures within
// the window, every sign-in is slowed by globalDelay before its key is
// checked, but never refused, so a correct key from an address that is
// not itself throttled always signs in. Its memory is bounded: at most
// maxTrackedAddrs addresses of maxFailures times each, and globalFailures
// times; when the table is full of addresses still counting, a new
// address is counted only globally. It is kept in the process (per Lambda
// instance on AWS).
type loginThrottle struct {
	mu     sync.Mutex
	byAddr map[string]*failures
	global [globalFailures]time.Time // a ring: the latest failures
	next   int
	swept  time.Time
}

// failures is a ring of an address's latest failed sign-ins.
type failures struct {
	at   [maxFailures]time.Time
	next int
}

// add records a failure at t.
func (f *failures) add(t time.Time) {
	f.at[f.next] = t
	f.next = (f.next + 1) % len(f.at)
}

// oldest is the earliest of the latest failures (zero until there are
// enough of them).
func (f *failures) oldest() time.Time { return f.at[f.next] }

const (
	maxFailures     = 5
	globalFailures  = 50
	failureWindow   = time.Minute
	globalDelay     = time.Second
	maxTrackedAddrs = 10000
)

// addrKey is what an address is counted by (webguard.AddrKey).
func addrKey(ip string) string { return webguard.AddrKey(ip) }

// wait says how many seconds ip must wait before it may try again, 0 if
// none.
func (l *loginThrottle) wait(ip string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.byAddr[addrKey(ip)]
	if f == nil {
		return 0
	}
	oldest := f.oldest()
	if oldest.IsZero() || now.Sub(oldest) >= failureWindow {
		return 0
	}
	return max(1, int(math.Ceil((failureWindow - now.Sub(oldest)).Seconds())))
}

// slow says how long a sign-in waits before its key is checked: globalDelay
// while globalFailures failed within the window, else 0.
func (l *loginThrottle) slow(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if oldest := l.global[l.next]; !oldest.IsZero() && now.Sub(oldest) < failureWindow {
		return globalDelay
	}
	return 0
}

// fail records a failed sign-in from ip.
func (l *loginThrottle) fail(ip string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global[l.next] = now
	l.next = (l.next + 1) % len(l.global)
	if l.byAddr == nil {
		l.byAddr = map[string]*failures{}
	}
	k := addrKey(ip)
	f := l.byAddr[k]
	if f == nil {
		if len(l.byAddr) >= maxTrackedAddrs {
			l.sweep(now)
		}
		if len(l.byAddr) >= maxTrackedAddrs {
			return // full of addresses still counting: this one counts globally only
		}
		f = &failures{}
		l.byAddr[k] = f
	}
	f.add(now)
}

// sweep forgets the addresses whose latest failure is out of the window,
// at most once a second (the table is bounded, so each sweep is too).
func (l *loginThrottle) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Second {
		return
	}
	l.swept = now
	for k, f := range l.byAddr {
		latest := f.at[(f.next+len(f.at)-1)%len(f.at)]
		if now.Sub(latest) >= failureWindow {
			delete(l.byAddr, k)
		}
	}
}

// tracked is how many addresses the throttle holds (for tests).
func (l *loginThrottle) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byAddr)
}
