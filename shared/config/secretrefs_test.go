package config_test

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/countersign/countersign/shared/config"
)

func TestSecretRefs(t *testing.T) {
	sm := func(names ...string) []config.SecretRef {
		var out []config.SecretRef
		for _, n := range names {
			out = append(out, config.SecretRef{Store: config.SecretsManager, Name: n})
		}
		return out
	}
	tests := []struct {
		name  string
		files map[string]string
		max   int
		want  []config.SecretRef
	}{
		{"none", map[string]string{"settings.json": `{"workspace": {"name": "w"}}`}, 10, nil},
		{"webhook url and secret, header, sign-in", map[string]string{
			"settings.json": `{"approvers": {"webhooks": [{"name": "ops", "url": {"secretsmanager": "p/url"}, "secret": {"secretsmanager": "p/hook"}}]},
			  "sign_in": {"client_secret": {"secretsmanager": "p/oidc"}}}`,
			"connections/crm/policy.json": `{"headers": {"Authorization": "Bearer ${secretsmanager:p/crm}", "X-Two": "${secretsmanager:p/a}-${env:HOME}-${secretsmanager:p/b}"}}`,
		}, 10, sm("p/crm", "p/a", "p/b", "p/url", "p/hook", "p/oidc")},
		{"each once", map[string]string{
			"a.json": `{"x": {"secretsmanager": "p/1"}, "y": {"secretsmanager": "p/1"}, "z": "${secretsmanager:p/1}"}`,
		}, 10, sm("p/1")},
		{"a value named secretsmanager is no reference; a name is not a value", map[string]string{
			"a.json": `{"note": "secretsmanager", "secretsmanager": {"secretsmanager": "p/deep"}, "list": ["secretsmanager", "p/not"]}`,
		}, 10, sm("p/deep")},
		{"at most max", map[string]string{
			"a.json": `["${secretsmanager:p/1}", "${secretsmanager:p/2}", "${secretsmanager:p/3}"]`,
			"b.json": `["${secretsmanager:p/4}"]`,
		}, 2, sm("p/1", "p/2")},
		{"only .json files; bad JSON is left for Load", map[string]string{
			"README.md":   "${secretsmanager:p/md}",
			"bad.json":    `{"a": "${secretsmanager:p/before"} broken`,
			"good.json":   `"${secretsmanager:p/good}"`,
			"unterm.json": `"${secretsmanager:p/unterminated"`,
		}, 10, sm("p/good")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			if got := config.SecretRefs(fsys, tt.max); !slices.Equal(got, tt.want) {
				t.Errorf("SecretRefs = %v, want %v", got, tt.want)
			}
		})
	}
}
