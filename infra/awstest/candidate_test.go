package awstest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// candidateTrial: a candidate configuration pushed to the bucket beside the
// live one (settings.json candidate_config "candidate": the objects under
// config/candidate/) turns crm's GET and DELETE /contacts/{id} to never.
// The gateway enforces the live decisions (the GET runs, the DELETE
// pauses) and records each difference, which the operator function's GET
// /v1/operator/shadow summarises; pushing the configuration back without a
// candidate ends the trial. (One DELETE only: moto runs one execution of
// a state machine at a time.)
func candidateTrial(f *flow) {
	live := f.s.configDir(f.s.settings, nil)
	cand := f.s.configDir(f.s.settings, map[string]any{"GET": "never", "DELETE": "never"})
	// The candidate is a whole configuration but its credentials: those
	// live in the table.
	err := filepath.WalkDir(cand, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cand, p)
		if rel == "credentials.json" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(live, "candidate", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		f.Fatal(err)
	}
	setCandidate(f, live, "candidate")
	out, err := f.s.push(live)
	if err != nil {
		f.Fatalf("config push with a candidate: %v\n%s", err, out)
	}
	f.Logf("config push with candidate_config (GET and DELETE /contacts/{id} never in the candidate):\n%s", strings.TrimSpace(out))

	op := http.Header{"Authorization": {"Bearer " + operatorKey}}
	shadow := func() answer {
		s := f.do(http.MethodGet, "/v1/operator/shadow", op, "")
		if s.Status != http.StatusOK {
			f.Fatalf("GET /v1/operator/shadow: %d %s", s.Status, s.Raw)
		}
		return s
	}
	differs := func(s answer, want string) bool {
		ex, _ := s.Body["examples"].([]any)
		for _, e := range ex {
			if m, _ := e.(map[string]any); m["differs"] == want {
				return true
			}
		}
		return false
	}
	bound := time.Duration(refreshSeconds)*time.Second + 2*time.Second + 2*time.Second
	deadline := time.Now().Add(2 * bound)
	for n := 0; ; n++ {
		// The live decision is the one enforced: the GET runs.
		f.expect("GET /contacts/720 while the candidate is tried", f.call("GET", "/contacts/720", "read", ""), http.StatusOK, "executed")
		// The gateway and the operator function each pick the push up
		// within refreshSeconds, in either order: the gateway may record
		// a difference before the operator function names the candidate.
		s := shadow()
		if differs(s, "live execute (auto); candidate deny blocked (never)") && s.str("candidate") == "candidate" {
			f.Logf("GET /v1/operator/shadow after %d GETs run: %v differences", n+1, s.Body["differences"])
			break
		}
		if time.Now().After(deadline) {
			f.Fatalf("no difference recorded, or no candidate named, %s after the push: %s", 2*bound, s.Raw)
		}
		time.Sleep(300 * time.Millisecond)
	}
	// A confirm-tier call the candidate would refuse pauses.
	f.pause("DELETE", "/contacts/721")
	if s := shadow(); !differs(s, "live pause (confirm); candidate deny blocked (never)") {
		f.Fatalf("the DELETE's difference is not summarised: %s", s.Raw)
	}
	f.Logf("DELETE /contacts/721 paused; its difference summarised")

	// Back to the flows' configuration, without a candidate.
	if out, err := f.s.push(f.s.configDir(f.s.settings, nil)); err != nil {
		f.Fatalf("config push: %v\n%s", err, out)
	}
	deadline = time.Now().Add(bound)
	for {
		s := f.do(http.MethodGet, "/v1/operator/shadow", op, "")
		if s.Status == http.StatusOK && s.str("candidate") == "" {
			break
		}
		if time.Now().After(deadline) {
			f.Fatalf("the candidate was still configured %s after pushing it away: %s", bound, s.Raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setCandidate names the candidate directory in dir's settings.json.
func setCandidate(f *flow, dir, candidate string) {
	p := filepath.Join(dir, "settings.json")
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		f.Fatal(err)
	}
	s["candidate_config"] = candidate
	if b, err = json.MarshalIndent(s, "", "  "); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		f.Fatal(err)
	}
}
