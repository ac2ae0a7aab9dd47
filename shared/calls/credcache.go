package calls

import (
	"sync"
	"time"

	"github.com/countersign/countersign/shared/store"
)

// DefaultCredentialTTL is how long Authenticate trusts a credential it
// read from the store when Service.CredentialTTL is zero.
const DefaultCredentialTTL = time.Second

// maxCachedCredentials bounds the cache; past it the cache starts over.
// Only keys that authenticated are kept, so it holds at most one entry per
// credential that made a call within the TTL.
const maxCachedCredentials = 4096

// credCache keeps the credentials Authenticate read, by the SHA-256 of
// their key, each until its deadline (the time of the read plus the TTL,
// on the monotonic clock). An unknown key is never kept: a key created in
// the store works at once, and made-up keys cannot fill the cache.
type credCache struct {
	mu sync.RWMutex
	m  map[[32]byte]cachedCredential
}

type cachedCredential struct {
	cred  store.Credential
	until time.Time
}

// get returns a copy of the credential of hash if it was read before
// until; the copy's LastClient is the cache's own.
func (c *credCache) get(hash [32]byte, now time.Time) (store.Credential, bool) {
	c.mu.RLock()
	e, ok := c.m[hash]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return store.Credential{}, false
	}
	return e.cred, true
}

func (c *credCache) put(hash [32]byte, cred store.Credential, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedCredentials {
		c.m = make(map[[32]byte]cachedCredential)
	}
	c.m[hash] = cachedCredential{cred: cred, until: until}
}

// setLastClient keeps the cached credential in step with a write of its
// last client, so RecordClient sees it and writes at most once a minute.
func (c *credCache) setLastClient(id string, seen *store.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if e.cred.ID == id {
			e.cred.LastClient = seen
			c.m[h] = e
		}
	}
}
