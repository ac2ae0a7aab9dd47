package embedded

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/countersign/countersign"
)

// maxCachedCredentials bounds the decoded credentials kept; past it the
// cache starts again empty.
const maxCachedCredentials = 1024

// credentialCache keeps the credentials CredentialByKeyHash decoded, each
// beside the stored bytes it was decoded from, and what it found for each
// key hash, beside the generation of the credential buckets it read.
//
// Every write to the credential buckets goes through
// Store.writeCredentials, which moves the generation on once its commit
// is visible (even when it failed), so a lookup that follows a revocation
// or a change reads the store again: a key revoked is refused by the next
// call, as when every call read its credential in a transaction of its
// own. A lookup keeps what it read under the generation it saw before its
// transaction began, so what it read before a commit is never kept under
// the generation after it. Only lookups that found a credential are kept.
// The read transaction was the largest part of authenticating a call on
// the auto path; decoding the JSON had been before it.
type credentialCache struct {
	mu sync.RWMutex
	m  map[string]cachedCredential // credential ID → its last decoding
	// byKey is key hash → the credential found, at gen.
	byKey map[string]keyedCredential
	gen   atomic.Uint64
}

type keyedCredential struct {
	gen uint64
	c   countersign.Credential
}

// found returns the credential found for keyHash at generation gen.
func (cc *credentialCache) found(keyHash string, gen uint64) (countersign.Credential, bool) {
	cc.mu.RLock()
	e, ok := cc.byKey[keyHash]
	cc.mu.RUnlock()
	if !ok || e.gen != gen {
		return countersign.Credential{}, false
	}
	return copyCredential(e.c), true
}

// keep notes c as found for keyHash by a transaction that began at
// generation gen.
func (cc *credentialCache) keep(keyHash string, gen uint64, c countersign.Credential) {
	e := keyedCredential{gen: gen, c: copyCredential(c)}
	cc.mu.Lock()
	if cc.byKey == nil || len(cc.byKey) >= maxCachedCredentials {
		cc.byKey = make(map[string]keyedCredential)
	}
	cc.byKey[keyHash] = e
	cc.mu.Unlock()
}

// changed moves the generation on: every credential found before is read
// again.
func (cc *credentialCache) changed() { cc.gen.Add(1) }

type cachedCredential struct {
	raw []byte
	c   countersign.Credential
}

// decode sets *c to the credential stored as data under id.
func (cc *credentialCache) decode(id, data []byte, c *countersign.Credential) error {
	cc.mu.RLock()
	e, ok := cc.m[string(id)]
	cc.mu.RUnlock()
	if ok && bytes.Equal(e.raw, data) {
		*c = copyCredential(e.c)
		return nil
	}
	if err := decodeRecord(bucketCredentials, data, c); err != nil {
		return err
	}
	e = cachedCredential{raw: bytes.Clone(data), c: copyCredential(*c)}
	cc.mu.Lock()
	if cc.m == nil || len(cc.m) >= maxCachedCredentials {
		cc.m = make(map[string]cachedCredential)
	}
	cc.m[string(id)] = e
	cc.mu.Unlock()
	return nil
}

// copyCredential copies what c refers to, so that neither the cache's
// copy nor the caller's changes the other (TestCopyCredentialIsDeep fails
// when a field that refers to memory is added and not copied here).
func copyCredential(c countersign.Credential) countersign.Credential {
	c.Connections = slices.Clone(c.Connections)
	if c.LastClient != nil {
		cl := *c.LastClient
		c.LastClient = &cl
	}
	return c
}
