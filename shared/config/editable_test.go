package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestApprovalEditable: an endpoint's approval.editable loads into the
// policy; path parameters, headers, anything not a body or query field,
// a repeat, and a connection-level list stop the load with the file and
// the field's path.
func TestApprovalEditable(t *testing.T) {
	const at = `{"method": "POST",   "path": "/payments", "confirm": true,`
	with := func(editable string) map[string]string {
		files := baseFiles()
		sub(crmFile, at, at+` "approval": {"editable": `+editable+`},`)(t, files)
		return files
	}
	cfg, err := Load(writeConfig(t, with(`["body.amount", "body.memo", "body.to.iban", "query.x"]`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cfg.Policy.Resolve("crm", "POST", "/payments")
	if !ok || !slices.Equal(m.Endpoint.Editable, []string{"body.amount", "body.memo", "body.to.iban", "query.x"}) {
		t.Fatalf("editable = %v", m.Endpoint.Editable)
	}
	if m, _ := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1"); m.Endpoint.Editable != nil {
		t.Errorf("an endpoint without editable has %v", m.Endpoint.Editable)
	}
	const p = "endpoints[2].approval.editable"
	for _, c := range []struct{ editable, path, msg string }{
		{`["path.id"]`, p + "[0]", "path parameters and headers"},
		{`["headers.X-Tenant-Id"]`, p + "[0]", "path parameters and headers"},
		{`["header.Authorization"]`, p + "[0]", "path parameters and headers"},
		{`["amount"]`, p + "[0]", "is not a field"},
		{`["body."]`, p + "[0]", "is not a field"},
		{`["body.a..b"]`, p + "[0]", "empty key"},
		{`["cookie.x"]`, p + "[0]", "is not a field"},
		{`["query.a=b"]`, p + "[0]", "not a query parameter name"},
		{`["body.amount", "body.amount"]`, p + "[1]", "listed twice"},
		{`[1]`, p + "[0]", "want a string"},
		{`"body.amount"`, p, "want an array"},
		{`["body.a.b.c.d.e.f.g.h.i"]`, p + "[0]", "too deep"},
	} {
		_, err := Load(writeConfig(t, with(c.editable)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || !strings.HasSuffix(pe.File, crmFile) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("editable %s: %v, want %s: ~%q", c.editable, err, c.path, c.msg)
		}
	}
	files := baseFiles()
	sub(crmFile, `"approval": {"out_of_band_only": false}`, `"approval": {"editable": ["body.amount"]}`)(t, files)
	_, err = Load(writeConfig(t, files), testEnv)
	var pe *Error
	if !errors.As(err, &pe) || pe.Path != "approval.editable" || !strings.Contains(pe.Msg, "unknown field") {
		t.Errorf("a connection's editable: %v", err)
	}
}
