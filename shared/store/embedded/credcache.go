package embedded

import (
	"bytes"
	"slices"
	"sync"

	"github.com/countersign/countersign"
)

// maxCachedCredentials bounds the decoded credentials kept; past it the
// cache starts again empty.
const maxCachedCredentials = 1024

// credentialCache keeps the credentials CredentialByKeyHash decoded, each
// beside the stored bytes it was decoded from. Every call still reads its
// credential from the store, in its own transaction, so a key revoked or
// changed is seen by the next call; only the JSON decoding is skipped
// while the stored bytes are the same. Decoding was the largest part of
// authenticating a call on the auto path.
type credentialCache struct {
	mu sync.RWMutex
	m  map[string]cachedCredential // credential ID → its last decoding
}

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
