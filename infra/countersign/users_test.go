package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/store/embedded"
)

// seedUser writes, as the OAuth server does when a person signs in and
// authorizes a client, a user credential, its grant and an access token
// of the grant; it returns the token.
func seedUser(tb testing.TB, dir, publicURL string) string {
	tb.Helper()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	user := countersign.Credential{ID: "user_0123456789abcdef01234567", Issuer: "https://idp.example", Subject: "s-1", Email: "ana@example.com",
		Origin: countersign.OriginChat, Choice: countersign.DefaultChoice(countersign.OriginChat)}
	if err := st.CreateCredential(ctx, user); err != nil {
		tb.Fatal(err)
	}
	g := &countersign.OAuthGrant{ID: "grant-1", ClientID: "client-1", ClientName: "Claude Code", Credential: user.ID, Resource: publicURL + "/mcp",
		Scope: oauth.Scope, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if err := st.CreateOAuthGrant(ctx, g); err != nil {
		tb.Fatal(err)
	}
	token := oauth.AccessPrefix + "test-token"
	sum := sha256.Sum256([]byte(token))
	if err := st.CreateOAuthToken(ctx, countersign.OAuthToken{Hash: hex.EncodeToString(sum[:]), Kind: countersign.TokenAccess, Grant: g.ID,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		tb.Fatal(err)
	}
	return token
}

// verify checks token with the OAuth server over the data directory's store.
func verify(tb testing.TB, dir, publicURL, token string) error {
	tb.Helper()
	st, err := embedded.Open(filepath.Join(dir, "countersign.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	srv, err := oauth.New(st, oauth.Options{PublicURL: func() string { return publicURL },
		SignIn: &oauth.DevSignIn{Issuer: publicURL + oauth.PathDevSignIn, Key: oauth.NewKey()}, SessionKey: oauth.NewKey()})
	if err != nil {
		tb.Fatal(err)
	}
	_, ok, err := srv.Verify(context.Background(), token, "/mcp")
	if !ok {
		tb.Fatalf("Verify did not take an access token")
	}
	return err
}

// TestUsersLocal: users list shows the people and not the keys, grants
// shows a user's clients, revoke-grant makes the OAuth server refuse the
// grant's token from the next call on, and set-choice changes a user's
// choice but refuses a key.
func TestUsersLocal(t *testing.T) {
	dir := t.TempDir()
	const publicURL = "http://127.0.0.1:1"
	createKey(t, "--data", dir, "--id", "ci-bot")
	token := seedUser(t, dir, publicURL)
	if err := verify(t, dir, publicURL, token); err != nil {
		t.Fatalf("the seeded token is refused before any revocation: %v", err)
	}

	r := runCmd(t, "users", "list", "--data", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "ana@example.com") || !strings.Contains(r.stdout, "ask_person") || strings.Contains(r.stdout, "ci-bot") {
		t.Fatalf("users list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "users", "list", "--data", dir, "--json")
	var users []listedUser
	if err := json.Unmarshal([]byte(r.stdout), &users); err != nil || len(users) != 1 || users[0].Subject != "s-1" {
		t.Fatalf("users list --json: %v %s", err, r.stdout)
	}

	r = runCmd(t, "users", "grants", "--data", dir, "--id", "user_0123456789abcdef01234567")
	if r.code != exitOK || !strings.Contains(r.stdout, "grant-1") || !strings.Contains(r.stdout, "Claude Code (client-1)") || !strings.Contains(r.stdout, "active") {
		t.Fatalf("users grants: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = runCmd(t, "users", "grants", "--data", dir, "--id", "ci-bot"); r.code == exitOK || !strings.Contains(r.stderr, "is a key, not a user") {
		t.Fatalf("users grants of a key: exit %d %s", r.code, r.stderr)
	}
	if r = runCmd(t, "users", "revoke-grant", "--data", dir, "--id", "user_0123456789abcdef01234567"); r.code != exitUsage {
		t.Fatalf("revoke-grant without --grant: exit %d, want usage", r.code)
	}
	if r = runCmd(t, "users", "revoke-grant", "--data", dir, "--id", "user_0123456789abcdef01234567", "--grant", "nope"); r.code == exitOK {
		t.Fatalf("revoke-grant of an unknown grant succeeded: %s", r.stdout)
	}

	r = runCmd(t, "users", "revoke-grant", "--data", dir, "--id", "user_0123456789abcdef01234567", "--grant", "grant-1")
	if r.code != exitOK || !strings.Contains(r.stdout, "revoked grant grant-1") {
		t.Fatalf("revoke-grant: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := verify(t, dir, publicURL, token); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("the revoked grant's token: %v, want refused as revoked", err)
	}
	r = runCmd(t, "users", "grants", "--data", dir, "--id", "user_0123456789abcdef01234567")
	if !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("users grants after the revocation:\n%s", r.stdout)
	}

	r = runCmd(t, "users", "set-choice", "--data", dir, "--id", "user_0123456789abcdef01234567", "--choice", "refuse")
	if r.code != exitOK || !strings.Contains(r.stdout, "ask_person -> refuse") {
		t.Fatalf("set-choice: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if c := storedCredentials(t, dir)["user_0123456789abcdef01234567"]; c.Choice.String() != "refuse" {
		t.Fatalf("stored choice %s, want refuse", c.Choice)
	}
	if r = runCmd(t, "users", "set-choice", "--data", dir, "--id", "ci-bot", "--choice", "run_without_asking"); r.code == exitOK || !strings.Contains(r.stderr, "not a user") {
		t.Fatalf("users set-choice on a key: exit %d %s", r.code, r.stdout)
	}
	if c := storedCredentials(t, dir)["ci-bot"]; c.Choice.String() == "run_without_asking" {
		t.Fatalf("users set-choice changed a key: %+v", c)
	}
}
