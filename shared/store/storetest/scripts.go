package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

func (s *suite) scripts(t *testing.T) {
	ctx := context.Background()

	t.Run("RunCreateThenGetRoundTripsEveryField", func(t *testing.T) {
		st := s.newStore(t)
		r := fullScriptRun(uid(t), s.now())
		r.Version = 9
		mustCreateScriptRun(t, st, r)
		if r.Version != 1 {
			t.Fatalf("Version after create = %d, want 1", r.Version)
		}
		assertNoZeroFields(t, *r)
		got := mustGetScriptRun(t, st, r.ID)
		assertEqual(t, "script run", *got, roundTrip(t, *r))
		assertUTC(t, got)
		if got.Source != r.Source || string(got.Result) != string(r.Result) {
			t.Errorf("source or result changed: %q %s", got.Source, got.Result)
		}
	})

	t.Run("RunCreateDuplicateConflicts", func(t *testing.T) {
		st := s.newStore(t)
		r := minimalScriptRun(uid(t), s.now())
		mustCreateScriptRun(t, st, r)
		dup := minimalScriptRun(r.ID, s.now())
		dup.Source = "second writer"
		assertErrIs(t, "CreateScriptRun(duplicate)", st.CreateScriptRun(ctx, dup), store.ErrConflict)
		assertEqual(t, "run after duplicate create", *mustGetScriptRun(t, st, r.ID), roundTrip(t, *r))
	})

	t.Run("RunGetNotFound", func(t *testing.T) {
		st := s.newStore(t)
		_, err := st.GetScriptRun(ctx, uid(t))
		assertErrIs(t, "GetScriptRun", err, store.ErrNotFound)
	})

	t.Run("RunUpdateVersions", func(t *testing.T) {
		st := s.newStore(t)
		r := minimalScriptRun(uid(t), s.now())
		mustCreateScriptRun(t, st, r)
		for want := int64(2); want <= 3; want++ {
			got := mustGetScriptRun(t, st, r.ID)
			lease := s.now().In(zone).Add(time.Minute)
			got.Status, got.Owner, got.LeaseUntil, got.Attempts = countersign.ScriptRunning, "run-"+uid(t), &lease, got.Attempts+1
			got.Logs = append(got.Logs, "line")
			if err := st.UpdateScriptRun(ctx, got); err != nil {
				t.Fatalf("UpdateScriptRun to version %d: %v", want, err)
			}
			if got.Version != want {
				t.Fatalf("passed record Version = %d, want %d", got.Version, want)
			}
			stored := mustGetScriptRun(t, st, r.ID)
			assertEqual(t, "updated run", *stored, roundTrip(t, *got))
			assertUTC(t, stored)
		}
		stale := mustGetScriptRun(t, st, r.ID)
		stale.Version--
		stale.Status = countersign.ScriptFailed
		assertErrIs(t, "UpdateScriptRun(stale)", st.UpdateScriptRun(ctx, stale), store.ErrConflict)
		if stale.Version != 2 {
			t.Errorf("failed update changed the passed Version to %d", stale.Version)
		}
		missing := minimalScriptRun(uid(t), s.now())
		missing.Version = 1
		assertErrIs(t, "UpdateScriptRun(missing)", st.UpdateScriptRun(ctx, missing), store.ErrNotFound)
		_, err := st.GetScriptRun(ctx, missing.ID)
		assertErrIs(t, "GetScriptRun after failed update", err, store.ErrNotFound)
	})

	t.Run("RunConcurrentUpdatesExactlyOneWins", func(t *testing.T) {
		st := s.newStore(t)
		r := minimalScriptRun(uid(t), s.now())
		mustCreateScriptRun(t, st, r)
		copies := make([]*countersign.ScriptRun, s.racers)
		for i := range copies {
			copies[i] = mustGetScriptRun(t, st, r.ID)
			copies[i].Status, copies[i].Owner = countersign.ScriptRunning, fmt.Sprintf("racer-%d", i)
		}
		errs := race(s.racers, func(i int) error { return st.UpdateScriptRun(ctx, copies[i]) })
		winner := oneWinner(t, errs)
		if got := mustGetScriptRun(t, st, r.ID); got.Version != 2 || got.Owner != copies[winner].Owner {
			t.Fatalf("stored Version %d owned by %q, want 2 by the winner %q", got.Version, got.Owner, copies[winner].Owner)
		}
	})

	t.Run("CallsRoundTripInIndexOrder", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		var want []countersign.ScriptCall
		for _, i := range []int{2, 0, 10, 1, 9} {
			c := fullScriptCall(id, i)
			if i == 10 {
				assertNoZeroFields(t, *c)
			}
			c.Version = 0
			mustPutScriptCall(t, st, c)
			if c.Version != 1 {
				t.Fatalf("Version after create = %d, want 1", c.Version)
			}
			want = append(want, roundTrip(t, *c))
		}
		got := scriptCalls(t, st, id)
		if len(got) != len(want) {
			t.Fatalf("ScriptCalls returned %d calls, want %d", len(got), len(want))
		}
		for i, idx := range []int{0, 1, 2, 9, 10} {
			if got[i].Index != idx {
				t.Fatalf("call %d has Index %d, want %d (index order)", i, got[i].Index, idx)
			}
			for _, w := range want {
				if w.Index == idx {
					assertEqual(t, fmt.Sprintf("call %d", idx), *got[i], w)
				}
			}
		}
	})

	t.Run("CallsOfARunWithoutCalls", func(t *testing.T) {
		st := s.newStore(t)
		got, err := st.ScriptCalls(ctx, uid(t))
		if err != nil || len(got) != 0 {
			t.Fatalf("ScriptCalls of an unknown run = %v, %v; want none and no error", got, err)
		}
	})

	t.Run("CallsAreScopedByRun", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		// A run whose ID extends another's must not see its calls.
		mustPutScriptCall(t, st, minimalScriptCall(id, 0))
		mustPutScriptCall(t, st, minimalScriptCall(id+"0", 0))
		mustPutScriptCall(t, st, minimalScriptCall(id+"0", 1))
		if got := scriptCalls(t, st, id); len(got) != 1 || got[0].RunID != id {
			t.Fatalf("calls of %s = %+v, want its one call", id, got)
		}
		if got := scriptCalls(t, st, id+"0"); len(got) != 2 {
			t.Fatalf("calls of %s0 = %d, want 2", id, len(got))
		}
	})

	t.Run("CallCreateConflictsAndUpdateVersions", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		c := minimalScriptCall(id, 3)
		mustPutScriptCall(t, st, c)
		dup := minimalScriptCall(id, 3)
		dup.State = countersign.ScriptCallRan
		assertErrIs(t, "PutScriptCall(create existing)", st.PutScriptCall(ctx, dup), store.ErrConflict)
		if dup.Version != 0 {
			t.Errorf("failed create changed the passed Version to %d", dup.Version)
		}

		upd := *c
		upd.State, upd.Value, upd.Rerun = countersign.ScriptCallRan, json.RawMessage(`{"status":204,"body":null}`), true
		if err := st.PutScriptCall(ctx, &upd); err != nil {
			t.Fatalf("PutScriptCall(update): %v", err)
		}
		if upd.Version != 2 {
			t.Fatalf("Version after update = %d, want 2", upd.Version)
		}
		stale := *c // still version 1
		stale.State = countersign.ScriptCallRejected
		assertErrIs(t, "PutScriptCall(stale)", st.PutScriptCall(ctx, &stale), store.ErrConflict)
		assertEqual(t, "call after stale update", *scriptCalls(t, st, id)[0], roundTrip(t, upd))

		missing := minimalScriptCall(id, 4)
		missing.Version = 1
		assertErrIs(t, "PutScriptCall(update missing)", st.PutScriptCall(ctx, missing), store.ErrNotFound)
		if got := scriptCalls(t, st, id); len(got) != 1 {
			t.Fatalf("a failed update created a call: %+v", got)
		}
	})

	t.Run("CallConcurrentCreatesExactlyOneWins", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		copies := make([]*countersign.ScriptCall, s.racers)
		for i := range copies {
			copies[i] = minimalScriptCall(id, 0)
			copies[i].Path = fmt.Sprintf("/contacts/%d", i)
		}
		errs := race(s.racers, func(i int) error { return st.PutScriptCall(ctx, copies[i]) })
		winner := oneWinner(t, errs)
		if got := scriptCalls(t, st, id); len(got) != 1 || got[0].Path != copies[winner].Path {
			t.Fatalf("stored calls %+v, want the winner's %s", got, copies[winner].Path)
		}
	})

	t.Run("PartsByPrefixInKeyOrder", func(t *testing.T) {
		st := s.newStore(t)
		id := uid(t)
		big := bytes.Repeat([]byte{0, 0xff, 'x', '\n'}, 64<<10) // 256 KiB (a part's size), not UTF-8
		ttl := s.now().Add(48 * time.Hour).Unix()
		put := func(key string, data []byte) {
			t.Helper()
			if err := st.PutScriptPart(ctx, &countersign.ScriptPart{RunID: id, Key: key, Data: data, TTL: ttl}); err != nil {
				t.Fatalf("PutScriptPart(%s): %v", key, err)
			}
		}
		put("call/00000001/0001", []byte("second"))
		put("call/00000001/0000", big)
		put("call/00000010/0000", []byte("other call"))
		put("result/0000", []byte("result"))
		if err := st.PutScriptPart(ctx, &countersign.ScriptPart{RunID: id + "0", Key: "call/00000001/0002", Data: []byte("other run"), TTL: ttl}); err != nil {
			t.Fatal(err)
		}
		got := scriptParts(t, st, id, "call/00000001/")
		want := []*countersign.ScriptPart{
			{RunID: id, Key: "call/00000001/0000", Data: big, TTL: ttl},
			{RunID: id, Key: "call/00000001/0001", Data: []byte("second"), TTL: ttl},
		}
		assertEqual(t, "parts", got, want)

		// A replaced part keeps one record with the new bytes.
		put("call/00000001/0001", []byte("replaced"))
		got = scriptParts(t, st, id, "call/00000001/")
		if len(got) != 2 || string(got[1].Data) != "replaced" {
			t.Fatalf("parts after replace = %d, second %q", len(got), got[len(got)-1].Data)
		}
		if all := scriptParts(t, st, id, ""); len(all) != 4 {
			t.Errorf("all parts of the run = %d, want 4", len(all))
		}
		if none := scriptParts(t, st, uid(t), ""); len(none) != 0 {
			t.Errorf("parts of an unknown run = %d", len(none))
		}
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		st := s.newStore(t)
		r := fullScriptRun(uid(t), s.now())
		mustCreateScriptRun(t, st, r)
		want := roundTrip(t, *r)
		r.Logs[0] = "mutated-input"
		r.Result[1] = 'X'
		got := mustGetScriptRun(t, st, r.ID)
		got.Logs[0] = "mutated-output"
		got.Credential.Connections[0] = "mutated-output"
		got.Error.Reason = "mutated-output"
		assertEqual(t, "run after mutations", *mustGetScriptRun(t, st, r.ID), want)

		c := fullScriptCall(r.ID, 0)
		c.Version = 0
		mustPutScriptCall(t, st, c)
		wantCall := roundTrip(t, *c)
		c.Value[1] = 'X'
		scriptCalls(t, st, r.ID)[0].Value[1] = 'Y'
		assertEqual(t, "call after mutations", *scriptCalls(t, st, r.ID)[0], wantCall)

		data := []byte("part")
		if err := st.PutScriptPart(ctx, &countersign.ScriptPart{RunID: r.ID, Key: "k", Data: data, TTL: 1}); err != nil {
			t.Fatal(err)
		}
		data[0] = 'X'
		scriptParts(t, st, r.ID, "k")[0].Data[1] = 'Y'
		if got := scriptParts(t, st, r.ID, "k")[0].Data; string(got) != "part" {
			t.Errorf("part after mutations = %q", got)
		}
	})
}

