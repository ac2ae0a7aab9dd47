package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// oauth is the contract of the authorization server's records: clients,
// codes taken once, tokens by hash, and grants updated by version.
func (s *suite) oauth(t *testing.T) {
	ctx := context.Background()

	t.Run("ClientCreateGetPut", func(t *testing.T) {
		st := s.newStore(t)
		c := countersign.OAuthClient{ID: uid(t), Name: "Claude", RedirectURIs: []string{"http://127.0.0.1:5/cb", "https://claude.ai/cb"},
			SecretHash: keyHash("secret"), CreatedAt: s.now().In(zone), ExpiresAt: s.now().Add(time.Hour).In(zone)}
		assertNoZeroFields(t, c)
		if err := st.CreateOAuthClient(ctx, c); err != nil {
			t.Fatalf("CreateOAuthClient: %v", err)
		}
		got, err := st.OAuthClient(ctx, c.ID)
		if err != nil {
			t.Fatalf("OAuthClient: %v", err)
		}
		assertEqual(t, "oauth client", got, roundTrip(t, c))
		if err := st.CreateOAuthClient(ctx, countersign.OAuthClient{ID: c.ID}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second CreateOAuthClient = %v, want ErrConflict", err)
		}
		c.Name = "Renamed"
		if err := st.PutOAuthClient(ctx, c); err != nil {
			t.Fatalf("PutOAuthClient: %v", err)
		}
		if got, _ := st.OAuthClient(ctx, c.ID); got.Name != "Renamed" {
			t.Fatalf("after PutOAuthClient, name = %q", got.Name)
		}
		if _, err := st.OAuthClient(ctx, uid(t)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown client = %v, want ErrNotFound", err)
		}
	})

	t.Run("CodeTakenOnce", func(t *testing.T) {
		st := s.newStore(t)
		c := countersign.OAuthCode{Hash: keyHash(uid(t)), ClientID: "c", RedirectURI: "http://127.0.0.1/cb", Challenge: "ch",
			Resource: "https://cs.example/mcp", Scope: "mcp", Credential: "user_1", ExpiresAt: s.now().Add(time.Minute).In(zone)}
		assertNoZeroFields(t, c)
		takenOnce(t, "code", c, func(c countersign.OAuthCode) error { return st.CreateOAuthCode(ctx, c) },
			func() (countersign.OAuthCode, error) { return st.TakeOAuthCode(ctx, c.Hash) })
	})

	t.Run("TokenByHashAndDelete", func(t *testing.T) {
		st := s.newStore(t)
		tok := countersign.OAuthToken{Hash: keyHash(uid(t)), Kind: countersign.TokenRefresh, Grant: "g1", ExpiresAt: s.now().Add(time.Hour).In(zone)}
		assertNoZeroFields(t, tok)
		if err := st.CreateOAuthToken(ctx, tok); err != nil {
			t.Fatalf("CreateOAuthToken: %v", err)
		}
		if err := st.CreateOAuthToken(ctx, tok); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second CreateOAuthToken = %v, want ErrConflict", err)
		}
		got, err := st.OAuthToken(ctx, tok.Hash)
		if err != nil {
			t.Fatalf("OAuthToken: %v", err)
		}
		assertEqual(t, "oauth token", got, roundTrip(t, tok))
		if err := st.DeleteOAuthToken(ctx, tok.Hash); err != nil {
			t.Fatalf("DeleteOAuthToken: %v", err)
		}
		if _, err := st.OAuthToken(ctx, tok.Hash); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted token = %v, want ErrNotFound", err)
		}
		if err := st.DeleteOAuthToken(ctx, tok.Hash); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second DeleteOAuthToken = %v, want ErrNotFound", err)
		}
	})

	t.Run("GrantVersioned", func(t *testing.T) {
		st := s.newStore(t)
		cred := uid(t)
		g := &countersign.OAuthGrant{ID: uid(t), ClientID: "c", ClientName: "Claude", Credential: cred, Resource: "https://cs.example/mcp",
			Scope: "mcp", RefreshHash: keyHash("r1"), Revoked: true, CreatedAt: s.now().In(zone), ExpiresAt: s.now().Add(time.Hour).In(zone), Version: 7}
		assertNoZeroFields(t, *g)
		g.Revoked = false
		if err := st.CreateOAuthGrant(ctx, g); err != nil {
			t.Fatalf("CreateOAuthGrant: %v", err)
		}
		if g.Version != 1 {
			t.Fatalf("Version after create = %d, want 1", g.Version)
		}
		if err := st.CreateOAuthGrant(ctx, &countersign.OAuthGrant{ID: g.ID}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second CreateOAuthGrant = %v, want ErrConflict", err)
		}
		got, err := st.OAuthGrant(ctx, g.ID)
		if err != nil {
			t.Fatalf("OAuthGrant: %v", err)
		}
		assertEqual(t, "oauth grant", *got, roundTrip(t, *g))
		// Two writers from the same read: one wins.
		a, b := *got, *got
		a.RefreshHash, b.Revoked = keyHash("r2"), true
		if err := st.UpdateOAuthGrant(ctx, &a); err != nil {
			t.Fatalf("first UpdateOAuthGrant: %v", err)
		}
		if a.Version != 2 {
			t.Fatalf("Version after update = %d, want 2", a.Version)
		}
		if err := st.UpdateOAuthGrant(ctx, &b); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale UpdateOAuthGrant = %v, want ErrConflict", err)
		}
		if err := st.UpdateOAuthGrant(ctx, &countersign.OAuthGrant{ID: uid(t), Version: 1}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UpdateOAuthGrant of a missing grant = %v, want ErrNotFound", err)
		}
		other := &countersign.OAuthGrant{ID: uid(t), Credential: uid(t), CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}
		if err := st.CreateOAuthGrant(ctx, other); err != nil {
			t.Fatalf("CreateOAuthGrant: %v", err)
		}
		list, err := st.OAuthGrants(ctx, cred)
		if err != nil {
			t.Fatalf("OAuthGrants: %v", err)
		}
		if len(list) != 1 || list[0].ID != g.ID || list[0].RefreshHash != keyHash("r2") {
			t.Fatalf("OAuthGrants(%s) = %+v, want the one grant as updated", cred, list)
		}
	})
	t.Run("GrantsListedByCredential", func(t *testing.T) {
		st := s.newStore(t)
		cred, other := uid(t), uid(t)
		var ids []string
		for range 3 {
			g := &countersign.OAuthGrant{ID: uid(t), Credential: cred, ClientID: "c", CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}
			if err := st.CreateOAuthGrant(ctx, g); err != nil {
				t.Fatalf("CreateOAuthGrant: %v", err)
			}
			ids = append(ids, g.ID)
		}
		if err := st.CreateOAuthGrant(ctx, &countersign.OAuthGrant{ID: uid(t), Credential: other, CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}); err != nil {
			t.Fatalf("CreateOAuthGrant: %v", err)
		}
		slices.Sort(ids)
		first, err := st.ListOAuthGrants(ctx, cred, countersign.ListQuery{Limit: 2})
		if err != nil || len(first.Items) != 2 || first.Next == "" || first.Items[0].ID != ids[0] || first.Items[1].ID != ids[1] {
			t.Fatalf("first page: %+v %v, want %v and a cursor", first, err, ids[:2])
		}
		second, err := st.ListOAuthGrants(ctx, cred, countersign.ListQuery{Limit: 2, Cursor: first.Next})
		if err != nil || len(second.Items) != 1 || second.Items[0].ID != ids[2] || second.Next != "" {
			t.Fatalf("second page: %+v %v, want %s alone", second, err, ids[2])
		}
		// (A cursor is the store's position; the operator API seals each
		// for its credential's listing, so another's is refused there.)
		_, err = st.ListOAuthGrants(ctx, cred, countersign.ListQuery{Limit: 2, Cursor: "garbage"})
		assertErrIs(t, "a malformed cursor", err, store.ErrBadCursor)
		// A revoked grant is still listed (as revoked).
		g := first.Items[0]
		g.Revoked = true
		if err := st.UpdateOAuthGrant(ctx, g); err != nil {
			t.Fatalf("UpdateOAuthGrant: %v", err)
		}
		all, err := st.OAuthGrants(ctx, cred)
		if err != nil || len(all) != 3 || !all[0].Revoked {
			t.Fatalf("OAuthGrants after revoking one: %+v %v", all, err)
		}
	})
}

// takenOnce creates v, refuses a second create (store.ErrConflict), then
// has four takers race for it: exactly one gets v as stored, the others
// store.ErrNotFound.
func takenOnce[T any](tb testing.TB, what string, v T, create func(T) error, take func() (T, error)) {
	tb.Helper()
	if err := create(v); err != nil {
		tb.Fatalf("create %s: %v", what, err)
	}
	if err := create(v); !errors.Is(err, store.ErrConflict) {
		tb.Fatalf("second create %s = %v, want ErrConflict", what, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for range 4 {
		wg.Go(func() {
			got, err := take()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
				assertEqual(tb, "taken "+what, got, roundTrip(tb, v))
			case errors.Is(err, store.ErrNotFound):
				lost++
			default:
				tb.Errorf("take %s: %v", what, err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != 3 {
		tb.Fatalf("takers of the %s: %d won, %d lost; want 1 and 3", what, won, lost)
	}
}
