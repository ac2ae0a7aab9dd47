package oauth

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign"
)

// TestUserBinding: a configured user is bound to the (issuer, subject)
// of their first verified sign-in; later sign-ins must be that subject
// (a changed e-mail is still them; another account with their e-mail is
// refused); an unverified e-mail finds nobody. With no users configured,
// an unverified e-mail never names the user created at first sign-in.
func TestUserBinding(t *testing.T) {
	ctx := context.Background()
	const iss = "https://idp.example"
	t.Run("configured users", func(t *testing.T) {
		ts := newTestServer(t, false)
		users := []countersign.Credential{{ID: "ada", Email: "Ada@example.com", Source: countersign.SourceConfig}}
		ts.o.Users = func() []countersign.Credential { return users }
		if err := ts.store.PutCredential(ctx, users[0]); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name string
			p    Person
			want string // the credential, or "" for a refusal
			err  error
		}{
			{"unverified e-mail", Person{Issuer: iss, Subject: "s1", Email: "ada@example.com"}, "", errNotAUser},
			{"Kelvin-sign look-alike", Person{Issuer: iss, Subject: "s1", Email: "\u212Ada@example.com", EmailVerified: true}, "", errNotAUser},
			{"first verified sign-in binds", Person{Issuer: iss, Subject: "s1", Email: "ada@EXAMPLE.com", EmailVerified: true}, "ada", nil},
			{"the same subject, e-mail changed", Person{Issuer: iss, Subject: "s1", Email: "lovelace@example.com", EmailVerified: true}, "ada", nil},
			{"another account, same e-mail", Person{Issuer: iss, Subject: "s2", Email: "ada@example.com", EmailVerified: true}, "", errBoundElsewhere},
			{"the same subject at another issuer", Person{Issuer: "https://other.example", Subject: "s1", Email: "ada@example.com", EmailVerified: true}, "", errBoundElsewhere},
		}
		for _, st := range steps {
			c, err := ts.userCredential(ctx, st.p)
			switch {
			case st.err != nil && !errors.Is(err, st.err):
				t.Fatalf("%s: %+v, %v; want %v", st.name, c, err, st.err)
			case st.err == nil && (err != nil || c.ID != st.want || c.Subject != "s1" || c.Issuer != iss):
				t.Fatalf("%s: %+v, %v; want %s bound to s1", st.name, c, err, st.want)
			}
		}
	})
	t.Run("no users configured", func(t *testing.T) {
		ts := newTestServer(t, false)
		c, err := ts.userCredential(ctx, Person{Issuer: iss, Subject: "s9", Email: "owner@example.com"})
		if err != nil || c.Email != "" || c.Subject != "s9" {
			t.Fatalf("unverified: %+v, %v; want a user with no e-mail", c, err)
		}
		c, err = ts.userCredential(ctx, Person{Issuer: iss, Subject: "s10", Email: "owner@example.com", EmailVerified: true})
		if err != nil || c.Email != "owner@example.com" {
			t.Fatalf("verified: %+v, %v; want the e-mail kept", c, err)
		}
	})
}
