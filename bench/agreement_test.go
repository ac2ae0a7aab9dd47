package bench

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/policy"
)

var update = flag.Bool("update", false, "rewrite the generated policies in testdata/")

const configDir = "policy/config"

func loadBench(tb testing.TB) *Bench {
	tb.Helper()
	b, err := Load(configDir)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestAgreement fails unless countersign, OPA and Cedar reach the decision
// the mix expects, with the same outcome, code, tier, escalation and
// notice, on every call of the mix.
func TestAgreement(t *testing.T) {
	b := loadBench(t)
	for _, c := range Mix() {
		t.Run(c.Name, func(t *testing.T) {
			cred := b.Credentials[c.Credential]
			if cred == nil {
				t.Fatalf("no credential %q in %s", c.Credential, configDir)
			}
			for _, e := range b.Engines {
				call := c.Call
				got, err := e.Decide(&call, cred)
				if err != nil {
					t.Errorf("%s: %v", e.Name(), err)
					continue
				}
				if got != c.Want {
					t.Errorf("%s: got %v, want %v", e.Name(), got, c.Want)
				}
			}
		})
	}
}

// TestMixCoverage keeps the mix meaningful: every outcome, tier, denial
// code (but hook_denied: the policy has no hooks) and credential choice
// appears, and exactly the unknown_ cases are refused by the router.
func TestMixCoverage(t *testing.T) {
	b := loadBench(t)
	outcomes := map[policy.Outcome]bool{}
	tiers := map[policy.Tier]bool{}
	codes := map[policy.Code]bool{}
	choices := map[countersign.Choice]bool{}
	var escalated, notice, delegated, readOnly bool
	for _, c := range Mix() {
		outcomes[c.Want.Outcome] = true
		tiers[c.Want.Tier] = true
		codes[c.Want.Code] = true
		escalated = escalated || c.Want.Escalated
		notice = notice || c.Want.Notice
		delegated = delegated || c.Call.Delegated
		cred := b.Credentials[c.Credential]
		if cred == nil {
			t.Fatalf("%s: no credential %q", c.Name, c.Credential)
		}
		readOnly = readOnly || cred.ReadOnly
		if !cred.ReadOnly && c.Want.Tier == policy.Confirm && !c.Want.Escalated {
			choices[cred.Choice] = true
		}
		if _, routed := b.Config.Policy.Resolve(c.Call.Connection, c.Call.Method, c.Call.Path); routed == c.RouterOnly() {
			t.Errorf("%s: resolved %t, but the name says router-only %t", c.Name, routed, c.RouterOnly())
		}
	}
	if len(outcomes) != 3 || len(tiers) != 4 || len(choices) != 4 {
		t.Errorf("the mix has outcomes %v, tiers %v, confirm-tier choices %v; want all of each", outcomes, tiers, choices)
	}
	for _, code := range []policy.Code{policy.CodeNone, policy.CodeUnknownOperation, policy.CodeRequiresConfirmation,
		policy.CodeReviewRequired, policy.CodeBlocked, policy.CodeReadOnly, policy.CodeWriteIntentRequired} {
		if !codes[code] {
			t.Errorf("no call of the mix is decided with code %q", code)
		}
	}
	if !escalated || !notice || !delegated || !readOnly {
		t.Errorf("escalated %t, notice %t, delegated %t, read-only %t: want each in the mix", escalated, notice, delegated, readOnly)
	}
}

func TestPolicyHas100Endpoints(t *testing.T) {
	b := loadBench(t)
	n := 0
	for _, c := range b.Config.Policy.Connections() {
		n += len(c.Endpoints)
	}
	if n != 100 {
		t.Errorf("%s has %d endpoints, want 100", configDir, n)
	}
}

// TestGeneratedPolicies keeps testdata/ showing exactly what the OPA and
// Cedar engines are given besides policy/countersign.{rego,cedar}.
func TestGeneratedPolicies(t *testing.T) {
	b := loadBench(t)
	rego, err := RegoData(b.Config.Policy)
	if err != nil {
		t.Fatal(err)
	}
	cedar, err := CedarPolicies(b.Config.Policy)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"policy.rego": rego, "connections.cedar": cedar} {
		file := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGeneratedPolicies -update)", err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("%s is out of date (go test -run TestGeneratedPolicies -update); -want +got:\n%s", file, d)
		}
	}
}
