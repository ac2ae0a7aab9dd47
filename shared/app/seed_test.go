package app_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestSeedReconciles: start-up revokes only the credentials it wrote from
// credentials.json that the file no longer lists (with their grants); a
// credential made by other means stays; a bound user keeps their subject.
func TestSeedReconciles(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := load(t, `{}`)
	cfg.Credentials = []countersign.Credential{{ID: "keep", KeyHash: "h1"}, {ID: "gone", KeyHash: "h2"}, {ID: "ada", Email: "ada@example.com"}}
	a := app.New(cfg, app.Adapters{Store: st, Workflow: nopWorkflow{}}, app.Options{})
	if revoked, err := a.SeedCredentials(ctx); err != nil || len(revoked) != 0 {
		t.Fatalf("first seed: revoked %v, %v", revoked, err)
	}
	// Made by other means (countersign keys), and ada bound at sign-in.
	if err := st.PutCredential(ctx, countersign.Credential{ID: "cli", KeyHash: "h3"}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCredential(ctx, countersign.Credential{ID: "ada", Email: "ada@example.com", Issuer: "iss", Subject: "sub", Source: countersign.SourceConfig}); err != nil {
		t.Fatal(err)
	}
	g := &countersign.OAuthGrant{ID: "g1", Credential: "gone"}
	if err := st.CreateOAuthGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = []countersign.Credential{{ID: "keep", KeyHash: "h1"}, {ID: "ada", Email: "Ada@example.com"}}
	revoked, err := a.SeedCredentials(ctx)
	if err != nil || !slices.Equal(revoked, []string{"gone"}) {
		t.Fatalf("second seed: revoked %v, %v; want [gone]", revoked, err)
	}
	if _, err := st.GetCredential(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("gone: %v, want not found", err)
	}
	if got, err := st.OAuthGrant(ctx, "g1"); err != nil || !got.Revoked {
		t.Fatalf("gone's grant: %+v, %v; want revoked", got, err)
	}
	for _, id := range []string{"keep", "cli"} {
		if _, err := st.GetCredential(ctx, id); err != nil {
			t.Fatalf("%s: %v, want kept", id, err)
		}
	}
	if got, _ := st.GetCredential(ctx, "ada"); got.Subject != "sub" || got.Issuer != "iss" {
		t.Fatalf("ada after a restart: %+v, want her binding kept", got)
	}
}
