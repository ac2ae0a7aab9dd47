package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// passkeys is the contract of people's passkeys (per person, versioned,
// removable) and of the ceremonies taken once.
func (s *suite) passkeys(t *testing.T) {
	ctx := context.Background()

	t.Run("PerPersonVersioned", func(t *testing.T) {
		st := s.newStore(t)
		iss, sub := "https://idp.example/"+uid(t), "ada"
		used := s.now().In(zone)
		p := &countersign.Passkey{ID: "cred-b", Issuer: iss, Subject: sub, Name: "laptop", Credential: json.RawMessage(`{"id":"AQID","publicKey":"BAU"}`),
			CreatedAt: s.now().In(zone), LastUsedAt: &used, Version: 7}
		assertNoZeroFields(t, *p)
		if err := st.CreatePasskey(ctx, p); err != nil || p.Version != 1 {
			t.Fatalf("CreatePasskey = %v, version %d; want nil, 1", err, p.Version)
		}
		if err := st.CreatePasskey(ctx, &countersign.Passkey{ID: "cred-b", Issuer: iss, Subject: sub}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second CreatePasskey = %v, want ErrConflict", err)
		}
		// The same credential id for another person (another subject, or
		// the same subject at another issuer) is theirs, apart.
		for _, o := range []*countersign.Passkey{{ID: "cred-b", Issuer: iss, Subject: "grace"}, {ID: "cred-b", Issuer: iss + "x", Subject: sub}} {
			if err := st.CreatePasskey(ctx, o); err != nil {
				t.Fatalf("CreatePasskey for %s at %s: %v", o.Subject, o.Issuer, err)
			}
		}
		a := &countersign.Passkey{ID: "cred-a", Issuer: iss, Subject: sub, Credential: json.RawMessage(`{}`), CreatedAt: s.now().In(zone)}
		if err := st.CreatePasskey(ctx, a); err != nil {
			t.Fatalf("CreatePasskey a: %v", err)
		}
		got, err := st.PersonPasskeys(ctx, iss, sub)
		if err != nil || len(got) != 2 || got[0].ID != "cred-a" || got[1].ID != "cred-b" {
			t.Fatalf("PersonPasskeys = %v, %v; want cred-a, cred-b", got, err)
		}
		assertEqual(t, "passkey", got[1], roundTrip(t, p))
		if none, err := st.PersonPasskeys(ctx, iss, "nobody"); err != nil || none == nil || len(none) != 0 {
			t.Fatalf("PersonPasskeys of nobody = %#v, %v; want an empty list", none, err)
		}

		stale := *got[1]
		got[1].Credential = json.RawMessage(`{"signCount":2}`)
		if err := st.UpdatePasskey(ctx, got[1]); err != nil || got[1].Version != 2 {
			t.Fatalf("UpdatePasskey = %v, version %d", err, got[1].Version)
		}
		if err := st.UpdatePasskey(ctx, &stale); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale UpdatePasskey = %v, want ErrConflict", err)
		}
		// Racing updates from one read: exactly one wins (a sign counter
		// advanced by two uses of one assertion).
		read, _ := st.PersonPasskeys(ctx, iss, sub)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 4 {
			cp := *read[1]
			wg.Go(func() {
				err := st.UpdatePasskey(ctx, &cp)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("UpdatePasskey: %v", err)
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%d racing updates won, want 1", won)
		}

		if err := st.DeletePasskey(ctx, iss, sub, "cred-b"); err != nil {
			t.Fatalf("DeletePasskey: %v", err)
		}
		if err := st.DeletePasskey(ctx, iss, sub, "cred-b"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second DeletePasskey = %v, want ErrNotFound", err)
		}
		gone := *got[1]
		if err := st.UpdatePasskey(ctx, &gone); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UpdatePasskey of a removed passkey = %v, want ErrNotFound", err)
		}
		if left, _ := st.PersonPasskeys(ctx, iss, sub); len(left) != 1 || left[0].ID != "cred-a" {
			t.Fatalf("after DeletePasskey: %v", left)
		}
		if other, _ := st.PersonPasskeys(ctx, iss, "grace"); len(other) != 1 {
			t.Fatalf("another person's passkeys changed: %v", other)
		}
	})

	t.Run("CeremonyTakenOnce", func(t *testing.T) {
		st := s.newStore(t)
		c := countersign.PasskeyCeremony{ID: uid(t), Purpose: "approve", Issuer: "https://idp", Subject: "ada", Confirmation: "cf_1",
			Nonce: []byte{1, 2, 3}, Session: json.RawMessage(`{"challenge":"x"}`), ExpiresAt: s.now().Add(time.Minute).In(zone)}
		assertNoZeroFields(t, c)
		takenOnce(t, "ceremony", c, func(c countersign.PasskeyCeremony) error { return st.CreatePasskeyCeremony(ctx, c) },
			func() (countersign.PasskeyCeremony, error) { return st.TakePasskeyCeremony(ctx, c.ID) })
	})
}
