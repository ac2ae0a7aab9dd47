package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Options configures Run; nil means defaults.
type Options struct {
	// Now is the clock the store under test reads (the adapter's own
	// Options.Now). The suite places idempotency expiry times relative to it,
	// so it must never run backwards. nil means time.Now.
	Now func() time.Time
	// Advance moves that clock forward (see Clock). When set, the suite also
	// checks a record that expires while stored, to the nanosecond; when nil
	// (a real clock) that subtest is skipped.
	Advance func(d time.Duration)
	// Concurrency is how many goroutines race in the concurrency subtests.
	// 0 means 30.
	Concurrency int
}

// Run runs the contract suite. newStore is called once per subtest and
// returns the store under test; it registers its own cleanup (t.Cleanup) to
// close the store. It may return a fresh store or the same backing store
// every time: the suite's IDs are unique per subtest. Subtests run one after
// another, never in parallel, because they may share a manual clock.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts *Options) {
	s := &suite{newStore: newStore, now: time.Now, racers: 30}
	if opts != nil {
		if opts.Now != nil {
			s.now = opts.Now
		}
		s.advance = opts.Advance
		if opts.Concurrency > 0 {
			s.racers = opts.Concurrency
		}
	}
	t.Run("Credentials", s.credentials)
	t.Run("CredentialUpdates", s.credentialUpdates)
	t.Run("Confirmations", s.confirmations)
	t.Run("TaskTokens", s.taskTokens)
	t.Run("Idempotency", s.idempotency)
	t.Run("Reviews", s.reviews)
	t.Run("Audit", s.audit)
	t.Run("Quotas", s.quotas)
	t.Run("Listings", s.listings)
	t.Run("ItemSize", s.itemSize)
	t.Run("Scripts", s.scripts)
	t.Run("OAuth", s.oauth)
	t.Run("Counts", s.counts)
	t.Run("ApprovalGrants", s.approvalGrants)
	t.Run("Sessions", s.sessions)
	t.Run("Passkeys", s.passkeys)
}

// itemSize: both stores refuse a record over DynamoDB's item limit with
// ErrTooLarge, keep nothing of it, and accept one well under it.
func (s *suite) itemSize(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	huge := minimalConfirmation(uid(t), s.now())
	huge.Operations[0].Args.Body = json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	assertErrIs(t, "CreateConfirmation (1 MiB)", st.CreateConfirmation(ctx, huge), store.ErrTooLarge)
	_, err := st.GetConfirmation(ctx, huge.ID)
	assertErrIs(t, "GetConfirmation (refused record)", err, store.ErrNotFound)

	ok := minimalConfirmation(uid(t), s.now())
	ok.Operations[0].Args.Body = json.RawMessage(`"` + strings.Repeat("x", 300<<10) + `"`)
	if err := st.CreateConfirmation(ctx, ok); err != nil {
		t.Fatalf("CreateConfirmation (300 KiB): %v", err)
	}
	ok.Operations[0].Outcome = &countersign.Outcome{Status: 200, Body: json.RawMessage(`"` + strings.Repeat("y", 200<<10) + `"`)}
	assertErrIs(t, "UpdateConfirmation (over the limit)", st.UpdateConfirmation(ctx, ok), store.ErrTooLarge)
	idem := fullIdempotency("cred-"+uid(t), s.now())
	idem.Body = make([]byte, 500<<10)
	assertErrIs(t, "CreateIdempotency (500 KiB)", st.CreateIdempotency(ctx, idem), store.ErrTooLarge)
}

// taskTokens: a confirmation's task token is kept apart from it, replaced
// by a later one, untouched by the confirmation's updates, and read back
// exactly whatever its alphabet.
func (s *suite) taskTokens(t *testing.T) {
	ctx := context.Background()
	// A token as Step Functions makes them (standard base64, 1 KB), one
	// with characters outside that alphabet, and short ones.
	b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x01\xfe\x7f", 256)))
	tokens := map[string]string{
		"base64 1 KB":        b64,
		"base64 unpadded":    strings.TrimRight(b64[:1021], "="),
		"url-safe":           "AAAA-_" + strings.Repeat("x", 100),
		"not base64":         "tok:cf_abc:0 with spaces",
		"one character":      "A",
		"base64 of one byte": "AQ==",
		"2048 characters":    strings.Repeat("Zz09+/", 341) + "AA",
	}
	t.Run("PutThenGetRoundTrips", func(t *testing.T) {
		st := s.newStore(t)
		for name, tok := range tokens {
			id := uid(t)
			if err := st.PutTaskToken(ctx, id, tok, s.now().Add(time.Hour).Unix()); err != nil {
				t.Fatalf("%s: PutTaskToken: %v", name, err)
			}
			got, err := st.TaskToken(ctx, id)
			if err != nil || got != tok {
				t.Errorf("%s: TaskToken = %q, %v; want the token put", name, got, err)
			}
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		st := s.newStore(t)
		_, err := st.TaskToken(ctx, uid(t))
		assertErrIs(t, "TaskToken", err, store.ErrNotFound)
	})
	t.Run("ReplacedByALaterOne", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		for _, tok := range []string{"first", b64} {
			if err := st.PutTaskToken(ctx, id, tok, 0); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := st.TaskToken(ctx, id); err != nil || got != b64 {
			t.Fatalf("TaskToken = %q, %v; want the later token", got, err)
		}
	})
	t.Run("ApartFromTheConfirmation", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)
		if err := st.PutTaskToken(ctx, c.ID, b64, c.TTL); err != nil {
			t.Fatal(err)
		}
		got := mustGetConfirmation(t, st, c.ID)
		assertEqual(t, "confirmation after PutTaskToken", *got, roundTrip(t, *c))
		got.Status = countersign.StatusApproved
		if err := st.UpdateConfirmation(ctx, got); err != nil {
			t.Fatal(err)
		}
		if tok, err := st.TaskToken(ctx, c.ID); err != nil || tok != b64 {
			t.Fatalf("TaskToken after an update = %q, %v; want it unchanged", tok, err)
		}
		other := uid(t)
		if _, err := st.TaskToken(ctx, other); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another confirmation's token: %v, want ErrNotFound", err)
		}
		if _, err := st.GetConfirmation(ctx, other); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetConfirmation of an id with no record: %v, want ErrNotFound", err)
		}
	})
	t.Run("EmptyRefused", func(t *testing.T) {
		st := s.newStore(t)
		if err := st.PutTaskToken(ctx, uid(t), "", 0); err == nil {
			t.Error("PutTaskToken accepted an empty token")
		}
		if err := st.PutTaskToken(ctx, "", "tok", 0); err == nil {
			t.Error("PutTaskToken accepted an empty id")
		}
	})
}

type suite struct {
	newStore func(t *testing.T) store.Store
	now      func() time.Time
	advance  func(time.Duration)
	racers   int
}

// zone is a non-UTC zone: records are written with times in it and must come
// back in UTC.
var zone = time.FixedZone("UTC+0230", 2*60*60+30*60)

