package calls_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// countingStore counts the credential lookups that reach the store.
type countingStore struct {
	testStore
	lookups atomic.Int64
}

func (s *countingStore) CredentialByKeyHash(ctx context.Context, keyHash string) (store.Credential, error) {
	s.lookups.Add(1)
	return s.testStore.CredentialByKeyHash(ctx, keyHash)
}

// TestCredentialCache (in real time: the env's upstream is a real server,
// so it cannot run in a synctest bubble): a credential read from the store
// is trusted for CredentialTTL and no longer; a revocation elsewhere takes
// effect within it; an unknown key is never remembered; the last client
// recorded is seen by the next call; a negative TTL reads the store every
// time.
func TestCredentialCache(t *testing.T) {
	e := newEnv(t)
	st := &countingStore{testStore: e.st}
	e.svc.Store = st
	// Longer than any pause of a loaded machine between two calls.
	ttl := 2 * time.Second
	e.svc.CredentialTTL = ttl
	ctx := e.ctx

	for range 3 {
		if _, err := e.svc.Authenticate(ctx, "k_ask"); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load(); n != 1 {
		t.Errorf("3 calls within the TTL read the store %d times, want 1", n)
	}

	// Revoked by another process (the key hash no longer names it).
	revoked := *e.creds["chat-user"]
	revoked.KeyHash = "0000000000000000000000000000000000000000000000000000000000000000"
	if err := e.st.PutCredential(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(ctx, "k_ask"); err != nil {
		t.Errorf("within the TTL of the last read: %v, want the cached credential", err)
	}
	time.Sleep(ttl)
	if _, err := e.svc.Authenticate(ctx, "k_ask"); fault.CodeOf(err) != fault.Unauthenticated {
		t.Errorf("one TTL after the last read: %v, want unauthenticated", err)
	}

	// An unknown key is not remembered: once created it works at once.
	before := st.lookups.Load()
	if _, err := e.svc.Authenticate(ctx, "k_new"); fault.CodeOf(err) != fault.Unauthenticated {
		t.Fatalf("unknown key: %v", err)
	}
	created := store.Credential{ID: "new", KeyHash: hashOf("k_new"), Choice: e.creds["runner"].Choice}
	if err := e.st.PutCredential(ctx, created); err != nil {
		t.Fatal(err)
	}
	if c, err := e.svc.Authenticate(ctx, "k_new"); err != nil || c.ID != "new" {
		t.Errorf("a key created after a failed lookup: %v, %v", c, err)
	}
	if n := st.lookups.Load() - before; n != 2 {
		t.Errorf("%d store reads for a failed and a new key, want 2", n)
	}

	// The last client recorded is on the next call's credential, so
	// RecordClient does not write it again within the minute.
	cred, err := e.svc.Authenticate(ctx, "k_run")
	if err != nil {
		t.Fatal(err)
	}
	e.svc.RecordClient(ctx, cred, calls.Client{Name: "cli", Version: "1"})
	again, err := e.svc.Authenticate(ctx, "k_run")
	if err != nil {
		t.Fatal(err)
	}
	if again.LastClient == nil || again.LastClient.Name != "cli" {
		t.Errorf("next call's last client = %+v, want cli", again.LastClient)
	}

	// Negative: every call reads the store.
	e.svc.CredentialTTL = -1
	before = st.lookups.Load()
	for range 2 {
		if _, err := e.svc.Authenticate(ctx, "k_run"); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load() - before; n != 2 {
		t.Errorf("with a negative TTL: %d store reads for 2 calls, want 2", n)
	}
}

func hashOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
