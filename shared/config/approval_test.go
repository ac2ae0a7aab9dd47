package config

import (
	"errors"
	"strings"
	"testing"
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
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["group:"]}`, "approval.approvers[0]", "name the identity provider's group"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"approvers": ["a@x.io", "A@X.io"]}`, "approval.approvers[1]", "is already approval.approvers[0]"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"separate_approver": "yes"}`, "approval.separate_approver", "want"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 1}`, "approval.required", "from 2 to 5"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 6}`, "approval.required", "from 2 to 5"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"required": 2.5}`, "approval.required", "not a quorum"},
		{`"approval": {"out_of_band_only": false}`, `"approval": {"quorum": 2}`, "approval.quorum", "unknown field"},
		{`"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "approval": {"separate_approver": true}}`,
			"endpoints[1].approval.separate_approver", "applies to the whole connection"},
	} {
		_, err := Load(writeConfig(t, with(c.old, c.new)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || !strings.HasSuffix(pe.File, crmFile) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: ~%q", c.new, err, c.path, c.msg)
		}
	}
}