func (s *suite) credentials(t *testing.T) {
	ctx := context.Background()

	t.Run("PutThenLookupByKeyHash", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		assertNoZeroFields(t, c)
		mustPutCredential(t, st, c)
		got, err := st.CredentialByKeyHash(ctx, c.KeyHash)
		if err != nil {
			t.Fatalf("CredentialByKeyHash: %v", err)
		}
		assertEqual(t, "credential", got, roundTrip(t, c))
		assertUTC(t, got)
	})

	t.Run("LookupNotFound", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		mustPutCredential(t, st, c)
		for _, tc := range []struct {
			name, keyHash string
		}{
			{"unknown hash", keyHash(uid(t))},
			{"empty hash", ""},
			{"credential id instead of hash", c.ID},
			{"uppercase hash", strings.ToUpper(c.KeyHash)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := st.CredentialByKeyHash(ctx, tc.keyHash)
				assertErrIs(t, "CredentialByKeyHash", err, store.ErrNotFound)
			})
		}
	})

	t.Run("ReplaceMovesKeyHash", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		old := fullCredential(id, s.now())
		mustPutCredential(t, st, old)
		repl := countersign.Credential{
			ID:      old.ID,
			KeyHash: keyHash(id + "-rotated"),
			Choice:  countersign.Refuse,
			Origin:  countersign.OriginOperator,
		}
		mustPutCredential(t, st, repl)
		got, err := st.CredentialByKeyHash(ctx, repl.KeyHash)
		if err != nil {
			t.Fatalf("CredentialByKeyHash(new hash): %v", err)
		}
		assertEqual(t, "replaced credential", got, roundTrip(t, repl))
		_, err = st.CredentialByKeyHash(ctx, old.KeyHash)
		assertErrIs(t, "CredentialByKeyHash(old hash)", err, store.ErrNotFound)
	})

	t.Run("CredentialsAreIndependent", func(t *testing.T) {
		st := s.newStore(t)
		a, b := fullCredential(uid(t), s.now()), fullCredential(uid(t), s.now())
		b.Choice = countersign.RunWithoutAsking
		mustPutCredential(t, st, a)
		mustPutCredential(t, st, b)
		for _, c := range []countersign.Credential{a, b} {
			got, err := st.CredentialByKeyHash(ctx, c.KeyHash)
			if err != nil {
				t.Fatalf("CredentialByKeyHash(%s): %v", c.ID, err)
			}
			assertEqual(t, "credential "+c.ID, got, roundTrip(t, c))
		}
	})

	t.Run("SetLastClient", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		c.LastClient = nil
		mustPutCredential(t, st, c)
		for i, cl := range []countersign.Client{
			{Name: "claude-code", Version: "2.0.1", CanAsk: true, SeenAt: s.now().In(zone).Add(time.Nanosecond)},
			{Name: "curl", Version: "8.5.0", SeenAt: s.now().Add(time.Hour)},
		} {
			if err := st.SetLastClient(ctx, c.ID, cl); err != nil {
				t.Fatalf("SetLastClient #%d: %v", i, err)
			}
			got, err := st.CredentialByKeyHash(ctx, c.KeyHash)
			if err != nil {
				t.Fatalf("CredentialByKeyHash #%d: %v", i, err)
			}
			want := c
			want.LastClient = &cl
			assertEqual(t, "credential after SetLastClient", got, roundTrip(t, want))
			assertUTC(t, got)
		}
	})

	t.Run("SetLastClientMissing", func(t *testing.T) {
		st := s.newStore(t)
		err := st.SetLastClient(ctx, uid(t), countersign.Client{Name: "x", SeenAt: s.now()})
		assertErrIs(t, "SetLastClient", err, store.ErrNotFound)
	})

	t.Run("CreateThenGetRoundTripsEveryField", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		if err := st.CreateCredential(ctx, c); err != nil {
			t.Fatalf("CreateCredential: %v", err)
		}
		got, err := st.GetCredential(ctx, c.ID)
		if err != nil {
			t.Fatalf("GetCredential: %v", err)
		}
		assertEqual(t, "credential", got, roundTrip(t, c))
		assertUTC(t, got)
		byKey, err := st.CredentialByKeyHash(ctx, c.KeyHash)
		if err != nil {
			t.Fatalf("CredentialByKeyHash: %v", err)
		}
		assertEqual(t, "credential by key hash", byKey, roundTrip(t, c))
	})

	t.Run("CreateDuplicateConflicts", func(t *testing.T) {
		st := s.newStore(t)
		first := fullCredential(uid(t), s.now())
		if err := st.CreateCredential(ctx, first); err != nil {
			t.Fatalf("CreateCredential: %v", err)
		}
		dup := countersign.Credential{ID: first.ID, KeyHash: keyHash(first.ID + "-second"), Choice: countersign.RunWithoutAsking}
		assertErrIs(t, "CreateCredential(duplicate)", st.CreateCredential(ctx, dup), store.ErrConflict)
		got, err := st.GetCredential(ctx, first.ID)
		if err != nil {
			t.Fatalf("GetCredential: %v", err)
		}
		assertEqual(t, "credential after duplicate create", got, roundTrip(t, first))
		_, err = st.CredentialByKeyHash(ctx, dup.KeyHash)
		assertErrIs(t, "CredentialByKeyHash(the duplicate's key)", err, store.ErrNotFound)
	})

	t.Run("CreateConflictsWithPut", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		mustPutCredential(t, st, c)
		assertErrIs(t, "CreateCredential(after PutCredential)", st.CreateCredential(ctx, c), store.ErrConflict)
	})

	t.Run("GetNotFound", func(t *testing.T) {
		st := s.newStore(t)
		_, err := st.GetCredential(ctx, uid(t))
		assertErrIs(t, "GetCredential", err, store.ErrNotFound)
	})

	t.Run("ListInIDOrder", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		in := []countersign.Credential{
			fullCredential(prefix+"-c", s.now()),
			fullCredential(prefix+"-a", s.now()),
			fullCredential(prefix+"-b", s.now()),
		}
		in[1].LastClient = nil
		in[2].Choice, in[2].ReadOnly, in[2].Connections = countersign.RunWithoutAsking, false, nil
		for i, c := range in {
			if i == 0 {
				mustPutCredential(t, st, c)
			} else if err := st.CreateCredential(ctx, c); err != nil {
				t.Fatalf("CreateCredential(%s): %v", c.ID, err)
			}
		}
		got := listCredentials(t, st, prefix)
		want := []countersign.Credential{roundTrip(t, in[1]), roundTrip(t, in[2]), roundTrip(t, in[0])}
		assertEqual(t, "listed credentials", got, want)
		for _, c := range got {
			assertUTC(t, c)
		}
	})

	t.Run("DeleteRevokesTheKey", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		gone, kept := fullCredential(prefix+"-gone", s.now()), fullCredential(prefix+"-kept", s.now())
		mustPutCredential(t, st, gone)
		mustPutCredential(t, st, kept)
		if err := st.DeleteCredential(ctx, gone.ID); err != nil {
			t.Fatalf("DeleteCredential: %v", err)
		}
		_, err := st.CredentialByKeyHash(ctx, gone.KeyHash)
		assertErrIs(t, "CredentialByKeyHash(deleted)", err, store.ErrNotFound)
		_, err = st.GetCredential(ctx, gone.ID)
		assertErrIs(t, "GetCredential(deleted)", err, store.ErrNotFound)
		assertErrIs(t, "DeleteCredential(again)", st.DeleteCredential(ctx, gone.ID), store.ErrNotFound)
		// A late write of the gateway does not bring it back.
		err = st.SetLastClient(ctx, gone.ID, countersign.Client{Name: "late", SeenAt: s.now()})
		assertErrIs(t, "SetLastClient(deleted)", err, store.ErrNotFound)
		_, err = st.GetCredential(ctx, gone.ID)
		assertErrIs(t, "GetCredential(after SetLastClient)", err, store.ErrNotFound)
		assertEqual(t, "credentials after delete", listCredentials(t, st, prefix), []countersign.Credential{roundTrip(t, kept)})
		if _, err := st.CredentialByKeyHash(ctx, kept.KeyHash); err != nil {
			t.Fatalf("CredentialByKeyHash(kept): %v", err)
		}
		// The ID can be used again, with a new key.
		again := countersign.Credential{ID: gone.ID, KeyHash: keyHash(gone.ID + "-new"), Choice: countersign.AskPerson}
		if err := st.CreateCredential(ctx, again); err != nil {
			t.Fatalf("CreateCredential(after delete): %v", err)
		}
		_, err = st.CredentialByKeyHash(ctx, gone.KeyHash)
		assertErrIs(t, "CredentialByKeyHash(old key after re-create)", err, store.ErrNotFound)
	})

	t.Run("DeleteMissingIsNotFound", func(t *testing.T) {
		st := s.newStore(t)
		assertErrIs(t, "DeleteCredential", st.DeleteCredential(ctx, uid(t)), store.ErrNotFound)
	})

	t.Run("GetAndListReturnCopies", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		want := roundTrip(t, c)
		mustPutCredential(t, st, c)
		got, err := st.GetCredential(ctx, c.ID)
		if err != nil {
			t.Fatalf("GetCredential: %v", err)
		}
		got.Connections[0] = "mutated-output"
		got.LastClient.Name = "mutated-output"
		listed := listCredentials(t, st, c.ID)
		listed[0].Connections[0] = "mutated-list"
		again, err := st.GetCredential(ctx, c.ID)
		if err != nil {
			t.Fatalf("GetCredential again: %v", err)
		}
		assertEqual(t, "credential after mutations", again, want)
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		st := s.newStore(t)
		c := fullCredential(uid(t), s.now())
		want := roundTrip(t, c)
		mustPutCredential(t, st, c)
		c.Connections[0] = "mutated-input"
		c.LastClient.Name = "mutated-input"
		got, err := st.CredentialByKeyHash(ctx, c.KeyHash)
		if err != nil {
			t.Fatalf("CredentialByKeyHash: %v", err)
		}
		got.Connections[0] = "mutated-output"
		got.LastClient.Name = "mutated-output"
		again, err := st.CredentialByKeyHash(ctx, c.KeyHash)
		if err != nil {
			t.Fatalf("CredentialByKeyHash again: %v", err)
		}
		assertEqual(t, "credential after mutations", again, want)
	})
}

