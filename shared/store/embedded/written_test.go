package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestUpdateReadsWhatIsStored: an update of a confirmation this store
// has just updated skips decoding the stored record (writtenCache), and
// still keeps what is stored: the fields fixed at creation come from the
// stored record even when the caller changed its own copy of them, or
// when another writer changed the record in between.
func TestUpdateReadsWhatIsStored(t *testing.T) {
	ctx := context.Background()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	c := &countersign.Confirmation{ID: "cf-1", Kind: countersign.KindCall, Credential: "cred-1", Status: countersign.StatusPending,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/12",
			Args: countersign.Args{Path: map[string]string{"id": "12"}}}}}
	if err := s.CreateConfirmation(ctx, c); err != nil {
		t.Fatal(err)
	}
	update := func(step string, change func(c *countersign.Confirmation)) *countersign.Confirmation {
		t.Helper()
		got, err := s.GetConfirmation(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		change(got)
		if err := s.UpdateConfirmation(ctx, got); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got, err = s.GetConfirmation(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The first update decodes the record; the ones after it start from
	// what it wrote.
	update("approve", func(c *countersign.Confirmation) { c.Status = countersign.StatusApproved })
	got := update("claim, the caller's arguments changed", func(c *countersign.Confirmation) {
		c.Operations[0].State = countersign.OpClaimed
		c.Operations[0].Args.Path["id"] = "13"
		c.Credential = "cred-2"
	})
	if id := got.Operations[0].Args.Path["id"]; id != "12" || got.Credential != "cred-1" || got.Operations[0].State != countersign.OpClaimed {
		t.Errorf("after the claim: path id %q, credential %q, state %q; want 12, cred-1, claimed", id, got.Credential, got.Operations[0].State)
	}

	// Another writer changes the record, version unchanged: the next
	// update keeps what that writer stored, not what this store wrote.
	err = s.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("store_confirmations"))
		var rec map[string]any
		if err := json.Unmarshal(b.Get([]byte(c.ID)), &rec); err != nil {
			return err
		}
		rec["credential"] = "cred-3"
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(c.ID), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	got = update("done", func(c *countersign.Confirmation) { c.Operations[0].State = countersign.OpDone })
	if got.Credential != "cred-3" || got.Operations[0].Args.Path["id"] != "12" || got.Version != 4 {
		t.Errorf("after another writer: credential %q, path id %q, version %d; want cred-3, 12, 4", got.Credential, got.Operations[0].Args.Path["id"], got.Version)
	}

	// A stale version still conflicts.
	stale := *got
	stale.Version = 2
	if err := s.UpdateConfirmation(ctx, &stale); err == nil {
		t.Error("an update from version 2 of a record at version 4 succeeded")
	}
}

// TestIndexFollowsEachUpdate: the status listings follow every update,
// those that keep the status (whose index entries are left in place)
// and those that change it, and the pages a status-keeping update writes
// are fewer than a status change's (it does not rewrite the index).
func TestIndexFollowsEachUpdate(t *testing.T) {
	ctx := context.Background()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	// Enough other records that the index is a tree of its own pages.
	for i := range 400 {
		c := &countersign.Confirmation{ID: fmt.Sprintf("other-%03d", i), Kind: countersign.KindCall, Status: countersign.StatusPending, CreatedAt: now.Add(time.Duration(i)), ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateConfirmation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	c := &countersign.Confirmation{ID: "cf-1", Kind: countersign.KindCall, Status: countersign.StatusPending, CreatedAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour),
		Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/12"}}}
	if err := s.CreateConfirmation(ctx, c); err != nil {
		t.Fatal(err)
	}
	listed := func(st countersign.Status) bool {
		t.Helper()
		p, err := s.ListConfirmations(ctx, countersign.ListQuery{Status: st, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Items) == 1 && p.Items[0].ID == c.ID
	}
	pages := func(change func()) uint64 {
		before := s.Stats().Pages
		change()
		return s.Stats().Pages - before
	}
	update := func(f func()) {
		t.Helper()
		f()
		if err := s.UpdateConfirmation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	approve := pages(func() { update(func() { c.Status = countersign.StatusApproved }) })
	claim := pages(func() { update(func() { c.Operations[0].State = countersign.OpClaimed }) })
	if !listed("") || !listed(countersign.StatusApproved) || listed(countersign.StatusPending) {
		t.Errorf("after the claim: listed under every status %v, approved %v, pending %v; want true, true, false", listed(""), listed(countersign.StatusApproved), listed(countersign.StatusPending))
	}
	update(func() { c.Status, c.Operations[0].State = countersign.StatusExecuted, countersign.OpDone })
	if !listed("") || !listed(countersign.StatusExecuted) || listed(countersign.StatusApproved) {
		t.Errorf("after the outcome: listed under every status %v, executed %v, approved %v; want true, true, false", listed(""), listed(countersign.StatusExecuted), listed(countersign.StatusApproved))
	}
	if claim >= approve {
		t.Errorf("the claim (status kept) wrote %d pages, the approval %d: want fewer, the index untouched", claim, approve)
	}
}
