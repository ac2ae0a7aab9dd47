package embedded_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

func TestSweep(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	conf := func(id string, ttl time.Time) {
		t.Helper()
		c := &countersign.Confirmation{ID: id, Kind: countersign.KindCall, Status: countersign.StatusExecuted, CreatedAt: now, ExpiresAt: now, TTL: ttl.Unix()}
		if err := s.CreateConfirmation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	conf("cf_old", now.Add(-time.Second))
	conf("cf_due", now)
	conf("cf_live", now.Add(time.Hour))
	for id, ttl := range map[string]time.Time{"rv_old": now.Add(-time.Hour), "rv_live": now.Add(time.Hour)} {
		if err := s.CreateConfirmation(ctx, &countersign.Confirmation{ID: id, Kind: countersign.KindReview, CreatedAt: now, TTL: ttl.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	for key, exp := range map[string]time.Time{"old": now.Add(-time.Minute), "live": now.Add(time.Minute)} {
		if err := s.CreateIdempotency(ctx, &countersign.Idempotency{Credential: "c", Key: key, CreatedAt: now.Add(-time.Hour), ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}

	n, err := s.Sweep(now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("swept %d records, want 4 (two confirmations, one review, one idempotency record)", n)
	}
	for id, want := range map[string]bool{"cf_old": false, "cf_due": false, "cf_live": true} {
		_, err := s.GetConfirmation(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v (err %v)", id, got, want, err)
		} else if !want && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v", id, err)
		}
	}
	page, err := s.ListReviews(ctx, countersign.ListQuery{})
	reviews := page.Items
	if err != nil || len(reviews) != 1 || reviews[0].ID != "rv_live" {
		t.Errorf("reviews after sweep = %v, %v; want only rv_live", reviews, err)
	}
	before := s.Stats()
	if n, err := s.Sweep(now); err != nil || n != 0 {
		t.Errorf("second sweep = %d, %v; want 0", n, err)
	}
	if after := s.Stats(); after != before {
		t.Errorf("a sweep that deleted nothing wrote: %+v, then %+v", before, after)
	}
}

func TestSweepScripts(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	for id, ttl := range map[string]time.Time{"cf_old": now.Add(-time.Second), "cf_live": now.Add(time.Hour)} {
		if err := s.CreateScriptRun(ctx, &countersign.ScriptRun{ID: id, Status: countersign.ScriptPending, TTL: ttl.Unix()}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutScriptCall(ctx, &countersign.ScriptCall{RunID: id, Index: 0, State: countersign.ScriptCallRan, TTL: ttl.Unix()}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutScriptPart(ctx, &countersign.ScriptPart{RunID: id, Key: "result/0000", Data: []byte("x"), TTL: ttl.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Sweep(now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("swept %d records, want 3 (the old run's header, call and part)", n)
	}
	if _, err := s.GetScriptRun(ctx, "cf_old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old run: %v, want not found", err)
	}
	calls, err := s.ScriptCalls(ctx, "cf_old")
	if err != nil || len(calls) != 0 {
		t.Errorf("old run's calls = %v, %v; want none", calls, err)
	}
	parts, err := s.ScriptParts(ctx, "cf_old", "")
	if err != nil || len(parts) != 0 {
		t.Errorf("old run's parts = %v, %v; want none", parts, err)
	}
	if _, err := s.GetScriptRun(ctx, "cf_live"); err != nil {
		t.Errorf("live run: %v", err)
	}
	if calls, _ := s.ScriptCalls(ctx, "cf_live"); len(calls) != 1 {
		t.Errorf("live run's calls = %v", calls)
	}
}

// Audit records whose ttl passed are swept, more than a batch of them in
// one sweep; records without a ttl, the unexpired ones and every head stay.
func TestSweepAudit(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	const expired, live = 6000, 3 // more than one batch of 5000
	for seq := int64(1); seq <= expired+live; seq++ {
		ttl := now.Add(-time.Hour).Unix()
		if seq > expired {
			ttl = now.Add(time.Hour).Unix()
		}
		if err := s.AppendAudit(ctx, &countersign.AuditRecord{Chain: "calls:a", Seq: seq, At: now, Actor: "a", Action: "call.denied", Hash: "h", TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	for _, chain := range []string{"cred:a", "calls:b"} {
		if err := s.AppendAudit(ctx, &countersign.AuditRecord{Chain: chain, Seq: 1, At: now, Actor: "a", Action: "call.paused", Hash: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Sweep(now)
	if err != nil || n != expired {
		t.Fatalf("Sweep = %d, %v; want the %d expired audit records", n, err, expired)
	}
	rs, _ := s.ListAudit(ctx, countersign.AuditQuery{Chain: "calls:a"})
	if len(rs) != live || rs[0].Seq != expired+1 {
		t.Fatalf("calls:a keeps %d records from %d, want %d from %d", len(rs), rs[0].Seq, live, expired+1)
	}
	for _, chain := range []string{"cred:a", "calls:b"} {
		if rs, _ := s.ListAudit(ctx, countersign.AuditQuery{Chain: chain}); len(rs) != 1 {
			t.Fatalf("%s keeps %d records, want its one record without a ttl", chain, len(rs))
		}
	}
	if h, err := s.AuditHead(ctx, "calls:a"); err != nil || h.Seq != expired+live {
		t.Fatalf("head of calls:a = %+v, %v", h, err)
	}
	if n, err := s.Sweep(now); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want nothing left", n, err)
	}
}

// TestSweepOAuth: expired codes, tokens, grants and copies of client
// metadata documents are swept; live ones and registered clients (no
// expiry) stay.
func TestSweepOAuth(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := openStore(t, filepath.Join(t.TempDir(), "db"), nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateOAuthCode(ctx, countersign.OAuthCode{Hash: "code-old", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateOAuthCode(ctx, countersign.OAuthCode{Hash: "code-live", ExpiresAt: now.Add(time.Minute)}))
	must(s.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: "tok-old", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: "tok-live", ExpiresAt: now.Add(time.Minute)}))
	must(s.CreateOAuthGrant(ctx, &countersign.OAuthGrant{ID: "g-old", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateOAuthGrant(ctx, &countersign.OAuthGrant{ID: "g-live", ExpiresAt: now.Add(time.Hour)}))
	must(s.CreateOAuthClient(ctx, countersign.OAuthClient{ID: "https://old.example/c.json", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateOAuthClient(ctx, countersign.OAuthClient{ID: "csc_registered"}))
	must(s.CreateOAuthClient(ctx, countersign.OAuthClient{ID: "csc_unused", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateSession(ctx, store.Session{Person: "p", ID: "s-old", ExpiresAt: now.Add(-time.Second)}))
	must(s.CreateSession(ctx, store.Session{Person: "p", ID: "s-live", ExpiresAt: now.Add(time.Hour)}))
	n, err := s.Sweep(now)
	if err != nil || n != 6 {
		t.Fatalf("Sweep = %d, %v; want the 6 expired records", n, err)
	}
	if _, err := s.OAuthClient(ctx, "csc_unused"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired registered client: %v", err)
	}
	if _, err := s.Session(ctx, "p", "s-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired session: %v", err)
	}
	if _, err := s.Session(ctx, "p", "s-live"); err != nil {
		t.Errorf("a live session: %v", err)
	}
	if _, err := s.TakeOAuthCode(ctx, "code-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired code: %v", err)
	}
	if _, err := s.OAuthToken(ctx, "tok-live"); err != nil {
		t.Errorf("live token: %v", err)
	}
	if _, err := s.OAuthGrant(ctx, "g-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired grant: %v", err)
	}
	if _, err := s.OAuthClient(ctx, "csc_registered"); err != nil {
		t.Errorf("registered client: %v", err)
	}
	if _, err := s.OAuthClient(ctx, "https://old.example/c.json"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired document copy: %v", err)
	}
}