func (s *suite) confirmations(t *testing.T) {
	ctx := context.Background()

	t.Run("CreateThenGetRoundTripsEveryField", func(t *testing.T) {
		st := s.newStore(t)
		c := fullConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)
		if c.Version != 1 {
			t.Fatalf("Version after create = %d, want 1", c.Version)
		}
		assertNoZeroFields(t, *c)
		got := mustGetConfirmation(t, st, c.ID)
		assertEqual(t, "confirmation", *got, roundTrip(t, *c))
		assertUTC(t, got)
		// Spot checks that do not rely on the JSON round trip.
		if !got.CreatedAt.Equal(c.CreatedAt) || got.CreatedAt.Nanosecond() != c.CreatedAt.Nanosecond() {
			t.Errorf("CreatedAt = %v, want %v to the nanosecond", got.CreatedAt, c.CreatedAt)
		}
		if string(got.Operations[0].Outcome.Body) != string(c.Operations[0].Outcome.Body) {
			t.Errorf("outcome body = %s, want %s", got.Operations[0].Outcome.Body, c.Operations[0].Outcome.Body)
		}
	})

	t.Run("CreateSetsVersionOne", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		c.Version = 41
		mustCreateConfirmation(t, st, c)
		if got := mustGetConfirmation(t, st, c.ID); got.Version != 1 || c.Version != 1 {
			t.Fatalf("Version stored %d, passed record %d; want 1 and 1", got.Version, c.Version)
		}
	})

	t.Run("CreateDuplicateConflicts", func(t *testing.T) {
		st := s.newStore(t)
		first := minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, first)
		dup := minimalConfirmation(first.ID, s.now())
		dup.Reason = "second writer"
		err := st.CreateConfirmation(ctx, dup)
		assertErrIs(t, "CreateConfirmation(duplicate)", err, store.ErrConflict)
		assertEqual(t, "confirmation after duplicate create", *mustGetConfirmation(t, st, first.ID), roundTrip(t, *first))
	})

	t.Run("GetNotFound", func(t *testing.T) {
		st := s.newStore(t)
		_, err := st.GetConfirmation(ctx, uid(t))
		assertErrIs(t, "GetConfirmation", err, store.ErrNotFound)
	})

	t.Run("UpdateWithCurrentVersion", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		c.Operations = append(c.Operations, fullOperation())
		mustCreateConfirmation(t, st, c)
		for want := int64(2); want <= 4; want++ {
			got := mustGetConfirmation(t, st, c.ID)
			decided := s.now().In(zone)
			got.Status = countersign.StatusApproved
			got.DecidedAt = &decided
			got.DecidedBy = "approver-" + got.DecidedBy
			got.RedeemBy = nil
			got.Result = json.RawMessage(fmt.Sprintf(`{"n":%d}`, want))
			op := &got.Operations[want%2]
			op.Selected = !op.Selected
			op.State = countersign.OpDone
			op.Outcome = &countersign.Outcome{Status: int(200 + want), Headers: map[string]string{"X-N": fmt.Sprint(want)}, Body: json.RawMessage(`"ok"`)}
			if err := st.UpdateConfirmation(ctx, got); err != nil {
				t.Fatalf("UpdateConfirmation to version %d: %v", want, err)
			}
			if got.Version != want {
				t.Fatalf("passed record Version = %d, want %d", got.Version, want)
			}
			stored := mustGetConfirmation(t, st, c.ID)
			assertEqual(t, "updated confirmation", *stored, roundTrip(t, *got))
			assertUTC(t, stored)
		}
	})

	t.Run("UpdateWithStaleVersionConflicts", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)
		winner, loser := mustGetConfirmation(t, st, c.ID), mustGetConfirmation(t, st, c.ID)
		winner.Status = countersign.StatusApproved
		if err := st.UpdateConfirmation(ctx, winner); err != nil {
			t.Fatalf("UpdateConfirmation(winner): %v", err)
		}
		loser.Status = countersign.StatusRejected
		err := st.UpdateConfirmation(ctx, loser)
		assertErrIs(t, "UpdateConfirmation(stale)", err, store.ErrConflict)
		if loser.Version != 1 {
			t.Errorf("failed update changed the passed Version to %d, want 1", loser.Version)
		}
		assertEqual(t, "confirmation after stale update", *mustGetConfirmation(t, st, c.ID), roundTrip(t, *winner))

		// A version from the future conflicts too.
		ahead := mustGetConfirmation(t, st, c.ID)
		ahead.Version += 5
		assertErrIs(t, "UpdateConfirmation(future version)", st.UpdateConfirmation(ctx, ahead), store.ErrConflict)
	})

	t.Run("EditedByAnUpdate", func(t *testing.T) {
		// An approver's edit is state: the update that records the
		// approval stores the edited call beside the agent's, which stays.
		st := s.newStore(t)
		c := fullConfirmation(uid(t), s.now())
		c.Status = countersign.StatusPending
		mustCreateConfirmation(t, st, c)
		got := mustGetConfirmation(t, st, c.ID)
		op := &got.Operations[0]
		op.EditedCall = &countersign.EditedCall{Args: countersign.Args{Path: map[string]string{"id": "12"}, Query: map[string]any{"hard": "false"},
			Body: json.RawMessage(`{"amount":500}`)}, Binding: keyHash("edited"), RawQuery: "hard=false"}
		op.Edited = map[string]countersign.EditedField{"body.amount": {From: json.RawMessage("900"), To: json.RawMessage("500")}}
		got.Status = countersign.StatusApproved
		want := roundTrip(t, *got)
		if err := st.UpdateConfirmation(ctx, got); err != nil {
			t.Fatalf("UpdateConfirmation: %v", err)
		}
		want.Version = got.Version
		assertEqual(t, "confirmation after an edit", *mustGetConfirmation(t, st, c.ID), want)
	})

	t.Run("FixedAtCreation", func(t *testing.T) {
		// An update changes the record's state; what was fixed when it was
		// created keeps its stored value, and the number of operations
		// cannot change.
		st := s.newStore(t)
		c := fullConfirmation(uid(t), s.now())
		c.Status = countersign.StatusPending
		mustCreateConfirmation(t, st, c)
		want := roundTrip(t, *c)
		got := mustGetConfirmation(t, st, c.ID)
		got.Reason, got.Credential, got.Kind, got.GatewayRuns, got.TTL = "changed", "changed", countersign.KindCall, false, 1
		got.Asker = &countersign.Asker{Name: "changed"}
		got.CreatedAt, got.ExpiresAt = got.CreatedAt.Add(time.Hour), got.ExpiresAt.Add(time.Hour)
		op := &got.Operations[0]
		op.Connection, op.Method, op.Path, op.Endpoint, op.Binding = "x", "X", "/x", "/x", keyHash("x")
		op.Args.Path = map[string]string{"changed": "1"}
		op.Payload, op.ContentType, op.RawQuery = []byte("changed"), "text/changed", "changed=1"
		op.Args.Headers = map[string]string{"X-Tenant-Id": "production", "X-Cascade": "all"}
		op.Negotiation = map[string]string{"Accept": "text/html"}
		got.Status = countersign.StatusApproved
		op.State = countersign.OpClaimed
		if err := st.UpdateConfirmation(ctx, got); err != nil {
			t.Fatalf("UpdateConfirmation: %v", err)
		}
		want.Status, want.Version, want.Operations[0].State = countersign.StatusApproved, 2, countersign.OpClaimed
		assertEqual(t, "confirmation after changing fixed fields", *mustGetConfirmation(t, st, c.ID), want)

		for _, n := range []int{1, 3, 0} {
			upd := mustGetConfirmation(t, st, c.ID)
			upd.Operations = append(upd.Operations[:0:0], upd.Operations...)
			switch {
			case n == 0:
				upd.Operations = nil
			case n < len(upd.Operations):
				upd.Operations = upd.Operations[:n]
			default:
				upd.Operations = append(upd.Operations, fullOperation())
			}
			err := st.UpdateConfirmation(ctx, upd)
			if err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("UpdateConfirmation with %d operations (the record has 2): %v, want an error of its own", len(upd.Operations), err)
			}
		}
		assertEqual(t, "confirmation after refused updates", *mustGetConfirmation(t, st, c.ID), want)
	})

	t.Run("UpdateMissingIsNotFound", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		c.Version = 1
		err := st.UpdateConfirmation(ctx, c)
		assertErrIs(t, "UpdateConfirmation(missing)", err, store.ErrNotFound)
		_, err = st.GetConfirmation(ctx, c.ID)
		assertErrIs(t, "GetConfirmation after failed update", err, store.ErrNotFound)
	})

	t.Run("NilAndEmpty", func(t *testing.T) {
		st := s.newStore(t)
		for _, tc := range []struct {
			name string
			edit func(c *countersign.Confirmation)
			// check asserts what matters to callers beyond the JSON round trip.
			check func(tb testing.TB, got *countersign.Confirmation)
		}{
			{
				name: "nil operations",
				edit: func(c *countersign.Confirmation) { c.Operations = nil },
				check: func(tb testing.TB, got *countersign.Confirmation) {
					if got.Operations != nil {
						tb.Errorf("Operations = %#v, want nil", got.Operations)
					}
				},
			},
			{
				name: "empty operations",
				edit: func(c *countersign.Confirmation) { c.Operations = []countersign.Operation{} },
				check: func(tb testing.TB, got *countersign.Confirmation) {
					if got.Operations == nil || len(got.Operations) != 0 {
						tb.Errorf("Operations = %#v, want empty and non-nil", got.Operations)
					}
				},
			},
			{
				name: "waiting operation without outcome, args all nil",
				edit: func(c *countersign.Confirmation) {
					c.Operations = []countersign.Operation{{Connection: "crm", Method: "GET", Path: "/x", Endpoint: "/x"}}
				},
				check: func(tb testing.TB, got *countersign.Confirmation) {
					op := got.Operations[0]
					if op.Outcome != nil || op.State != countersign.OpWaiting || op.Args.Path != nil || op.Args.Query != nil {
						tb.Errorf("operation = %#v, want no outcome, waiting, nil path and query", op)
					}
				},
			},
			{
				name: "empty args maps and outcome without body",
				edit: func(c *countersign.Confirmation) {
					c.Operations = []countersign.Operation{{
						Args:    countersign.Args{Path: map[string]string{}, Query: map[string]any{}, Body: json.RawMessage(`{}`)},
						State:   countersign.OpDone,
						Outcome: &countersign.Outcome{Status: 204},
					}}
				},
				check: func(tb testing.TB, got *countersign.Confirmation) {
					op := got.Operations[0]
					if op.Args.Path == nil || op.Args.Query == nil {
						tb.Errorf("args = %#v, want empty non-nil maps", op.Args)
					}
					if op.Outcome == nil || op.Outcome.Body != nil || op.Outcome.Headers != nil {
						tb.Errorf("outcome = %#v, want status only", op.Outcome)
					}
				},
			},
			{
				name: "no decision, no result",
				edit: func(c *countersign.Confirmation) {
					c.DecidedAt, c.RedeemBy, c.RedeemedAt, c.Result = nil, nil, nil, nil
				},
				check: func(tb testing.TB, got *countersign.Confirmation) {
					if got.DecidedAt != nil || got.RedeemBy != nil || got.RedeemedAt != nil || got.Result != nil {
						tb.Errorf("got decided %v, redeem by %v, redeemed %v, result %q; want all nil",
							got.DecidedAt, got.RedeemBy, got.RedeemedAt, got.Result)
					}
				},
			},
			{
				name: "zero times and zero TTL",
				edit: func(c *countersign.Confirmation) { c.CreatedAt, c.ExpiresAt, c.TTL = time.Time{}, time.Time{}, 0 },
				check: func(tb testing.TB, got *countersign.Confirmation) {
					if !got.CreatedAt.IsZero() || !got.ExpiresAt.IsZero() || got.TTL != 0 {
						tb.Errorf("got created %v, expires %v, ttl %d; want zero", got.CreatedAt, got.ExpiresAt, got.TTL)
					}
				},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := fullConfirmation(uid(t), s.now())
				tc.edit(c)
				mustCreateConfirmation(t, st, c)
				got := mustGetConfirmation(t, st, c.ID)
				assertEqual(t, "confirmation", *got, roundTrip(t, *c))
				tc.check(t, got)
			})
		}
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		st := s.newStore(t)
		c := fullConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)
		want := roundTrip(t, *c)

		// Mutating the record after the write does not reach the store.
		c.Status = countersign.StatusFailed
		c.Operations[0].Outcome.Body[1] = 'X'
		c.Operations[0].Args.Path["id"] = "mutated"
		*c.DecidedAt = c.DecidedAt.Add(time.Hour)

		// Nor does mutating what a read returned.
		got := mustGetConfirmation(t, st, c.ID)
		got.Status = countersign.StatusFailed
		got.Operations[0].Outcome.Body[1] = 'Y'
		got.Operations[0].Outcome.Headers["Content-Type"] = "mutated"
		got.Operations[0].Args.Query["limit"] = "mutated"
		got.Operations = append(got.Operations[:0], countersign.Operation{Method: "MUTATED"})
		*got.RedeemBy = got.RedeemBy.Add(time.Hour)
		got.Result[0] = '['

		assertEqual(t, "confirmation after mutations", *mustGetConfirmation(t, st, c.ID), want)
	})

	t.Run("UpdatesAreIsolated", func(t *testing.T) {
		st := s.newStore(t)
		a, b := minimalConfirmation(uid(t), s.now()), minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, a)
		mustCreateConfirmation(t, st, b)
		upd := mustGetConfirmation(t, st, a.ID)
		upd.Status = countersign.StatusExpired
		if err := st.UpdateConfirmation(ctx, upd); err != nil {
			t.Fatalf("UpdateConfirmation: %v", err)
		}
		assertEqual(t, "untouched confirmation", *mustGetConfirmation(t, st, b.ID), roundTrip(t, *b))
	})

	t.Run("ConcurrentUpdatesExactlyOneWins", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)

		// Every racer reads version 1 before any of them writes.
		copies := make([]*countersign.Confirmation, s.racers)
		for i := range copies {
			copies[i] = mustGetConfirmation(t, st, c.ID)
			copies[i].DecidedBy = "racer-" + string(rune('A'+i%26)) + uid(t)
			copies[i].Status = countersign.StatusApproved
		}
		errs := race(s.racers, func(i int) error { return st.UpdateConfirmation(ctx, copies[i]) })

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("racers %d and %d both updated version 1", winner, i)
				}
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("racer %d: error %v, want ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no racer won")
		}
		got := mustGetConfirmation(t, st, c.ID)
		if got.Version != 2 || got.DecidedBy != copies[winner].DecidedBy {
			t.Fatalf("stored Version %d by %q, want 2 by the winner %q", got.Version, got.DecidedBy, copies[winner].DecidedBy)
		}
	})

	// A quorum's approvals are counted by conditional writes on the
	// version: of two approvers who read the same version, one write
	// lands; the other, read again, adds its approval to the first's.
	t.Run("ApprovalsCountedByVersion", func(t *testing.T) {
		st := s.newStore(t)
		c := minimalConfirmation(uid(t), s.now())
		mustCreateConfirmation(t, st, c)
		people := []countersign.Person{{Issuer: "https://idp.example.com", Subject: "ada", Email: "ada@example.com", Name: "Ada"},
			{Issuer: "https://idp.example.com", Subject: "bob", Email: "bob@example.com"}}
		copies := make([]*countersign.Confirmation, 2)
		for i := range copies {
			copies[i] = mustGetConfirmation(t, st, c.ID)
			copies[i].Required = 2
			copies[i].Approvals = append(copies[i].Approvals, countersign.Approval{Person: people[i], Channel: "ops", At: s.now().UTC().Truncate(time.Millisecond)})
		}
		errs := race(2, func(i int) error { return st.UpdateConfirmation(ctx, copies[i]) })
		loser := -1
		for i, err := range errs {
			if errors.Is(err, store.ErrConflict) {
				loser = i
			} else if err != nil {
				t.Fatalf("approver %d: %v", i, err)
			}
		}
		if loser < 0 {
			t.Fatal("both approvals were written on version 1")
		}
		again := mustGetConfirmation(t, st, c.ID)
		if len(again.Approvals) != 1 || again.Approvals[0].Person != people[1-loser] {
			t.Fatalf("after the race: %+v", again.Approvals)
		}
		again.Approvals = append(again.Approvals, countersign.Approval{Person: people[loser], Channel: "ops", At: s.now().UTC().Truncate(time.Millisecond)})
		at := s.now().UTC().Truncate(time.Millisecond)
		again.Status, again.DecidedAt, again.DecidedBy, again.DecidedByPerson = countersign.StatusApproved, &at, "ops", &people[loser]
		if err := st.UpdateConfirmation(ctx, again); err != nil {
			t.Fatal(err)
		}
		got := mustGetConfirmation(t, st, c.ID)
		if got.Version != 3 || got.Required != 2 || len(got.Approvals) != 2 || got.DecidedByPerson == nil || *got.DecidedByPerson != people[loser] ||
			got.Approvals[1].Person != people[loser] || got.Approvals[0].Channel != "ops" {
			t.Fatalf("stored %+v (version %d), want both approvals, the quorum and the deciding person at version 3", got.Approvals, got.Version)
		}
	})
}

