package config

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// mapFS turns files (relative path → content) into an fs.FS.
func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for rel, content := range files {
		m[rel] = &fstest.MapFile{Data: []byte(content)}
	}
	return m
}

// TestLoadFS: a configuration read from an fs.FS is validated as a
// directory is, and its errors name the files under the name given.
func TestLoadFS(t *testing.T) {
	files := baseFiles()
	cfg, err := LoadFS(mapFS(files), "s3://bucket/config", testEnv)
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	fromDir, err := Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != "s3://bucket/config" || len(cfg.Connections) != len(fromDir.Connections) ||
		len(cfg.Credentials) != len(fromDir.Credentials) || cfg.Settings.Workspace != fromDir.Settings.Workspace {
		t.Errorf("LoadFS and Load disagree: %+v vs %+v", cfg, fromDir)
	}

	sub(crmFile, `"confirm": "never"}`, `"confirm": false}`)(t, files)
	files["connections/Bad/policy.json"] = `{}`
	_, err = LoadFS(mapFS(files), "s3://bucket/config/", testEnv)
	for _, want := range []string{
		"s3://bucket/config/connections/crm/policy.json: endpoints[4].confirm: false is not allowed",
		`s3://bucket/config/connections/Bad: "Bad" is not a valid connection name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadFS error %v, want it to contain %q", err, want)
		}
	}
}

// secretStore is a LoadOptions.Secrets over a map; it records the lookups.
type secretStore struct {
	values map[string]string
	asked  []string
}

func (s *secretStore) resolve(r SecretRef) (string, error) {
	s.asked = append(s.asked, r.String())
	v, ok := s.values[r.String()]
	if !ok {
		return "", errors.New("ResourceNotFoundException: no such secret")
	}
	return v, nil
}

const refSettings = `{
  "approvers": {"webhooks": [
    {"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}},
    {"name": "chat", "format": "slack", "url": {"secretsmanager": "countersign/slack-url"}, "secret": {"secretsmanager": "arn:aws:secretsmanager:us-east-1:123456789012:secret:countersign/slack-secret-AbCdEf"}}
  ]}
}`

const refPolicy = `{"base_url": "https://crm.example", "headers": {"Authorization": "Bearer ${secretsmanager:countersign/crm-token}", "X-Env": "${env:CRM_TOKEN}"},
  "endpoints": [{"method": "GET", "path": "/contacts/{id}"}]}`

func refFiles() map[string]string {
	return map[string]string{"settings.json": refSettings, "connections/crm/policy.json": refPolicy}
}

func TestSecretReferences(t *testing.T) {
	store := &secretStore{values: map[string]string{
		"secretsmanager:countersign/ops-hook":  "whsec_from_secrets_manager",
		"secretsmanager:countersign/slack-url": "https://hooks.slack.com/services/T0/B0/XYZ/",
		"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:countersign/slack-secret-AbCdEf": "whsec_from_arn",
		"secretsmanager:countersign/crm-token": "tok_from_secrets_manager",
	}}
	opts := &LoadOptions{LookupEnv: testEnv.LookupEnv, Secrets: store.resolve}
	cfg, err := LoadFS(mapFS(refFiles()), "s3://b/p", opts)
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	hooks := cfg.Settings.Approvers.Webhooks
	want := []Webhook{
		{Name: "ops", URL: "https://hooks.example/ops", Format: "json", Secret: "whsec_from_secrets_manager",
			SecretRef: SecretRef{Store: SecretsManager, Name: "countersign/ops-hook"}},
		{Name: "chat", URL: "https://hooks.slack.com/services/T0/B0/XYZ", Format: "slack", Secret: "whsec_from_arn",
			URLRef:    SecretRef{Store: SecretsManager, Name: "countersign/slack-url"},
			SecretRef: SecretRef{Store: SecretsManager, Name: "arn:aws:secretsmanager:us-east-1:123456789012:secret:countersign/slack-secret-AbCdEf"}},
	}
	if len(hooks) != 2 || hooks[0] != want[0] || hooks[1] != want[1] {
		t.Errorf("webhooks = %+v\nwant %+v", hooks, want)
	}
	if got := cfg.Connections["crm"].Headers; got["Authorization"] != "Bearer tok_from_secrets_manager" || got["X-Env"] != "tok_123" {
		t.Errorf("headers = %q", got)
	}

	t.Run("kept, not resolved", func(t *testing.T) {
		cfg, err := LoadFS(mapFS(refFiles()), "s3://b/p", &LoadOptions{LookupEnv: testEnv.LookupEnv, KeepSecretRefs: true})
		if err != nil {
			t.Fatal(err)
		}
		h := cfg.Settings.Approvers.Webhooks[1]
		if h.URL != "" || h.Secret != "" || h.URLRef.Name != "countersign/slack-url" || h.SecretRef.Store != SecretsManager {
			t.Errorf("kept webhook = %+v", h)
		}
		if got := cfg.Connections["crm"].Headers["Authorization"]; got != "Bearer ${secretsmanager:countersign/crm-token}" {
			t.Errorf("kept header = %q", got)
		}
	})

	t.Run("refused without a secret store", func(t *testing.T) {
		_, err := Load(writeConfig(t, refFiles()), testEnv)
		for _, want := range []string{
			"approvers.webhooks[0].secret: secretsmanager:countersign/ops-hook: secret references are resolved only where the configuration is deployed",
			"approvers.webhooks[1].url: secretsmanager:countersign/slack-url: secret references",
			"headers.Authorization: secretsmanager:countersign/crm-token: secret references",
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v lacks %q", err, want)
			}
		}
	})

	for _, tc := range []struct {
		name, settings, policy, want string
		values                       map[string]string
	}{
		{name: "missing secret", want: "settings.json: approvers.webhooks[0].secret: secretsmanager:countersign/ops-hook: ResourceNotFoundException"},
		{name: "empty secret", values: map[string]string{"secretsmanager:countersign/ops-hook": ""},
			want: "approvers.webhooks[0].secret: secretsmanager:countersign/ops-hook: the secret is empty"},
		{name: "empty reference", settings: strings.Replace(refSettings, `{"secretsmanager": "countersign/ops-hook"}`, `{}`, 1),
			want: `approvers.webhooks[0].secret: a secret reference names its secret`},
		{name: "unknown store", settings: strings.Replace(refSettings, `{"secretsmanager": "countersign/ops-hook"}`, `{"ssm": "a"}`, 1),
			want: `approvers.webhooks[0].secret.ssm: unknown field "ssm" (allowed: secretsmanager)`},
		{name: "bad secret name", settings: strings.Replace(refSettings, `countersign/ops-hook`, `ops hook!`, 1),
			want: `approvers.webhooks[0].secret: secretsmanager "ops hook!" is not a Secrets Manager secret name`},
		{name: "name not a string", settings: strings.Replace(refSettings, `"countersign/ops-hook"`, `7`, 1),
			want: `approvers.webhooks[0].secret.secretsmanager: want a string, got a number`},
		{name: "resolved url not a URL", values: map[string]string{"secretsmanager:countersign/slack-url": "hooks.slack.com/SECRETPATH"},
			want: "approvers.webhooks[1].url: secretsmanager:countersign/slack-url: the secret's value is not an absolute http:// or https:// URL"},
		{name: "unknown header store", policy: strings.Replace(refPolicy, "${secretsmanager:", "${ssm:", 1),
			want: `headers.Authorization: "${ssm:countersign/crm-token}" is not supported: the substitutions are ${env:NAME} and ${secretsmanager:NAME}`},
		{name: "email is reserved", settings: strings.Replace(refSettings, `"name": "ops"`, `"name": "email"`, 1),
			want: `approvers.webhooks[0].name: "email" is reserved for the email approver`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := refFiles()
			if tc.settings != "" {
				files["settings.json"] = tc.settings
			}
			if tc.policy != "" {
				files["connections/crm/policy.json"] = tc.policy
			}
			values := map[string]string{}
			for k, v := range store.values {
				values[k] = v
			}
			if tc.name == "missing secret" {
				delete(values, "secretsmanager:countersign/ops-hook")
			}
			for k, v := range tc.values {
				values[k] = v
			}
			s := &secretStore{values: values}
			_, err := LoadFS(mapFS(files), "s3://b/p", &LoadOptions{LookupEnv: testEnv.LookupEnv, Secrets: s.resolve})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRETPATH") {
				t.Errorf("the error shows a secret's value: %v", err)
			}
		})
	}
}
