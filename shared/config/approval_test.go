package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

// TestApproverSignInSetting: approvers.sign_in is "required" or
// "optional"; left out, it is required when an identity provider is
// configured and off otherwise; anything else stops the load with its path.
func TestApproverSignInSetting(t *testing.T) {
	cfg, err := Load(writeConfig(t, baseFiles()), testEnv)
	if err != nil || cfg.Settings.ApproverSignIn() != "" {
		t.Fatalf("without sign_in: %q, %v; want off", cfg.Settings.ApproverSignIn(), err)
	}
	for _, mode := range []string{"required", "optional"} {
		files := baseFiles()
		sub(settingsFile, `"console": true,`, `"console": true, "sign_in": "`+mode+`",`)(t, files)
		cfg, err := Load(writeConfig(t, files), testEnv)
		if err != nil || cfg.Settings.ApproverSignIn() != mode {
			t.Errorf("sign_in %q: %q, %v", mode, cfg.Settings.ApproverSignIn(), err)
		}
	}
	files := baseFiles()
	sub(settingsFile, `"scripts":`, `"sign_in": {"issuer": "https://idp.example.com", "client_id": "cs", "client_secret": "s"}, "scripts":`)(t, files)
	if cfg, err := Load(writeConfig(t, files), testEnv); err != nil || cfg.Settings.ApproverSignIn() != "required" {
		t.Errorf("with an identity provider: %q, %v; want required", cfg.Settings.ApproverSignIn(), err)
	}
	files = baseFiles()
	sub(settingsFile, `"console": true,`, `"console": true, "sign_in": "always",`)(t, files)
	_, err = Load(writeConfig(t, files), testEnv)
	var pe *Error
	if !errors.As(err, &pe) || !strings.HasSuffix(pe.File, settingsFile) || pe.Path != "approvers.sign_in" || !strings.Contains(pe.Msg, `use "required" or "optional"`) {
		t.Errorf("sign_in always: %v", err)
	}
}