func (s *suite) idempotency(t *testing.T) {
	ctx := context.Background()

	t.Run("CreateThenGet", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		r.Version = 7
		mustCreateIdempotency(t, st, r)
		if r.Version != 1 {
			t.Fatalf("Version after create = %d, want 1", r.Version)
		}
		assertNoZeroFields(t, *r)
		got := mustGetIdempotency(t, st, r.Credential, r.Key)
		assertEqual(t, "idempotency record", *got, roundTrip(t, *r))
		assertUTC(t, got)
	})

	t.Run("CreateLiveConflicts", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		mustCreateIdempotency(t, st, r)
		dup := fullIdempotency(r.Credential, s.now())
		dup.Key, dup.RequestHash = r.Key, "another-request"
		err := st.CreateIdempotency(ctx, dup)
		assertErrIs(t, "CreateIdempotency(live duplicate)", err, store.ErrConflict)
		assertEqual(t, "record after duplicate create", *mustGetIdempotency(t, st, r.Credential, r.Key), roundTrip(t, *r))
	})

	t.Run("KeysAreScopedByCredential", func(t *testing.T) {
		st := s.newStore(t)
		key := "key-" + uid(t)
		a, b := fullIdempotency(uid(t), s.now()), fullIdempotency(uid(t), s.now())
		a.Key, b.Key = key, key
		b.RequestHash = "other"
		mustCreateIdempotency(t, st, a)
		mustCreateIdempotency(t, st, b)
		assertEqual(t, "record a", *mustGetIdempotency(t, st, a.Credential, key), roundTrip(t, *a))
		assertEqual(t, "record b", *mustGetIdempotency(t, st, b.Credential, key), roundTrip(t, *b))
	})

	t.Run("GetNotFound", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		mustCreateIdempotency(t, st, r)
		for _, tc := range []struct{ name, credential, key string }{
			{"unknown key", r.Credential, uid(t)},
			{"unknown credential", uid(t), r.Key},
			{"credential and key swapped", r.Key, r.Credential},
			{"joined differently", r.Credential + r.Key[:1], r.Key[1:]},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := st.GetIdempotency(ctx, tc.credential, tc.key)
				assertErrIs(t, "GetIdempotency", err, store.ErrNotFound)
			})
		}
	})

	t.Run("ExpiredIsNotFoundAndReplaced", func(t *testing.T) {
		st := s.newStore(t)
		for _, tc := range []struct {
			name string
			age  time.Duration // how long ago the record expired
		}{
			{"expired an hour ago", time.Hour},
			{"expired a nanosecond ago", time.Nanosecond},
			{"expires exactly now", 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				old := fullIdempotency(uid(t), s.now())
				old.ExpiresAt = s.now().Add(-tc.age)
				mustCreateIdempotency(t, st, old)
				_, err := st.GetIdempotency(ctx, old.Credential, old.Key)
				assertErrIs(t, "GetIdempotency(expired)", err, store.ErrNotFound)

				repl := fullIdempotency(old.Credential, s.now())
				repl.Key, repl.RequestHash, repl.Done = old.Key, "replacement", false
				mustCreateIdempotency(t, st, repl)
				if repl.Version != 1 {
					t.Errorf("replacement Version = %d, want 1", repl.Version)
				}
				assertEqual(t, "replacement", *mustGetIdempotency(t, st, old.Credential, old.Key), roundTrip(t, *repl))
			})
		}
	})

	t.Run("ExpiresWhileStored", func(t *testing.T) {
		if s.advance == nil {
			t.Skip("needs Options.Advance (a manual clock)")
		}
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		r.ExpiresAt = s.now().Add(time.Minute)
		mustCreateIdempotency(t, st, r)

		s.advance(time.Minute - time.Nanosecond)
		mustGetIdempotency(t, st, r.Credential, r.Key)
		assertErrIs(t, "CreateIdempotency(1ns before expiry)", st.CreateIdempotency(ctx, fullIdempotency(r.Credential, s.now(), r.Key)), store.ErrConflict)

		s.advance(time.Nanosecond)
		_, err := st.GetIdempotency(ctx, r.Credential, r.Key)
		assertErrIs(t, "GetIdempotency(at expiry)", err, store.ErrNotFound)
		repl := fullIdempotency(r.Credential, s.now(), r.Key)
		mustCreateIdempotency(t, st, repl)
		assertEqual(t, "replacement", *mustGetIdempotency(t, st, r.Credential, r.Key), roundTrip(t, *repl))
	})

	t.Run("UpdateCompareAndSwap", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		r.Done, r.Status, r.Headers, r.Body = false, 0, nil, nil
		mustCreateIdempotency(t, st, r)

		winner := mustGetIdempotency(t, st, r.Credential, r.Key)
		loser := mustGetIdempotency(t, st, r.Credential, r.Key)
		winner.Done, winner.Status = true, 201
		winner.Headers = map[string]string{"Location": "/contacts/13"}
		winner.Body = []byte{0, 1, 2, 0xff}
		if err := st.UpdateIdempotency(ctx, winner); err != nil {
			t.Fatalf("UpdateIdempotency: %v", err)
		}
		if winner.Version != 2 {
			t.Fatalf("Version after update = %d, want 2", winner.Version)
		}
		assertEqual(t, "updated record", *mustGetIdempotency(t, st, r.Credential, r.Key), roundTrip(t, *winner))

		loser.Done, loser.Status = true, 500
		assertErrIs(t, "UpdateIdempotency(stale)", st.UpdateIdempotency(ctx, loser), store.ErrConflict)
		if loser.Version != 1 {
			t.Errorf("failed update changed the passed Version to %d, want 1", loser.Version)
		}
		assertEqual(t, "record after stale update", *mustGetIdempotency(t, st, r.Credential, r.Key), roundTrip(t, *winner))
	})

	t.Run("UpdateMissingIsNotFound", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		r.Version = 1
		assertErrIs(t, "UpdateIdempotency(missing)", st.UpdateIdempotency(ctx, r), store.ErrNotFound)
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		st := s.newStore(t)
		r := fullIdempotency(uid(t), s.now())
		mustCreateIdempotency(t, st, r)
		want := roundTrip(t, *r)
		r.Body[0] = 'X'
		r.Headers["Content-Type"] = "mutated"
		got := mustGetIdempotency(t, st, r.Credential, r.Key)
		got.Body[0] = 'Y'
		got.Headers["Content-Type"] = "mutated"
		got.Done = !got.Done
		assertEqual(t, "record after mutations", *mustGetIdempotency(t, st, r.Credential, r.Key), want)
	})

	t.Run("ConcurrentCreateExactlyOneWins", func(t *testing.T) {
		st := s.newStore(t)
		cred, key := uid(t), uid(t)
		recs := make([]*countersign.Idempotency, s.racers)
		for i := range recs {
			recs[i] = fullIdempotency(cred, s.now(), key)
			recs[i].RequestHash = "racer-" + uid(t)
		}
		errs := race(s.racers, func(i int) error { return st.CreateIdempotency(ctx, recs[i]) })
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("racers %d and %d both created (%s, %s)", winner, i, cred, key)
				}
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("racer %d: error %v, want ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no racer won")
		}
		if got := mustGetIdempotency(t, st, cred, key); got.RequestHash != recs[winner].RequestHash {
			t.Fatalf("stored request hash %q, want the winner's %q", got.RequestHash, recs[winner].RequestHash)
		}
	})
}

