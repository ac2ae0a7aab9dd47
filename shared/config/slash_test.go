package config

import (
	"slices"
	"strings"
	"testing"
)

// TestEncodedSlashParams: an endpoint names the parameters whose value may
// hold an encoded slash; a name that is not a parameter, or is repeated,
// is a configuration error.
func TestEncodedSlashParams(t *testing.T) {
	const ep = `"path": "/contacts/{id}"}`
	for _, tt := range []struct {
		value, err string
	}{
		{value: `["id"]`},
		{value: `["key"]`, err: `endpoints[0].encoded_slash_params[0]: "key" names no parameter`},
		{value: `["id", "id"]`, err: `"id" is listed twice`},
		{value: `"id"`, err: "encoded_slash_params"},
		{value: `[5]`, err: "encoded_slash_params[0]"},
	} {
		files := baseFiles()
		if !strings.Contains(files[crmFile], ep) {
			t.Fatalf("the test policy has no %s", ep)
		}
		files[crmFile] = strings.Replace(files[crmFile], ep, `"path": "/contacts/{id}", "encoded_slash_params": `+tt.value+`}`, 1)
		cfg, err := Load(writeConfig(t, files), testEnv)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error saying %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.value, err)
		}
		m, ok := cfg.Policy.Resolve("crm", "GET", "/contacts/a%2Fb")
		if !ok || !slices.Equal(m.Endpoint.SlashParams, []string{"id"}) {
			t.Errorf("%s: resolved %+v", tt.value, m.Endpoint)
		}
	}
}
