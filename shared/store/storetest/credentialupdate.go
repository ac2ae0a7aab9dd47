package storetest

import (
	"context"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// credentialUpdater is the conditional replace the operator's changes use
// (calls.CredentialStore).
type credentialUpdater interface {
	UpdateCredential(ctx context.Context, c countersign.Credential) error
}

// credentialUpdates: a change is written only over the credential as it
// was read (same key hash); a revoked credential, or one revoked and made
// again with a new key, is not brought back.
func (s *suite) credentialUpdates(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	up, ok := st.(credentialUpdater)
	if !ok {
		t.Fatalf("%T has no UpdateCredential", st)
	}
	c := fullCredential(uid(t), s.now())
	if err := st.CreateCredential(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.ReadOnly = !c.ReadOnly
	if err := up.UpdateCredential(ctx, c); err != nil {
		t.Fatalf("UpdateCredential: %v", err)
	}
	got, err := st.GetCredential(ctx, c.ID)
	if err != nil || got.ReadOnly != c.ReadOnly {
		t.Fatalf("after the update: %+v %v", got, err)
	}
	if _, err := st.CredentialByKeyHash(ctx, c.KeyHash); err != nil {
		t.Fatalf("the key after the update: %v", err)
	}

	// Revoked and made again with a new key: the old read is refused.
	if err := st.DeleteCredential(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	fresh := c
	fresh.KeyHash = keyHash(uid(t))
	if err := st.CreateCredential(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	assertErrIs(t, "update over a new key", up.UpdateCredential(ctx, c), store.ErrConflict)
	if _, err := st.CredentialByKeyHash(ctx, c.KeyHash); err == nil {
		t.Fatal("the old key came back")
	}

	// Revoked: not written back.
	if err := st.DeleteCredential(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	assertErrIs(t, "update of a revoked credential", up.UpdateCredential(ctx, c), store.ErrNotFound)
	if _, err := st.GetCredential(ctx, c.ID); err == nil {
		t.Fatal("the revoked credential came back")
	}
}