func (s *suite) reviews(t *testing.T) {
	ctx := context.Background()

	t.Run("ListOldestFirstOnlyReviews", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		base := s.now()
		// Created out of order; b and c share a time, so the ID decides.
		in := []*countersign.Confirmation{
			fullReview(prefix+"-d", base.Add(3*time.Second)),
			fullReview(prefix+"-a", base.In(zone)),
			fullReview(prefix+"-c", base.Add(time.Second)),
			fullReview(prefix+"-b", base.Add(time.Second).In(zone)),
			fullReview(prefix+"-e", base.Add(3*time.Second+time.Nanosecond)),
		}
		assertNoZeroFields(t, *in[0])
		for _, r := range in {
			mustCreateConfirmation(t, st, r)
		}
		// A call confirmation is not a review item.
		mustCreateConfirmation(t, st, minimalConfirmation(prefix+"-call", base))
		got := listReviews(t, st, prefix)
		var ids []string
		for _, r := range got {
			ids = append(ids, strings.TrimPrefix(r.ID, prefix))
			assertUTC(t, r)
		}
		assertEqual(t, "review order", ids, []string{"-a", "-b", "-c", "-d", "-e"})
		byID := map[string]*countersign.Confirmation{}
		for _, r := range in {
			byID[r.ID] = r
		}
		for _, r := range got {
			assertEqual(t, "review "+r.ID, *r, roundTrip(t, *byID[r.ID]))
		}
	})

	t.Run("ListConfirmationsLeavesOutReviews", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		mustCreateConfirmation(t, st, minimalConfirmation(prefix+"-b", s.now().Add(time.Second)))
		mustCreateConfirmation(t, st, fullReview(prefix+"-a", s.now()))
		var ids []string
		for _, c := range listAll(t, st.ListConfirmations, countersign.ListQuery{}, prefix) {
			ids = append(ids, strings.TrimPrefix(c.ID, prefix))
		}
		assertEqual(t, "confirmations", ids, []string{"-b"})
		ids = nil
		for _, c := range listAll(t, st.ListReviews, countersign.ListQuery{}, prefix) {
			ids = append(ids, strings.TrimPrefix(c.ID, prefix))
		}
		assertEqual(t, "reviews", ids, []string{"-a"})
	})

	t.Run("UpdateKeepsItListed", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		r := fullReview(prefix+"-1", s.now())
		r.Status, r.DecidedAt, r.DecidedBy, r.DecisionReason = countersign.StatusPending, nil, "", ""
		mustCreateConfirmation(t, st, r)
		at := s.now()
		r.Status, r.DecidedAt, r.DecidedBy, r.DecisionReason = countersign.StatusRejected, &at, "operator:root", "not today"
		if err := st.UpdateConfirmation(ctx, r); err != nil {
			t.Fatalf("UpdateConfirmation: %v", err)
		}
		got := listReviews(t, st, prefix)
		if len(got) != 1 || got[0].Status != countersign.StatusRejected || got[0].DecisionReason != "not today" {
			t.Fatalf("listed %+v, want the one review, rejected", got)
		}
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		st := s.newStore(t)
		prefix := uid(t)
		r := fullReview(prefix+"-1", s.now())
		mustCreateConfirmation(t, st, r)
		want := roundTrip(t, *r)
		want.Version = 1
		r.Operations[0].Args.Path["id"] = "mutated"
		r.Operations[0].Outcome.Body[1] = 'X'
		got := listReviews(t, st, prefix)
		got[0].Status = "mutated"
		got[0].Operations[0].Args.Body[1] = 'Y'
		assertEqual(t, "review after mutations", *listReviews(t, st, prefix)[0], want)
	})
}

