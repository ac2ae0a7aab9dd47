package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

// TestRateAndRememberLoad: escalate[] rate rules (endpoint and
// connection) and approval.remember (endpoint and connection) load into
// the policy; a connection's rate applies to each endpoint after its own;
// remember is not offered where a quorum or four eyes is the rule.
func TestRateAndRememberLoad(t *testing.T) {
	files := baseFiles()
	sub(crmFile, `"confirm": true, "operation_id": "deleteContact"}`,
		`"confirm": true, "operation_id": "deleteContact", "escalate": [{"rate": {"calls": 20, "per_seconds": 600}, "escalate": "review"}], "approval": {"remember": {"max_minutes": 60, "max_calls": 20}}}`)(t, files)
	sub(crmFile, `"approval": {"out_of_band_only": false}`,
		`"approval": {"out_of_band_only": false, "remember": {"max_minutes": 10, "max_calls": 3}}, "escalate": [{"rate": {"calls": 100, "per_seconds": 3600}, "escalate": "never"}]`)(t, files)
	cfg, err := Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	del, ok := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1")
	if !ok {
		t.Fatal("DELETE /contacts/1 not resolved")
	}
	rates := del.Endpoint.Rates
	if len(rates) != 2 || rates[0].Calls != 20 || rates[0].PerSeconds != 600 || rates[0].Escalate != policy.Review ||
		rates[1].Calls != 100 || rates[1].Escalate != policy.Never {
		t.Fatalf("rates = %+v", rates)
	}
	if !strings.Contains(rates[0].Rule, "endpoints[1].escalate[0] rate 20 calls per 600 s: review") || !strings.Contains(rates[1].Rule, "policy.json escalate[0]") {
		t.Errorf("rules %q, %q", rates[0].Rule, rates[1].Rule)
	}
	if r := del.Connection.RememberFor(del.Endpoint); r == nil || r.MaxMinutes != 60 || r.MaxCalls != 20 {
		t.Errorf("endpoint remember = %+v", r)
	}
	get, _ := cfg.Policy.Resolve("crm", "GET", "/contacts/1")
	if r := get.Connection.RememberFor(get.Endpoint); r == nil || r.MaxMinutes != 10 || r.MaxCalls != 3 {
		t.Errorf("connection remember = %+v", r)
	}
	if len(get.Endpoint.Rates) != 1 || len(get.Endpoint.Escalate) != 0 {
		t.Errorf("GET rates %+v", get.Endpoint.Rates)
	}

	files = baseFiles()
	sub(crmFile, `"approval": {"out_of_band_only": false}`, `"approval": {"separate_approver": true, "remember": {"max_minutes": 10, "max_calls": 3}}`)(t, files)
	cfg, err = Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if del, _ := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1"); del.Connection.RememberFor(del.Endpoint) != nil {
		t.Error("remember offered under four eyes")
	}

	files = baseFiles()
	sub(crmFile, `"approval": {"out_of_band_only": false}`, `"approval": {"passkey": true, "remember": {"max_minutes": 10, "max_calls": 3}}`)(t, files)
	cfg, err = Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if del, _ := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1"); del.Connection.RememberFor(del.Endpoint) != nil {
		t.Error("remember offered where each approval is a passkey's")
	}
}

