package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestCrashImageReopens: the store does not write bbolt's free-page list
// (NoFreelistSync), so a file left by a crash has none, and Open rebuilds
// it from the pages the last commit reaches. The file is copied while the
// store is open, after writes that freed pages (updates rewrite their
// pages elsewhere), as a SIGKILL or a power cut after the last commit
// leaves it. The copy opens with every acknowledged write; writes made
// after that reopen do not overwrite any of them (a page handed out
// while committed data still used it would); and bbolt's own check finds
// no page both free and in use.
func TestCrashImageReopens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "countersign.db")
	s, err := embedded.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	const n = 300
	want := map[string]countersign.Status{}
	write := func(s *embedded.Store, prefix string) {
		t.Helper()
		for i := range n {
			c := &countersign.Confirmation{ID: fmt.Sprintf("%s-%03d", prefix, i), Kind: countersign.KindCall, Status: countersign.StatusPending,
				Reason: fmt.Sprintf("reason %0200d", i), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.CreateConfirmation(ctx, c); err != nil {
				t.Fatal(err)
			}
			want[c.ID] = c.Status
			if i%2 == 0 { // frees the pages the first version was on
				c.Status = countersign.StatusApproved
				if err := s.UpdateConfirmation(ctx, c); err != nil {
					t.Fatal(err)
				}
				want[c.ID] = c.Status
			}
		}
	}
	write(s, "before")
	image, err := os.ReadFile(path) // what the disk holds: every commit above was synced
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, "crashed.db")
	if err := os.WriteFile(crashed, image, 0o600); err != nil {
		t.Fatal(err)
	}

	r, err := embedded.Open(crashed, nil)
	if err != nil {
		t.Fatalf("open the crash image: %v", err)
	}
	defer r.Close()
	check := func(label string) {
		t.Helper()
		for id, st := range want {
			c, err := r.GetConfirmation(ctx, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", label, id, err)
			}
			if c.Status != st {
				t.Fatalf("%s: %s is %s, want %s", label, id, c.Status, st)
			}
		}
		err := r.DB().View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: bbolt's check: %v", label, err)
		}
	}
	check("reopened")
	write(r, "after")
	check("written after the reopen")
}
