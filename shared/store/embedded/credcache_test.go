package embedded

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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
// credential lookup once the credential was decoded: a read transaction
// and a copy, no JSON decoding.
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

// maxLookupAllocs: bbolt's read transaction and the credential's copy (14
// on go1.26); decoding the JSON again made it 25.
const maxLookupAllocs = 14
