package embedded_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/store/storetest"
)

// The adapter serves each consumer's own small interface.
var (
	_ confirm.Store = (*embedded.Store)(nil)
	_ calls.Store   = (*embedded.Store)(nil)
	_ app.Store     = (*embedded.Store)(nil)
)

func TestContract(t *testing.T) {
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	storetest.Run(t, func(t *testing.T) store.Store {
		return openStore(t, filepath.Join(t.TempDir(), "countersign.db"), &embedded.Options{Now: clock.Now})
	}, &storetest.Options{Now: clock.Now, Advance: clock.Advance})
}

func TestContractRealClock(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openStore(t, filepath.Join(t.TempDir(), "countersign.db"), nil)
	}, nil)
}

func TestContractSharedFile(t *testing.T) {
	// One file for every subtest, as a long-running local stack has.
	s := openStore(t, filepath.Join(t.TempDir(), "countersign.db"), nil)
	storetest.Run(t, func(*testing.T) store.Store { return s }, nil)
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "countersign.db")
	now := time.Now().UTC()

	s, err := embedded.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	cred := countersign.Credential{ID: "cred-1", KeyHash: strings.Repeat("ab", 32)}
	conf := &countersign.Confirmation{ID: "conf-1", Kind: countersign.KindCall, Status: countersign.StatusPending, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	idem := &countersign.Idempotency{Credential: "cred-1", Key: "k1", RequestHash: "h", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	review := &countersign.Confirmation{ID: "rv_1", Kind: countersign.KindReview, Credential: "cred-1", Status: countersign.StatusPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	for _, step := range []struct {
		name string
		err  error
	}{
		{"PutCredential", s.PutCredential(ctx, cred)},
		{"CreateConfirmation", s.CreateConfirmation(ctx, conf)},
		{"CreateIdempotency", s.CreateIdempotency(ctx, idem)},
		{"CreateConfirmation(review)", s.CreateConfirmation(ctx, review)},
	} {
		if step.err != nil {
			t.Fatalf("%s: %v", step.name, step.err)
		}
	}
	conf.Status = countersign.StatusApproved
	if err := s.UpdateConfirmation(ctx, conf); err != nil {
		t.Fatalf("UpdateConfirmation: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openStore(t, path, nil)
	if got, err := s.CredentialByKeyHash(ctx, cred.KeyHash); err != nil || got.ID != cred.ID {
		t.Errorf("CredentialByKeyHash after reopen = %q, %v; want %q", got.ID, err, cred.ID)
	}
	if got, err := s.GetConfirmation(ctx, conf.ID); err != nil || got.Status != countersign.StatusApproved || got.Version != 2 {
		t.Errorf("GetConfirmation after reopen = %+v, %v; want approved at version 2", got, err)
	}
	if _, err := s.GetIdempotency(ctx, idem.Credential, idem.Key); err != nil {
		t.Errorf("GetIdempotency after reopen: %v", err)
	}
	if got, err := s.ListReviews(ctx, countersign.ListQuery{}); err != nil || len(got.Items) != 1 || got.Items[0].ID != review.ID {
		t.Errorf("ListReviews after reopen = %v, %v; want [%s]", got, err, review.ID)
	}
	// Conditional writes still see the old records.
	if err := s.CreateConfirmation(ctx, &countersign.Confirmation{ID: conf.ID}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateConfirmation(existing) after reopen: %v, want ErrConflict", err)
	}
}

func TestSecondOpenFailsWhileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "countersign.db")
	openStore(t, path, nil)

	// In a synctest bubble the clock moves only while bbolt sleeps between
	// its tries (every 50 ms): the wait is the timeout, on any machine.
	const timeout = 200 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s, err := embedded.Open(path, &embedded.Options{Timeout: timeout})
		elapsed := time.Since(start)
		if err == nil {
			s.Close()
			t.Fatal("second Open of a locked file succeeded")
		}
		if !strings.Contains(err.Error(), "locked by another process") || !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not say the file %s is locked", err, path)
		}
		if elapsed < timeout-50*time.Millisecond || elapsed > timeout {
			t.Errorf("second Open gave up after %s, want the %s timeout (to bbolt's 50 ms try)", elapsed, timeout)
		}
	})
}

func TestLockReleasedByClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "countersign.db")
	s, err := embedded.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	openStore(t, path, &embedded.Options{Timeout: -1})
}

func TestBucketsArePrefixed(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "countersign.db"), nil)
	err := s.DB().View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			if !strings.HasPrefix(string(name), "store_") {
				t.Errorf("bucket %q lacks the store_ prefix", name)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	_, err := embedded.Open(filepath.Join(t.TempDir(), "missing-dir", "countersign.db"), nil)
	if err == nil || !strings.Contains(err.Error(), "missing-dir") {
		t.Fatalf("Open in a missing directory: %v, want an error naming the path", err)
	}
}

func openStore(tb testing.TB, path string, opts *embedded.Options) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}
