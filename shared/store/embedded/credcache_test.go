package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/store"
)

// TestCopyCredentialIsDeep fails when Credential gains a field that refers
// to memory (a slice, map or pointer) that copyCredential does not copy:
// the cache would then share it with every caller.
func TestCopyCredentialIsDeep(t *testing.T) {
	copied := map[string]bool{"Connections": true, "LastClient": true}
	typ := reflect.TypeFor[countersign.Credential]()
	for f := range typ.Fields() {
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func, reflect.Struct, reflect.Array:
			if !copied[f.Name] {
				t.Errorf("Credential.%s (%s) is not copied by copyCredential", f.Name, f.Type)
			}
		}
	}
	c := countersign.Credential{Connections: []string{"crm"}, LastClient: &countersign.Client{Name: "a"}}
	d := copyCredential(c)
	d.Connections[0], d.LastClient.Name = "billing", "b"
	if c.Connections[0] != "crm" || c.LastClient.Name != "a" {
		t.Errorf("the copy shares memory: %+v %+v", c.Connections, *c.LastClient)
	}
}

// TestCredentialByKeyHashSeesEveryChange: the decoding is kept, the
// credential is not: each lookup reads the store, so a change, a new key
// and a revocation are seen by the next lookup, and what a caller does to
// the credential it got never reaches the next caller.
func TestCredentialByKeyHashSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key1, key2 := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	c := countersign.Credential{ID: "cred-1", KeyHash: key1, Choice: countersign.AskPerson, Connections: []string{"crm"}}
	if err := s.CreateCredential(ctx, c); err != nil {
		t.Fatal(err)
	}
	lookup := func(key string) (countersign.Credential, error) {
		t.Helper()
		return s.CredentialByKeyHash(ctx, key)
	}
	got, err := lookup(key1)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("first lookup: %+v, %v", got, err)
	}
	got.Connections[0] = "billing" // the caller's copy
	if got, _ := lookup(key1); got.Connections[0] != "crm" {
		t.Fatalf("a caller's change reached the next lookup: %v", got.Connections)
	}

	c.ReadOnly = true
	if err := s.UpdateCredential(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := lookup(key1); err != nil || !got.ReadOnly {
		t.Fatalf("after the update: %+v, %v", got, err)
	}
	if err := s.SetLastClient(ctx, c.ID, countersign.Client{Name: "agent", SeenAt: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	if got, err := lookup(key1); err != nil || got.LastClient == nil || got.LastClient.Name != "agent" {
		t.Fatalf("after SetLastClient: %+v, %v", got, err)
	}

	c.KeyHash, c.LastClient = key2, nil
	if err := s.PutCredential(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := lookup(key1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old key after a new one: %v", err)
	}
	if got, err := lookup(key2); err != nil || got.KeyHash != key2 {
		t.Fatalf("the new key: %+v, %v", got, err)
	}

	if err := s.DeleteCredential(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := lookup(key2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the revocation: %v", err)
	}
}

// TestCredentialByKeyHashAllocations bounds the work of the auto path's
// credential lookup once the credential was found and no credential was
// written since: a copy, no read transaction, no JSON decoding.
func TestCredentialByKeyHashAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key := strings.Repeat("ab", 32)
	if err := s.CreateCredential(ctx, countersign.Credential{ID: "cred-1", KeyHash: key, Choice: countersign.AskPerson, Connections: []string{"crm"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CredentialByKeyHash(ctx, key); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := s.CredentialByKeyHash(ctx, key); err != nil {
			t.Fatal(err)
		}
	})
	if n > maxLookupAllocs {
		t.Errorf("%.0f allocations per lookup, want at most %d", n, maxLookupAllocs)
	}
}

// maxLookupAllocs: the credential's copy (its connections); bbolt's read
// transaction made it 14, decoding the JSON again 25.
const maxLookupAllocs = 1

// TestCredentialByKeyHashReadsAfterEveryWrite: a lookup reads the store
// (one read transaction) again after any write to a credential, whichever
// the credential, and only then; a revocation is seen by the next lookup
// (TestCredentialByKeyHashSeesEveryChange).
func TestCredentialByKeyHashReadsAfterEveryWrite(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key := strings.Repeat("ab", 32)
	c := countersign.Credential{ID: "cred-1", KeyHash: key, Choice: countersign.AskPerson}
	other := countersign.Credential{ID: "cred-2", KeyHash: strings.Repeat("cd", 32), Choice: countersign.AskPerson}
	for _, cr := range []countersign.Credential{c, other} {
		if err := s.CreateCredential(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	reads := func(want int) {
		t.Helper()
		before := s.db.Stats().TxN
		if _, err := s.CredentialByKeyHash(ctx, key); err != nil {
			t.Fatal(err)
		}
		if got := s.db.Stats().TxN - before; got != want {
			t.Fatalf("%d read transactions, want %d", got, want)
		}
	}
	reads(1)
	reads(0)
	writes := []struct {
		name  string
		write func() error
	}{
		{"update another", func() error { return s.UpdateCredential(ctx, other) }},
		{"last client of another", func() error { return s.SetLastClient(ctx, other.ID, countersign.Client{Name: "a"}) }},
		{"put", func() error { return s.PutCredential(ctx, c) }},
		{"create another", func() error {
			return s.CreateCredential(ctx, countersign.Credential{ID: "cred-3", KeyHash: strings.Repeat("ef", 32)})
		}},
		{"delete another", func() error { return s.DeleteCredential(ctx, other.ID) }},
		{"a failed update", func() error {
			if err := s.UpdateCredential(ctx, other); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("updating a deleted credential: %v", err)
			}
			return nil
		}},
	}
	for _, w := range writes {
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		reads(1)
		reads(0)
	}
	// Another bucket's write (an idempotency record, a call's audit) is
	// not a credential's.
	if err := s.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketIdempotency).Put([]byte("k"), []byte("{}")) }); err != nil {
		t.Fatal(err)
	}
	reads(0)
}

// TestCredentialCacheKeepsNoReadFromBeforeACommit: what a lookup read
// under the generation it saw before its transaction is not found under
// the generation after a write that committed meanwhile.
func TestCredentialCacheKeepsNoReadFromBeforeACommit(t *testing.T) {
	var cc credentialCache
	gen := cc.gen.Load() // a lookup begins
	cc.changed()         // a revocation commits
	cc.keep("hash", gen, countersign.Credential{ID: "cred-1"})
	if _, ok := cc.found("hash", cc.gen.Load()); ok {
		t.Fatal("a credential read before the revocation was found after it")
	}
	cc.keep("hash", cc.gen.Load(), countersign.Credential{ID: "cred-1"})
	if c, ok := cc.found("hash", cc.gen.Load()); !ok || c.ID != "cred-1" {
		t.Fatalf("found %+v, %v", c, ok)
	}
	for i := range maxCachedCredentials + 1 {
		cc.keep(fmt.Sprint(i), cc.gen.Load(), countersign.Credential{})
	}
	if len(cc.byKey) > maxCachedCredentials {
		t.Fatalf("%d credentials kept, at most %d", len(cc.byKey), maxCachedCredentials)
	}
}
