package config

import (
	"errors"
	"strings"
	"testing"
)

// TestSignIn: settings.json's sign_in block names the identity provider;
// its secret may be a Secrets Manager reference; every mistake stops the
// load with its path.
func TestSignIn(t *testing.T) {
	withSignIn := func(block string) map[string]string {
		files := baseFiles()
		sub(settingsFile, `"scripts":`, `"sign_in": `+block+`, "scripts":`)(t, files)
		return files
	}
	cfg, err := Load(writeConfig(t, withSignIn(`{"issuer": "https://idp.example.com/pool", "client_id": "cs", "client_secret": "s3cret"}`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if si := cfg.Settings.SignIn; !si.Configured() || si.Issuer != "https://idp.example.com/pool" || si.ClientID != "cs" || si.ClientSecret != "s3cret" {
		t.Errorf("sign_in = %+v", si)
	}
	cfg, err = Load(writeConfig(t, withSignIn(`{"issuer": "https://idp.example.com", "client_id": "cs", "client_secret": {"secretsmanager": "cs/idp"}}`)),
		&LoadOptions{LookupEnv: testEnv.LookupEnv, KeepSecretRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	if ref := cfg.Settings.SignIn.ClientSecretRef; ref.Store != SecretsManager || ref.Name != "cs/idp" {
		t.Errorf("client secret reference = %+v", ref)
	}
	if cfg, err = Load(writeConfig(t, baseFiles()), testEnv); err != nil || cfg.Settings.SignIn.Configured() {
		t.Errorf("without sign_in: %+v, %v; want none configured", cfg.Settings.SignIn, err)
	}
	for _, c := range []struct{ block, path, msg string }{
		{`{"client_id": "cs", "client_secret": "s"}`, "sign_in.issuer", "missing"},
		{`{"issuer": "http://idp.example.com", "client_id": "cs", "client_secret": "s"}`, "sign_in.issuer", "must be https"},
		{`{"issuer": "https://idp.example.com?x=1", "client_id": "cs", "client_secret": "s"}`, "sign_in.issuer", "not an issuer URL"},
		{`{"issuer": "https://idp.example.com", "client_secret": "s"}`, "sign_in.client_id", "missing"},
		{`{"issuer": "https://idp.example.com", "client_id": "cs"}`, "sign_in.client_secret", "missing"},
		{`{"issuer": "https://idp.example.com", "client_id": "cs", "client_secret": "s", "scope": "x"}`, "sign_in.scope", "unknown field"},
	} {
		_, err := Load(writeConfig(t, withSignIn(c.block)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: ~%q", c.block, err, c.path, c.msg)
		}
	}
}

// TestUsers: a credentials.json entry with user (an e-mail) in place of a
// key is a person who signs in: no key hash, origin chat (so ask_person)
// unless said otherwise; ask_in_client is read on keys; mistakes stop the
// load with their path.
func TestUsers(t *testing.T) {
	with := func(creds string) map[string]string {
		files := baseFiles()
		files["credentials.json"] = creds
		return files
	}
	cfg, err := Load(writeConfig(t, with(`[{"id": "ada", "user": "ada@example.com"},
  {"id": "k", "key": "cs_k", "choice": "ask_person", "ask_in_client": true}]`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	ada, k := cfg.Credentials[0], cfg.Credentials[1]
	if ada.Email != "ada@example.com" || ada.KeyHash != "" || ada.Choice.String() != "ask_person" || ada.Origin.String() != "chat" || !ada.IsPerson() {
		t.Errorf("user ada = %+v", ada)
	}
	if !k.AskInClient || k.IsPerson() || !k.AsksInClient() {
		t.Errorf("key k = %+v", k)
	}
	for _, c := range []struct{ creds, path, msg string }{
		{`[{"id": "a", "user": "ada@example.com", "key": "cs_x"}]`, "[0].user", "not both"},
		{`[{"id": "a", "user": "not-an-email"}]`, "[0].user", "not an e-mail"},
		{`[{"id": "a", "user": "ada@example.com"}, {"id": "b", "user": "ADA@example.com"}]`, "[1].user", "already the user"},
		{`[{"id": "a"}]`, "[0].key", "or user for a person"},
	} {
		_, err := Load(writeConfig(t, with(c.creds)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: ~%q", c.creds, err, c.path, c.msg)
		}
	}
}
