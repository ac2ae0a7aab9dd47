package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// sessions is the contract of people's sessions: stored once, read back
// as stored, ended one by one or all of a person's at once, and ended
// with the credential that names the person.
func (s *suite) sessions(t *testing.T) {
	ctx := context.Background()

	t.Run("CreateReadEnd", func(t *testing.T) {
		st := s.newStore(t)
		person := store.PersonKey("https://idp.example", uid(t))
		sess := store.Session{Person: person, ID: keyHash(uid(t)), CreatedAt: s.now().In(zone), ExpiresAt: s.now().Add(12 * time.Hour).In(zone)}
		assertNoZeroFields(t, sess)
		if err := st.CreateSession(ctx, sess); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		assertErrIs(t, "CreateSession (again)", st.CreateSession(ctx, sess), store.ErrConflict)
		got, err := st.Session(ctx, person, sess.ID)
		if err != nil {
			t.Fatalf("Session: %v", err)
		}
		assertEqual(t, "session", got, roundTrip(t, sess))
		_, err = st.Session(ctx, store.PersonKey("https://idp.example", uid(t)), sess.ID)
		assertErrIs(t, "Session (another person)", err, store.ErrNotFound)
		if err := st.EndSession(ctx, person, sess.ID); err != nil {
			t.Fatalf("EndSession: %v", err)
		}
		_, err = st.Session(ctx, person, sess.ID)
		assertErrIs(t, "Session (ended)", err, store.ErrNotFound)
		assertErrIs(t, "EndSession (again)", st.EndSession(ctx, person, sess.ID), store.ErrNotFound)
	})

	t.Run("EndSessionsOfAPerson", func(t *testing.T) {
		st := s.newStore(t)
		ada, grace := store.PersonKey("https://idp.example", uid(t)), store.PersonKey("https://idp.example", uid(t))
		var adas []string
		for range 3 {
			id := keyHash(uid(t))
			adas = append(adas, id)
			if err := st.CreateSession(ctx, store.Session{Person: ada, ID: id, CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		graces := keyHash(uid(t))
		if err := st.CreateSession(ctx, store.Session{Person: grace, ID: graces, CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if n, err := st.EndSessions(ctx, ada); err != nil || n != 3 {
			t.Fatalf("EndSessions = %d, %v; want 3", n, err)
		}
		for _, id := range adas {
			_, err := st.Session(ctx, ada, id)
			assertErrIs(t, "ada's session after EndSessions", err, store.ErrNotFound)
		}
		if _, err := st.Session(ctx, grace, graces); err != nil {
			t.Fatalf("grace's session after ada's ended: %v", err)
		}
		if n, err := st.EndSessions(ctx, ada); err != nil || n != 0 {
			t.Fatalf("EndSessions (none left) = %d, %v", n, err)
		}
	})

	t.Run("DeleteCredentialEndsThePersonsSessions", func(t *testing.T) {
		st := s.newStore(t)
		issuer, subject := "https://idp.example", uid(t)
		cred := countersign.Credential{ID: "user_" + uid(t), Choice: countersign.AskPerson, Origin: countersign.OriginChat, Issuer: issuer, Subject: subject}
		if err := st.CreateCredential(ctx, cred); err != nil {
			t.Fatalf("CreateCredential: %v", err)
		}
		person := store.PersonKey(issuer, subject)
		id := keyHash(uid(t))
		if err := st.CreateSession(ctx, store.Session{Person: person, ID: id, CreatedAt: s.now(), ExpiresAt: s.now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteCredential(ctx, cred.ID); err != nil {
			t.Fatalf("DeleteCredential: %v", err)
		}
		_, err := st.Session(ctx, person, id)
		assertErrIs(t, "the person's session after their credential was deleted", err, store.ErrNotFound)
	})
}