// TestRateAndRememberErrors: every mistake in a rate rule or a remember
// block stops the load and names its file and path.
func TestRateAndRememberErrors(t *testing.T) {
	const del = `"confirm": true, "operation_id": "deleteContact"}`
	const conn = `"approval": {"out_of_band_only": false}`
	onDelete := func(extra string) string { return `"confirm": true, "operation_id": "deleteContact", ` + extra + `}` }
	rate := func(r string) string { return onDelete(`"escalate": [` + r + `]`) }
	for _, c := range []struct{ old, new, path, msg string }{
		{del, rate(`{"rate": {"calls": 0, "per_seconds": 600}, "escalate": "review"}`), "endpoints[1].escalate[0].rate.calls", "from 1 to"},
		{del, rate(`{"rate": {"calls": 20, "per_seconds": 86401}, "escalate": "review"}`), "endpoints[1].escalate[0].rate.per_seconds", "from 1 to 86400"},
		{del, rate(`{"rate": {"calls": 2.5, "per_seconds": 60}, "escalate": "review"}`), "endpoints[1].escalate[0].rate.calls", "whole number"},
		{del, rate(`{"rate": {"calls": 20}, "escalate": "review"}`), "endpoints[1].escalate[0].rate.per_seconds", "missing"},
		{del, rate(`{"rate": {"calls": 20, "per_seconds": 60, "burst": 3}, "escalate": "review"}`), "endpoints[1].escalate[0].rate.burst", "unknown field"},
		{del, rate(`{"rate": {"calls": 20, "per_seconds": 60}, "escalate": "confirm"}`), "endpoints[1].escalate[0].escalate", "only raises"},
		{del, rate(`{"rate": {"calls": 20, "per_seconds": 60}}`), "endpoints[1].escalate[0].escalate", "missing"},
		{del, rate(`{"rate": {"calls": 20, "per_seconds": 60}, "field": "body.x", "escalate": "review"}`), "endpoints[1].escalate[0].field", "unknown field"},
		{del, rate(`{"rate": 20, "escalate": "review"}`), "endpoints[1].escalate[0].rate", "want a JSON object"},
		{del, rate(`{"rate": {"calls": 1, "per_seconds": 1}, "escalate": "review"}, {"rate": {"calls": 2, "per_seconds": 1}, "escalate": "review"}, {"rate": {"calls": 3, "per_seconds": 1}, "escalate": "review"}, {"rate": {"calls": 4, "per_seconds": 1}, "escalate": "review"}, {"rate": {"calls": 5, "per_seconds": 1}, "escalate": "review"}`),
			"endpoints[1].escalate", "at most 4"},
		{conn, conn + `, "escalate": [{"field": "body.amount", "above": 5, "escalate": "review"}]`, "escalate[0]", "rate rules only"},
		{conn, conn + `, "escalate": {"rate": {"calls": 1, "per_seconds": 1}, "escalate": "review"}`, "escalate", "want a JSON array"},
		{del, onDelete(`"approval": {"remember": {"max_minutes": 0, "max_calls": 3}}`), "endpoints[1].approval.remember.max_minutes", "from 1 to 1440"},
		{del, onDelete(`"approval": {"remember": {"max_minutes": 10, "max_calls": 1001}}`), "endpoints[1].approval.remember.max_calls", "from 1 to 1000"},
		{del, onDelete(`"approval": {"remember": {"max_minutes": 10}}`), "endpoints[1].approval.remember.max_calls", "missing"},
		{del, onDelete(`"approval": {"remember": {"max_minutes": "10", "max_calls": 3}}`), "endpoints[1].approval.remember.max_minutes", "whole number"},
		{del, onDelete(`"approval": {"remember": {"max_minutes": 10, "max_calls": 3, "per": "user"}}`), "endpoints[1].approval.remember.per", "unknown field"},
		{conn, `"approval": {"remember": true}`, "approval.remember", "want a JSON object"},
	} {
		t.Run(c.path+" "+c.msg, func(t *testing.T) {
			files := baseFiles()
			sub(crmFile, c.old, c.new)(t, files)
			_, err := Load(writeConfig(t, files), testEnv)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a load error", err)
			}
			found := false
			for _, e := range errorsOf(err) {
				if strings.HasSuffix(e.File, crmFile) && (c.path == "" || e.Path == c.path) && strings.Contains(e.Msg, c.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no error at %s saying %q in: %v", c.path, c.msg, err)
			}
		})
	}
}

// errorsOf lists the load errors err holds.
func errorsOf(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if u := errors.Unwrap(err); u != nil {
			walk(u)
		}
	}
	walk(err)
	return out
}
