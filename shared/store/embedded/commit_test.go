package embedded

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// TestCommitterGroups: concurrent writes all land, a failing write gets its
// own error and leaves nothing, the others of its group still commit, and a
// panicking write is an error, not a crash.
func TestCommitterGroups(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	c := &committer{db: db}
	errBoom := errors.New("boom")
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Update(func(tx *bbolt.Tx) error {
				if err := tx.Bucket(bucket).Put([]byte(fmt.Sprint(i)), []byte("v")); err != nil {
					return err
				}
				switch {
				case i%10 == 3:
					return errBoom
				case i%50 == 7:
					panic("a bad write")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	err = db.View(func(tx *bbolt.Tx) error {
		for i := range n {
			got := tx.Bucket(bucket).Get([]byte(fmt.Sprint(i)))
			switch {
			case i%10 == 3:
				if !errors.Is(errs[i], errBoom) || got != nil {
					t.Errorf("write %d: err %v, stored %q; want boom and nothing stored", i, errs[i], got)
				}
			case i%50 == 7:
				if errs[i] == nil || got != nil {
					t.Errorf("write %d (panics): err %v, stored %q", i, errs[i], got)
				}
			default:
				if errs[i] != nil || string(got) != "v" {
					t.Errorf("write %d: err %v, stored %q", i, errs[i], got)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	// Counted: every write that committed, once, and the commits that
	// carried them (fewer when groups formed, never more).
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if w, n := c.writes.Load(), c.commits.Load(); w != uint64(ok) || n == 0 || n > w {
		t.Errorf("counted %d writes in %d commits, want %d writes in 1..%d commits", w, n, ok, ok)
	}
}

// BenchmarkCommit compares one commit per write with grouped commits, at
// the concurrency the confirmed-path target names (20 writers).
func BenchmarkCommit(b *testing.B) {
	for _, grouped := range []bool{false, true} {
		name := "one-commit-each"
		if grouped {
			name = "grouped"
		}
		b.Run(name, func(b *testing.B) {
			db, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_ = db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err })
			update := db.Update
			if grouped {
				update = (&committer{db: db}).Update
			}
			b.SetParallelism(10) // 20 writers on 2 cores
			var seq int64
			var mu sync.Mutex
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					seq++
					k := fmt.Sprint(seq)
					mu.Unlock()
					if err := update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte("v")) }); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// TestCommitterHandsOff: the writer that found the committer idle returns
// once its own group is on disk, while a later group, still committing, is
// left to another goroutine.
func TestCommitterHandsOff(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &committer{db: db}
	release := make(chan struct{})
	laterDone := make(chan error, 1)
	queued := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.wait)
	}
	err = c.Update(func(tx *bbolt.Tx) error {
		// While the first group commits, a second write arrives and will
		// block in its own commit.
		go func() {
			laterDone <- c.Update(func(*bbolt.Tx) error { <-release; return nil })
		}()
		for deadline := time.Now().Add(5 * time.Second); queued() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the second write never queued")
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Back here while the second group is still blocked.
	select {
	case err := <-laterDone:
		t.Fatalf("the second write finished first (%v)", err)
	default:
	}
	close(release)
	if err := <-laterDone; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
}

// waitIdle waits (bounded) for the committer's goroutine, which may still
// be finding the queue empty after the last result went out.
func waitIdle(t *testing.T, c *committer) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		busy, waiting := c.busy, len(c.wait)
		c.mu.Unlock()
		if !busy && waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committer left busy=%v with %d waiting", busy, waiting)
		}
	}
}