// oneWinner fails unless exactly one racer succeeded and the others
// conflicted; it returns the winner.
func oneWinner(tb testing.TB, errs []error) int {
	tb.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				tb.Fatalf("racers %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrConflict):
			tb.Errorf("racer %d: error %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		tb.Fatal("no racer won")
	}
	return winner
}

func mustCreateScriptRun(tb testing.TB, st store.Store, r *countersign.ScriptRun) {
	tb.Helper()
	if err := st.CreateScriptRun(context.Background(), r); err != nil {
		tb.Fatalf("CreateScriptRun(%s): %v", r.ID, err)
	}
}

func mustGetScriptRun(tb testing.TB, st store.Store, id string) *countersign.ScriptRun {
	tb.Helper()
	r, err := st.GetScriptRun(context.Background(), id)
	if err != nil {
		tb.Fatalf("GetScriptRun(%s): %v", id, err)
	}
	return r
}

func mustPutScriptCall(tb testing.TB, st store.Store, c *countersign.ScriptCall) {
	tb.Helper()
	if err := st.PutScriptCall(context.Background(), c); err != nil {
		tb.Fatalf("PutScriptCall(%s #%d): %v", c.RunID, c.Index, err)
	}
}

func scriptCalls(tb testing.TB, st store.Store, id string) []*countersign.ScriptCall {
	tb.Helper()
	cs, err := st.ScriptCalls(context.Background(), id)
	if err != nil {
		tb.Fatalf("ScriptCalls(%s): %v", id, err)
	}
	return cs
}

func scriptParts(tb testing.TB, st store.Store, id, prefix string) []*countersign.ScriptPart {
	tb.Helper()
	ps, err := st.ScriptParts(context.Background(), id, prefix)
	if err != nil {
		tb.Fatalf("ScriptParts(%s, %q): %v", id, prefix, err)
	}
	return ps
}

func fullScriptRun(id string, now time.Time) *countersign.ScriptRun {
	started := now.In(zone).Add(123456789 * time.Nanosecond)
	lease := started.Add(time.Minute + time.Nanosecond)
	finished := started.Add(2 * time.Second)
	cred := fullCredential("cred-"+id, now)
	return &countersign.ScriptRun{
		ID:          id,
		Credential:  cred,
		Source:      "const r = call('crm', 'DELETE', '/contacts/12');\n// ünïcode ✓\nr",
		SourceHash:  keyHash("source-" + id),
		Seed:        -8070450532247928832,
		StartedAt:   started,
		Status:      countersign.ScriptCompleted,
		Owner:       "run-" + id,
		LeaseUntil:  &lease,
		Attempts:    2,
		Result:      json.RawMessage(`{"deleted":[12],"note":"ünïcode ✓"}`),
		ResultParts: 3,
		Error:       &countersign.ScriptError{Code: "script_error", Reason: "TypeError: x is not a function", Line: 3, Column: 14},
		Logs:        []string{"first line", "ünïcode ✓"},
		Reached:     4,
		FinishedAt:  &finished,
		CreatedAt:   started.Add(-time.Millisecond),
		Version:     1,
		TTL:         started.Add(48 * time.Hour).Unix(),
	}
}

func minimalScriptRun(id string, now time.Time) *countersign.ScriptRun {
	return &countersign.ScriptRun{ID: id, Source: "1", SourceHash: keyHash("1"), StartedAt: now, Status: countersign.ScriptPending,
		CreatedAt: now, TTL: now.Add(48 * time.Hour).Unix()}
}

func fullScriptCall(runID string, index int) *countersign.ScriptCall {
	return &countersign.ScriptCall{
		RunID:      runID,
		Index:      index,
		Connection: "crm",
		Method:     "DELETE",
		Path:       fmt.Sprintf("/contacts/%d/ünï%%20code", index),
		Binding:    keyHash(fmt.Sprintf("binding-%d", index)),
		State:      countersign.ScriptCallRan,
		Operation:  index + 1,
		Rerun:      true,
		Value:      json.RawMessage(`{"status":200,"body":{"ok":true,"s":"ünïcode ✓"}}`),
		ValueParts: 2,
		Version:    1,
		TTL:        time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix(),
	}
}

func minimalScriptCall(runID string, index int) *countersign.ScriptCall {
	return &countersign.ScriptCall{RunID: runID, Index: index, Connection: "crm", Method: "DELETE", Path: "/contacts/12",
		Binding: keyHash("b"), State: countersign.ScriptCallPending, Operation: 0, TTL: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix()}
}
