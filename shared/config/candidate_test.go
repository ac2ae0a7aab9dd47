package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withCandidate is the base configuration with a candidate in "candidate"
// whose DELETE /contacts/{id} is never, and settings naming it.
func withCandidate(settings func(string) string, candidate map[string]string) map[string]string {
	files := baseFiles()
	files["settings.json"] = settings(settingsJSON)
	for rel, content := range baseFiles() {
		files["candidate/"+rel] = content
	}
	files["candidate/connections/crm/policy.json"] = strings.Replace(policyJSON, `"path": "/contacts/{id}", "confirm": true`, `"path": "/contacts/{id}", "confirm": "never"`, 1)
	for rel, content := range candidate {
		files["candidate/"+rel] = content
	}
	return files
}

func naming(dir string) func(string) string {
	return func(s string) string {
		return strings.Replace(s, `"public_url"`, `"candidate_config": `+dir+`,
  "public_url"`, 1)
	}
}

func TestCandidateConfig(t *testing.T) {
	cfg, err := Load(writeConfig(t, withCandidate(naming(`"candidate"`), nil)), testEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Settings.CandidateConfig != "candidate" || cfg.Candidate == nil {
		t.Fatalf("candidate %q %v", cfg.Settings.CandidateConfig, cfg.Candidate)
	}
	live, _ := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1")
	cand, _ := cfg.Candidate.Policy.Resolve("crm", "DELETE", "/contacts/1")
	if live.Endpoint.Tier.String() != "confirm" || cand.Endpoint.Tier.String() != "never" {
		t.Fatalf("live %s, candidate %s", live.Endpoint.Tier, cand.Endpoint.Tier)
	}
	if cfg.Candidate.Candidate != nil {
		t.Fatal("the candidate has a candidate")
	}

	bad := []struct {
		name     string
		settings func(string) string
		cand     map[string]string
		want     string
	}{
		{"outside the configuration", naming(`"../elsewhere"`), nil, "not a directory inside the configuration"},
		{"absolute", naming(`"/etc"`), nil, "not a directory inside the configuration"},
		{"empty", naming(`""`), nil, "not a directory inside the configuration"},
		{"not a string", naming(`true`), nil, "candidate_config"},
		{"missing", naming(`"nowhere"`), nil, "settings.json"},
		{"invalid candidate", naming(`"candidate"`), map[string]string{"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:9100", "endpoints": [{"method": "GET", "path": "/x", "confirm": false}]}`},
			"candidate/connections/crm/policy.json"},
		{"a candidate's candidate", naming(`"candidate"`), map[string]string{"settings.json": naming(`"candidate"`)(settingsJSON)}, "no candidate of its own"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, withCandidate(tt.settings, tt.cand)), testEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestCandidateConfigSymlink: a candidate directory reached through a
// symbolic link (to a directory outside the configuration, or within it)
// is refused, naming the link: config push uploads directories, not
// links, so the candidate deployed would not be the one loaded here.
func TestCandidateConfigSymlink(t *testing.T) {
	outside := writeConfig(t, withCandidate(naming(`"candidate"`), nil))
	for _, tt := range []struct{ name, setting, link, target string }{
		{"a link out of the configuration", `"candidate"`, "candidate", filepath.Join(outside, "candidate")},
		{"a link on the way", `"trial/candidate"`, "trial", "real"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := withCandidate(naming(tt.setting), nil)
			for rel, content := range files {
				if after, ok := strings.CutPrefix(rel, "candidate/"); ok {
					delete(files, rel)
					if tt.link == "trial" {
						files["real/candidate/"+after] = content
					}
				}
			}
			dir := writeConfig(t, files)
			if err := os.Symlink(tt.target, filepath.Join(dir, tt.link)); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir, testEnv)
			if err == nil || !strings.Contains(err.Error(), tt.link+" is a symbolic link") {
				t.Fatalf("Load: %v, want the link refused", err)
			}
		})
	}
}
