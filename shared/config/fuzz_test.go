package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/policy"
)

// FuzzLoad: whatever the four kinds of file hold, Load never panics; a
// refusal is a list of *Error, each naming a file of the directory and what
// is wrong; an accepted configuration has a compiled policy that decides a
// call on every endpoint it lists without panicking.
func FuzzLoad(f *testing.F) {
	f.Add(settingsJSON, policyJSON, toolJSON, credentialsJSON)
	f.Add(`{}`, `{"base_url":"http://x","endpoints":[{"method":"GET","path":"/a/{id}","confirm":false}]}`, `{}`, `[]`)
	f.Add(settingsJSON, `{"base_url":"http://x","endpoints":[{"method":"POST","path":"/p","escalate":[{"field":"body.a.0.b","above":1e400,"escalate":"never"}]}]}`, gatedToolJSON, `[{"id":"a","key":"k","choice":"nope"}]`)
	f.Add(`{"workspace":`, `[`, `"`, `{`)
	f.Fuzz(func(t *testing.T, settings, policyFile, tool, credentials string) {
		dir := writeConfig(t, map[string]string{
			"settings.json":                   settings,
			"credentials.json":                credentials,
			"connections/crm/policy.json":     policyFile,
			"connections/crm/tools/tool.json": tool,
		})
		cfg, err := Load(dir, testEnv)
		if err != nil {
			if cfg != nil {
				t.Fatal("a refused configuration came with a Config")
			}
			var errs []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			} else {
				errs = []error{err}
			}
			for _, e := range errs {
				var pe *Error
				if !errors.As(e, &pe) {
					t.Fatalf("error %v is not a *policy.Error", e)
				}
				if !strings.HasPrefix(pe.File, dir) || pe.Msg == "" {
					t.Fatalf("error %q does not name a file of the directory and the problem", pe)
				}
			}
			return
		}
		if cfg.Policy == nil {
			t.Fatal("an accepted configuration has no policy")
		}
		for _, c := range cfg.Policy.Connections() {
			for _, ep := range c.Endpoints {
				path := strings.NewReplacer("{", "", "}", "").Replace(ep.Path)
				call := policy.Call{Connection: c.Name, Method: ep.Method, Path: path, Intent: policy.IntentWrite,
					BodyUnreadable: "fuzz"}
				d := policy.Evaluate(cfg.Policy, policy.Input{Call: &call, Credential: &policy.Credential{Choice: countersign.AskPerson}})
				if d.Reason == "" || d.Rule == "" {
					t.Fatalf("a decision without a reason or rule: %+v", d)
				}
			}
		}
	})
}