// TestApprovalApprovers: approval.approvers (connection or endpoint) and
// approval.separate_approver load into the policy; separate_approver
// keeps asking out of the client; every mistake names its file and path.
func TestApprovalApprovers(t *testing.T) {
	with := func(old, new string) map[string]string {
		files := baseFiles()
		sub(crmFile, old, new)(t, files)
		return files
	}
	cfg, err := Load(writeConfig(t, with(`"approval": {"out_of_band_only": false}`,
		`"approval": {"approvers": ["Ada@Example.com", "@finance.example.com", "group:payments"], "separate_approver": true, "required": 3}`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Policy.Connection("crm")
	if a := tc.Approvers; a == nil || !a.Allows("ada@example.com", nil) || !a.Allows("eve@finance.example.com", nil) || !a.Allows("", []string{"payments"}) ||
		a.Allows("bob@example.com", []string{"ops"}) || a.Allows("eve@evilfinance.example.com", nil) {
		t.Errorf("approvers = %+v", a)
	}
	if !tc.SeparateApprover || !tc.OutOfBandOnly || tc.Required != 3 {
		t.Errorf("separate_approver %v, out_of_band_only %v; want both", tc.SeparateApprover, tc.OutOfBandOnly)
	}
	cfg, err = Load(writeConfig(t, with(`"confirm": true, "operation_id": "deleteContact"}`,
		`"confirm": true, "operation_id": "deleteContact", "approval": {"approvers": ["cy@example.com"]}}`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1"); !ok || m.Endpoint.Approvers == nil || !m.Endpoint.Approvers.Allows("cy@example.com", nil) {
		t.Errorf("the endpoint's approvers were not loaded")
	}
	for _, c := range []struct{ old, new, path, msg string }{
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": []}`, "approval.approvers", "lets nobody approve"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["ada"]}`, "approval.approvers[0]", "is not an approver"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["@localhost"]}`, "approval.approvers[0]", "not an e-mail domain"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["\u212aate@example.com"]}`, "approval.approvers[0]", "Kelvin sign"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["@\u212a.example.com"]}`, "approval.approvers[0]", "Kelvin sign"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["group:"]}`, "approval.approvers[0]", "name the identity provider's group"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["a@x.io", "A@X.io"]}`, "approval.approvers[1]", "is already approval.approvers[0]"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"separate_approver": "yes"}`, "approval.separate_approver", "want"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 1}`, "approval.required", "from 2 to 5"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 6}`, "approval.required", "from 2 to 5"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 2.5}`, "approval.required", "not a quorum"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"quorum": 2}`, "approval.quorum", "unknown field"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"separate_approver": 1}}`,
			"endpoints[1].approval.separate_approver", "want true or false"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"required": 0}}`,
			"endpoints[1].approval.required", "from 2 to 5, or 1 for one approval"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"required": 6}}`,
			"endpoints[1].approval.required", "not a quorum"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"required": "2"}}`,
			"endpoints[1].approval.required", "not a quorum"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"out_of_band_only": "no"}}`,
			"endpoints[1].approval.out_of_band_only", "want true or false"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"quorum": 2}}`,
			"endpoints[1].approval.quorum", "unknown field"},
	} {
		_, err := Load(writeConfig(t, with(c.old, c.new)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || !strings.HasSuffix(pe.File, crmFile) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: ~%q", c.new, err, c.path, c.msg)
		}
	}
}

// TestEndpointApprovalRules: an endpoint's approval.required,
// separate_approver and out_of_band_only replace its connection's for
// calls to it, and only for them; four eyes and a quorum keep asking out
// of the client.
func TestEndpointApprovalRules(t *testing.T) {
	files := baseFiles()
	sub(crmFile, `"confirm": true, "operation_id": "deleteContact"}`,
		`"confirm": true, "operation_id": "deleteContact", "approval": {"required": 2}}`)(t, files)
	sub(crmFile, `"confirm": "review"}`, `"confirm": "review", "approval": {"separate_approver": true}}`)(t, files)
	cfg, err := Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.Policy
	for _, c := range []struct {
		method, path string
		want         policy.Rules
	}{
		{"DELETE", "/contacts/1", policy.Rules{Required: 2, OutOfBandOnly: true}},
		{"GET", "/contacts/1", policy.Rules{}},
		{"POST", "/payments", policy.Rules{}},
		{"POST", "/accounts/1/close", policy.Rules{SeparateApprover: true, OutOfBandOnly: true}},
		{"PATCH", "/nowhere", policy.Rules{}},
	} {
		if got := set.RulesOf("crm", c.method, c.path); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.path, got, c.want)
		}
	}
	if tc := set.Connection("crm"); tc.Required != 0 || tc.SeparateApprover || tc.OutOfBandOnly {
		t.Errorf("the connection took an endpoint's rules: %+v", tc)
	}

	// An endpoint's own values replace the connection's, either way.
	files = baseFiles()
	sub(crmFile, `"approval": {"out_of_band_only": false}`, `"approval": {"required": 3, "separate_approver": true, "out_of_band_only": true}`)(t, files)
	sub(crmFile, `"confirm": true, "operation_id": "deleteContact"}`,
		`"confirm": true, "operation_id": "deleteContact", "approval": {"required": 1, "separate_approver": false, "out_of_band_only": false}}`)(t, files)
	sub(crmFile, `"confirm": "review"}`, `"confirm": "review", "approval": {"required": 5}}`)(t, files)
	if cfg, err = Load(writeConfig(t, files), testEnv); err != nil {
		t.Fatal(err)
	}
	set = cfg.Policy
	for _, c := range []struct {
		method, path string
		want         policy.Rules
	}{
		{"DELETE", "/contacts/1", policy.Rules{}},
		{"GET", "/contacts/1", policy.Rules{Required: 3, SeparateApprover: true, OutOfBandOnly: true}},
		{"POST", "/accounts/1/close", policy.Rules{Required: 5, SeparateApprover: true, OutOfBandOnly: true}},
	} {
		if got := set.RulesOf("crm", c.method, c.path); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.path, got, c.want)
		}
	}
	if got := set.RulesOf("nowhere", "GET", "/"); got != (policy.Rules{}) {
		t.Errorf("an unknown connection has rules %+v", got)
	}
	strict := set.RulesOf("crm", "DELETE", "/contacts/1").Strictest(set.RulesOf("crm", "POST", "/accounts/1/close"))
	if strict != (policy.Rules{Required: 5, SeparateApprover: true, OutOfBandOnly: true}) {
		t.Errorf("strictest %+v", strict)
	}
}

// TestDuplicateKeysRefused: a key given twice in a configuration file, at
// any depth, is refused, naming where: encoding/json would keep the last
// (a quorum of 1 after 2), another reader the first.
func TestDuplicateKeysRefused(t *testing.T) {
	for name, edit := range map[string]func(testing.TB, map[string]string){
		"in an endpoint's approval": sub(crmFile, `"confirm": true, "operation_id": "deleteContact"}`,
			`"confirm": true, "operation_id": "deleteContact", "approval": {"required": 2, "required": 1}}`),
		"at the top": sub(crmFile, `"endpoints"`, `"base_url": "https://example.com", "endpoints"`),
	} {
		t.Run(name, func(t *testing.T) {
			files := baseFiles()
			edit(t, files)
			_, err := Load(writeConfig(t, files), testEnv)
			if err == nil || !strings.Contains(err.Error(), "duplicate key") {
				t.Fatalf("err = %v, want a duplicate key refused", err)
			}
		})
	}
}