// race runs f(0..n-1) in n goroutines released together and returns their errors.
func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// listReviews lists the reviews whose IDs start with prefix, in store order.
func listReviews(tb testing.TB, st store.Store, prefix string) []*countersign.Confirmation {
	tb.Helper()
	return listAll(tb, st.ListReviews, countersign.ListQuery{}, prefix)
}

// listCredentials lists the credentials whose IDs start with prefix, in store order.
func listCredentials(tb testing.TB, st store.Store, prefix string) []countersign.Credential {
	tb.Helper()
	return listAll(tb, st.ListCredentials, countersign.ListQuery{}, prefix)
}

func mustPutCredential(tb testing.TB, st store.Store, c countersign.Credential) {
	tb.Helper()
	if err := st.PutCredential(context.Background(), c); err != nil {
		tb.Fatalf("PutCredential(%s): %v", c.ID, err)
	}
}

func mustCreateConfirmation(tb testing.TB, st store.Store, c *countersign.Confirmation) {
	tb.Helper()
	if err := st.CreateConfirmation(context.Background(), c); err != nil {
		tb.Fatalf("CreateConfirmation(%s): %v", c.ID, err)
	}
}

func mustGetConfirmation(tb testing.TB, st store.Store, id string) *countersign.Confirmation {
	tb.Helper()
	c, err := st.GetConfirmation(context.Background(), id)
	if err != nil {
		tb.Fatalf("GetConfirmation(%s): %v", id, err)
	}
	return c
}

func mustCreateIdempotency(tb testing.TB, st store.Store, r *countersign.Idempotency) {
	tb.Helper()
	if err := st.CreateIdempotency(context.Background(), r); err != nil {
		tb.Fatalf("CreateIdempotency(%s, %s): %v", r.Credential, r.Key, err)
	}
}

func mustGetIdempotency(tb testing.TB, st store.Store, credential, key string) *countersign.Idempotency {
	tb.Helper()
	r, err := st.GetIdempotency(context.Background(), credential, key)
	if err != nil {
		tb.Fatalf("GetIdempotency(%s, %s): %v", credential, key, err)
	}
	return r
}

func assertErrIs(tb testing.TB, what string, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

func assertEqual(tb testing.TB, what string, got, want any) {
	tb.Helper()
	if d := cmp.Diff(want, got); d != "" {
		tb.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// roundTrip returns v as encoding/json gives it back: the shape a store must
// return (nil versus empty follows the records' JSON tags).
func roundTrip[T any](tb testing.TB, v T) T {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %T: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("unmarshal %T: %v", v, err)
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// assertUTC fails unless every time.Time reachable from v is in UTC.
func assertUTC(tb testing.TB, v any) {
	tb.Helper()
	var walk func(path string, rv reflect.Value)
	walk = func(path string, rv reflect.Value) {
		switch {
		case rv.Type() == timeType:
			if loc := rv.Interface().(time.Time).Location(); loc != time.UTC {
				tb.Errorf("%s is in %v, want UTC", path, loc)
			}
		case rv.Kind() == reflect.Pointer:
			if !rv.IsNil() {
				walk(path, rv.Elem())
			}
		case rv.Kind() == reflect.Struct:
			for i := range rv.NumField() {
				if rv.Type().Field(i).IsExported() {
					walk(path+"."+rv.Type().Field(i).Name, rv.Field(i))
				}
			}
		case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8:
			for i := range rv.Len() {
				walk(path+"[]", rv.Index(i))
			}
		}
	}
	walk(reflect.TypeOf(v).String(), reflect.ValueOf(v))
}

// assertNoZeroFields fails if a fixture leaves a field of a store record at
// its zero value, so a field added to a record later is round-tripped too.
// It follows pointers and the first element of slices into store types.
func assertNoZeroFields(tb testing.TB, v any) {
	tb.Helper()
	storePkg := reflect.TypeFor[store.Store]().PkgPath()
	var walk func(path string, rv reflect.Value)
	walk = func(path string, rv reflect.Value) {
		for rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv = rv.Elem()
		}
		if rv.Kind() == reflect.Slice && rv.Len() > 0 {
			walk(path+"[0]", rv.Index(0))
			return
		}
		if rv.Kind() != reflect.Struct || rv.Type().PkgPath() != storePkg {
			return
		}
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			fp := path + "." + f.Name
			if rv.Field(i).IsZero() {
				tb.Errorf("fixture leaves %s zero: set it so it is round-tripped", fp)
				continue
			}
			walk(fp, rv.Field(i))
		}
	}
	walk(reflect.TypeOf(v).String(), reflect.ValueOf(v))
}

// uid returns a random ID, unique across subtests and runs.
func uid(tb testing.TB) string {
	tb.Helper()
	return "t" + strings.ToLower(rand.Text())
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func fullCredential(id string, now time.Time) countersign.Credential {
	return countersign.Credential{
		ID:          id,
		KeyHash:     keyHash("key-" + id),
		Choice:      countersign.AskPerson,
		Origin:      countersign.OriginChat,
		ReadOnly:    true,
		Connections: []string{"crm", "mail"},
		Operator:    true,
		LastClient: &countersign.Client{
			Name: "claude-code", Version: "1.2.3", CanAsk: true,
			SeenAt: now.In(zone).Add(123456789 * time.Nanosecond),
		},
		Issuer:      "https://idp.example",
		Subject:     "sub-" + id,
		Email:       "ann@example.com",
		AskInClient: true,
	}
}

func fullOperation() countersign.Operation {
	return countersign.Operation{
		Connection: "crm",
		Method:     "DELETE",
		Path:       "/contacts/12",
		Endpoint:   "/contacts/{id}",
		Args: countersign.Args{
			Path:    map[string]string{"id": "12"},
			Query:   map[string]any{"hard": true, "limit": 10.0, "tags": []any{"a", "b"}, "none": nil},
			Body:    json.RawMessage(`{"note":"ünïcode ✓","nested":{"a":[1,null,"x",2.5e10]}}`),
			Headers: map[string]string{"X-Tenant-Id": "sandbox", "X-Dry-Run": "true", "If-Match": `"v1", W/"ä"`},
		},
		Negotiation: map[string]string{"Accept": "application/json", "Accept-Language": "de-CH, en;q=0.5"},
		Binding:     keyHash("binding"),
		ContentType: "application/json; charset=utf-8",
		Payload:     []byte("{\"note\": \"\xfc\xff binary-safe\"}\n"),
		RawQuery:    "hard=true&limit=10&tags=a&tags=b",
		Selected:    true,
		State:       countersign.OpDone,
		Outcome: &countersign.Outcome{
			Status:     200,
			Headers:    map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1"},
			Body:       json.RawMessage(`{"deleted":12,"ok":true}`),
			Error:      "upstream reset after response",
			Truncated:  true,
			BodyBytes:  1 << 20,
			BodySHA256: keyHash("whole body"),
		},
	}
}

func fullConfirmation(id string, now time.Time) *countersign.Confirmation {
	created := now.In(zone).Add(123456789 * time.Nanosecond)
	decided := created.Add(time.Minute + time.Nanosecond)
	redeemBy := decided.Add(10 * time.Minute).UTC()
	redeemed := decided.Add(2 * time.Minute)
	return &countersign.Confirmation{
		ID:             id,
		Kind:           countersign.KindScript,
		Credential:     "cred-" + id,
		Status:         countersign.StatusRedeemed,
		Reason:         `endpoint "DELETE /contacts/{id}" has confirm: true`,
		CreatedAt:      created,
		ExpiresAt:      created.Add(30 * time.Minute),
		DecidedAt:      &decided,
		DecidedBy:      "alice@example.com",
		DecisionReason: "the amount looks wrong",
		Asker:          &countersign.Asker{Name: "claude-code", Version: "2.1.0", CanAsk: true},
		RedeemBy:       &redeemBy,
		RedeemedAt:     &redeemed,
		Operations: []countersign.Operation{
			fullOperation(),
			{Connection: "crm", Method: "POST", Path: "/contacts", Endpoint: "/contacts",
				Args: countersign.Args{Body: json.RawMessage(`{"name":"Ada"}`)}, Binding: keyHash("second")},
		},
		GatewayRuns: true,
		Result:      json.RawMessage(`{"ok":true,"n":[1,2,3]}`),
		Version:     1,
		WriteID:     "W7RKCM3OZ5GKXQ2DPLJ4BE6NUA",
		TTL:         created.Add(48 * time.Hour).Unix(),
	}
}

// minimalConfirmation is a pending call confirmation with one waiting operation.
func minimalConfirmation(id string, now time.Time) *countersign.Confirmation {
	return &countersign.Confirmation{
		ID:         id,
		Kind:       countersign.KindCall,
		Credential: "cred-" + id,
		Status:     countersign.StatusPending,
		Reason:     "confirm: true",
		CreatedAt:  now,
		ExpiresAt:  now.Add(10 * time.Minute),
		Operations: []countersign.Operation{{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Endpoint: "/contacts/{id}",
			Args: countersign.Args{Path: map[string]string{"id": "12"}}, Binding: keyHash(id), Selected: true}},
		TTL: now.Add(48 * time.Hour).Unix(),
	}
}

// fullIdempotency returns a live, done record for credential; the key is
// random unless given.
func fullIdempotency(credential string, now time.Time, key ...string) *countersign.Idempotency {
	k := "idem-" + rand.Text()
	if len(key) > 0 {
		k = key[0]
	}
	return &countersign.Idempotency{
		Credential:  credential,
		Key:         k,
		RequestHash: keyHash("request-" + credential),
		Done:        true,
		Status:      201,
		Headers:     map[string]string{"Content-Type": "application/octet-stream"},
		Body:        []byte("raw \x00 bytes \xff not utf-8"),
		CreatedAt:   now.In(zone),
		ExpiresAt:   now.Add(24 * time.Hour).In(zone),
		Version:     1,
	}
}

// fullReview is a decided review item (a confirmation of kind review)
// with every field set.
func fullReview(id string, createdAt time.Time) *countersign.Confirmation {
	c := fullConfirmation(id, createdAt)
	c.Kind = countersign.KindReview
	c.Reason = `threshold body.amount above 10000 escalates to review`
	c.Operations = c.Operations[:1]
	c.Version = 1
	return c
}
