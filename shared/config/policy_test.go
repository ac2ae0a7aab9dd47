package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

// The examples of docs/configuration.md (key_sha256 completed: sha256("test")).
const (
	settingsJSON = `{
  "workspace": {"name": "Acme", "accent_color": "#5b21b6"},
  "public_url": "http://127.0.0.1:8080/",
  "approvers": {
    "console": true,
    "webhooks": [{"name": "ops", "url": "http://127.0.0.1:9099/hook", "format": "json", "secret": "whsec_test"}]
  },
  "timeouts": {"call_seconds": 600, "script_seconds": 1800, "redeem_seconds": 600},
  "scripts": {"time_limit_ms": 2500, "max_calls": 20, "max_script_bytes": 4096, "max_result_bytes": 65536, "memory_mib": 32}
}`
	policyJSON = `{
  "base_url": "http://127.0.0.1:9100",
  "headers": {"Authorization": "Bearer ${env:CRM_TOKEN}"},
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "operation_id": "deleteContact"},
    {"method": "POST",   "path": "/payments", "confirm": true,
     "escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}]},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"},
    {"method": "DELETE", "path": "/accounts/{id}", "confirm": "never"}
  ],
  "delegations": {"escalateConfirm": true},
  "hooks": [{"url": "http://127.0.0.1:9200/hook"}],
  "approval": {"out_of_band_only": false}
}`
	toolJSON = `{"name": "archive_contact", "description": "Archive a contact",
 "exposure": {"kind": "requires-confirmation", "prompt": "Archive this contact?"},
 "llm_callable": true,
 "call": {"method": "POST", "path": "/contacts/{id}/archive"}}`
	gatedToolJSON = `{"name": "purge", "exposure": {"kind": "operator-gated"}, "llm_callable": false,
 "call": {"method": "POST", "path": "/admin/purge"}}`
	billingJSON     = `{"base_url": "https://billing.example.com/api/", "endpoints": [{"method": "GET", "path": "/invoices/{id}"}]}`
	credentialsJSON = `[
  {"id": "chat-user", "key": "cs_test_ask",   "choice": "ask_person"},
  {"id": "ops-key",   "key_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "origin": "operator"},
  {"id": "reader",    "key": "cs_test_ro",    "choice": "run_without_asking", "read_only": true},
  {"id": "agent",     "key": "cs_test_agent", "choice": "ask_agent", "connections": ["crm"]},
  {"id": "root",      "key": "cs_test_op",    "role": "operator"},
  {"id": "chat-default", "key": "cs_test_chat", "origin": "chat"}
]`
)

func baseFiles() map[string]string {
	return map[string]string{
		"settings.json":                      settingsJSON,
		"credentials.json":                   credentialsJSON,
		"connections/crm/policy.json":        policyJSON,
		"connections/crm/tools/archive.json": toolJSON,
		"connections/crm/tools/purge.json":   gatedToolJSON,
		"connections/crm/tools/README.md":    "not a tool",
		"connections/billing/policy.json":    billingJSON,
	}
}

// writeConfig writes files (relative path → content) into a new temporary
// directory and returns it.
func writeConfig(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

var testEnv = &LoadOptions{LookupEnv: func(name string) (string, bool) {
	if name == "CRM_TOKEN" {
		return "tok_123", true
	}
	return "", false
}}

func TestLoadValid(t *testing.T) {
	dir := writeConfig(t, baseFiles())
	cfg, err := Load(dir, testEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	st := cfg.Settings
	if st.Workspace.Name != "Acme" || st.Workspace.AccentColor != "#5b21b6" || st.PublicURL != "http://127.0.0.1:8080" {
		t.Errorf("settings = %+v", st)
	}
	if !st.Approvers.Console || len(st.Approvers.Webhooks) != 1 ||
		st.Approvers.Webhooks[0] != (Webhook{Name: "ops", URL: "http://127.0.0.1:9099/hook", Format: "json", Secret: "whsec_test"}) {
		t.Errorf("approvers = %+v", st.Approvers)
	}
	if st.Timeouts != (Timeouts{600, 1800, 600}) || st.Timeouts.Script().Minutes() != 30 {
		t.Errorf("timeouts = %+v", st.Timeouts)
	}
	if st.Limits != DefaultLimits || st.Limits.ReviewRetention().Hours() != 7*24 {
		t.Errorf("limits = %+v, want the defaults", st.Limits)
	}
	if st.Scripts != (Scripts{TimeLimitMS: 2500, MaxCalls: 20, MaxScriptBytes: 4096, MaxResultBytes: 65536, MemoryMiB: 32}) ||
		st.Scripts.TimeLimit().Seconds() != 2.5 {
		t.Errorf("scripts = %+v", st.Scripts)
	}

	crm := cfg.Connections["crm"]
	if crm == nil || crm.BaseURL != "http://127.0.0.1:9100" || crm.Headers["Authorization"] != "Bearer tok_123" ||
		len(crm.Hooks) != 1 || crm.Hooks[0].URL != "http://127.0.0.1:9200/hook" || crm.OutOfBandOnly {
		t.Fatalf("crm = %+v", crm)
	}
	if b := cfg.Connections["billing"]; b == nil || b.BaseURL != "https://billing.example.com/api" {
		t.Errorf("billing = %+v", b)
	}
	archive := crm.Tools["archive_contact"]
	if archive == nil || *archive != (Tool{Name: "archive_contact", Description: "Archive a contact", Kind: KindRequiresConfirmation,
		Prompt: "Archive this contact?", LLMCallable: true, Method: "POST", Path: "/contacts/{id}/archive"}) {
		t.Errorf("archive_contact = %+v", archive)
	}
	if purge := crm.Tools["purge"]; purge == nil || purge.Kind != KindOperatorGated || purge.LLMCallable {
		t.Errorf("purge = %+v", purge)
	}

	// Credentials: keys hashed, choices defaulted from the origin.
	want := []struct {
		id, hash, choice   string
		readOnly, operator bool
		connections        string
	}{
		{"chat-user", HashKey("cs_test_ask"), "ask_person", false, false, ""},
		{"ops-key", HashKey("test"), "refuse", false, false, ""},
		{"reader", HashKey("cs_test_ro"), "run_without_asking", true, false, ""},
		{"agent", HashKey("cs_test_agent"), "ask_agent", false, false, "crm"},
		{"root", HashKey("cs_test_op"), "refuse", false, true, ""},
		{"chat-default", HashKey("cs_test_chat"), "ask_person", false, false, ""},
	}
	if len(cfg.Credentials) != len(want) {
		t.Fatalf("%d credentials, want %d", len(cfg.Credentials), len(want))
	}
	for i, w := range want {
		c := cfg.Credentials[i]
		if c.ID != w.id || c.KeyHash != w.hash || c.Choice.String() != w.choice || c.ReadOnly != w.readOnly ||
			c.Operator != w.operator || strings.Join(c.Connections, ",") != w.connections {
			t.Errorf("credential %d = %+v, want %+v", i, c, w)
		}
	}
	dump, _ := json.Marshal(cfg.Credentials)
	if s := fmt.Sprintf("%s %+v", dump, cfg.Credentials); strings.Contains(s, "cs_test_") {
		t.Errorf("a plain key is kept in the config: %s", s)
	}

	// The compiled policy.
	if names := cfg.Policy.Connections(); len(names) != 2 || names[0].Name != "billing" {
		t.Errorf("policy connections = %v", names)
	}
	tc := cfg.Policy.Connection("crm")
	if !tc.EscalateDelegated || !tc.Hooked || tc.OutOfBandOnly {
		t.Errorf("tier connection = %+v", tc)
	}
	m, ok := cfg.Policy.Resolve("crm", "DELETE", "/contacts/12")
	if !ok || m.Endpoint.Rule != "connections/crm/policy.json endpoints[1] DELETE /contacts/{id} confirm: true" ||
		m.Endpoint.OperationID != "deleteContact" || m.Endpoint.Tier != policy.Confirm {
		t.Errorf("DELETE /contacts/12 resolves to %+v", m.Endpoint)
	}
	m, _ = cfg.Policy.Resolve("crm", "GET", "/contacts/12")
	if m.Endpoint.Rule != "connections/crm/policy.json endpoints[0] GET /contacts/{id} (no confirm: auto)" {
		t.Errorf("GET rule = %q", m.Endpoint.Rule)
	}
	m, _ = cfg.Policy.Resolve("crm", "POST", "/contacts/12/archive")
	if e := m.Endpoint; e == nil || e.Tool != "archive_contact" || e.Tier != policy.Confirm || e.Recorded != policy.Review || e.Prompt != "Archive this contact?" {
		t.Errorf("archive endpoint = %+v", e)
	}
	m, _ = cfg.Policy.Resolve("crm", "POST", "/admin/purge")
	if e := m.Endpoint; e == nil || !e.OperatorOnly || !e.Hidden || e.Tier != policy.Never {
		t.Errorf("purge endpoint = %+v", e)
	}

	cred := func(id string) *policy.Credential {
		for _, c := range cfg.Credentials {
			if c.ID == id {
				return &policy.Credential{ID: c.ID, Choice: c.Choice, ReadOnly: c.ReadOnly, Connections: c.Connections}
			}
		}
		t.Fatalf("no credential %s", id)
		return nil
	}
	decisions := []struct {
		name    string
		call    policy.Call
		cred    string
		outcome policy.Outcome
		code    policy.Code
		tier    policy.Tier
	}{
		{"read auto", policy.Call{Connection: "crm", Method: "GET", Path: "/contacts/1"}, "ops-key", policy.Execute, "", policy.Auto},
		{"confirm pauses for ask_person", policy.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/1", Intent: policy.IntentWrite}, "chat-user", policy.Pause, "", policy.Confirm},
		{"confirm refused for an operator key", policy.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/1", Intent: policy.IntentWrite}, "ops-key", policy.Deny, policy.CodeRequiresConfirmation, policy.Confirm},
		{"threshold escalates", policy.Call{Connection: "crm", Method: "POST", Path: "/payments", Intent: policy.IntentWrite, Body: map[string]any{"amount": json.Number("10001")}}, "chat-user", policy.Deny, policy.CodeReviewRequired, policy.Review},
		{"review", policy.Call{Connection: "crm", Method: "POST", Path: "/accounts/1/close", Intent: policy.IntentWrite}, "chat-user", policy.Deny, policy.CodeReviewRequired, policy.Review},
		{"never", policy.Call{Connection: "crm", Method: "DELETE", Path: "/accounts/1", Intent: policy.IntentWrite}, "chat-user", policy.Deny, policy.CodeBlocked, policy.Never},
		{"requires-confirmation tool pauses", policy.Call{Connection: "crm", Method: "POST", Path: "/contacts/1/archive", Intent: policy.IntentWrite}, "chat-user", policy.Pause, "", policy.Confirm},
		{"hidden operator-gated tool", policy.Call{Connection: "crm", Method: "POST", Path: "/admin/purge", Intent: policy.IntentWrite}, "chat-user", policy.Deny, policy.CodeUnknownOperation, policy.Never},
		{"read-only", policy.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/1", Intent: policy.IntentWrite}, "reader", policy.Deny, policy.CodeReadOnly, policy.Confirm},
		{"connection limit", policy.Call{Connection: "billing", Method: "GET", Path: "/invoices/1"}, "agent", policy.Deny, policy.CodeUnknownOperation, policy.Never},
	}
	for _, d := range decisions {
		t.Run(d.name, func(t *testing.T) {
			c := d.call
			got := policy.Evaluate(cfg.Policy, policy.Input{Call: &c, Credential: cred(d.cred)})
			if got.Outcome != d.outcome || got.Code != d.code || got.Tier != d.tier {
				t.Errorf("got %s %q %s (%s: %s), want %s %q %s", got.Outcome, got.Code, got.Tier, got.Rule, got.Reason, d.outcome, d.code, d.tier)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	dir := writeConfig(t, map[string]string{"settings.json": `{}`})
	cfg, err := Load(dir, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Settings{
		Workspace: Workspace{Name: "countersign", AccentColor: "#5b21b6"},
		PublicURL: "http://127.0.0.1:8080",
		Timeouts:  Timeouts{CallSeconds: 600, ScriptSeconds: 1800, RedeemSeconds: 600},
		Limits:    Limits{CallsPerMinute: 600, PendingConfirmations: 20, PendingReviews: 100, StoredBodyBytes: 131072, ReviewRetentionDays: 7},
		Audit:     Audit{RetentionDays: 90},
		Scripts:   Scripts{TimeLimitMS: 5000, MaxCalls: 100, MaxScriptBytes: 65536, MaxResultBytes: 1 << 20, MemoryMiB: 64},
	}
	if fmt.Sprint(cfg.Settings) != fmt.Sprint(want) {
		t.Errorf("settings = %+v, want %+v", cfg.Settings, want)
	}
	if len(cfg.Credentials) != 0 || len(cfg.Connections) != 0 || cfg.Policy == nil {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.Dir != dir {
		t.Errorf("Dir = %q", cfg.Dir)
	}
}

func TestHashKey(t *testing.T) {
	if got := HashKey("test"); got != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
		t.Errorf("HashKey = %s", got)
	}
}

// edit describes a change to the base files.
type edit func(tb testing.TB, files map[string]string)

// sub replaces old with new in one file (old must occur).
func sub(file, old, new string) edit {
	return func(tb testing.TB, files map[string]string) {
		tb.Helper()
		if !strings.Contains(files[file], old) {
			tb.Fatalf("%s does not contain %q", file, old)
		}
		files[file] = strings.Replace(files[file], old, new, 1)
	}
}

func set(file, content string) edit {
	return func(_ testing.TB, files map[string]string) { files[file] = content }
}

func remove(file string) edit {
	return func(_ testing.TB, files map[string]string) { delete(files, file) }
}

const (
	settingsFile = "settings.json"
	credsFile    = "credentials.json"
	crmFile      = "connections/crm/policy.json"
	archiveFile  = "connections/crm/tools/archive.json"
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		file  string // relative to the directory
		path  string // the JSON path
		msg   string // a part of the message
		line  int    // for malformed JSON
	}{
		// Unknown fields at each level.
		{name: "unknown field in settings", edits: []edit{sub(settingsFile, `"public_url"`, `"colour": "red", "public_url"`)},
			file: settingsFile, path: "colour", msg: `unknown field "colour" (allowed: workspace, public_url, approvers, timeouts, limits, audit, scripts, mcp, sign_in, candidate_config)`},
		{name: "unknown field in scripts", edits: []edit{sub(settingsFile, `"max_calls": 20`, `"max_calls": 20, "max_depth": 5`)},
			file: settingsFile, path: "scripts.max_depth", msg: `unknown field "max_depth" (allowed: time_limit_ms, max_calls, max_script_bytes, max_result_bytes, memory_mib)`},
		{name: "unknown field in settings workspace", edits: []edit{sub(settingsFile, `"name": "Acme"`, `"name": "Acme", "logo": "x.png"`)},
			file: settingsFile, path: "workspace.logo", msg: `unknown field "logo"`},
		{name: "unknown field in a webhook", edits: []edit{sub(settingsFile, `"name": "ops"`, `"name": "ops", "retries": 3`)},
			file: settingsFile, path: "approvers.webhooks[0].retries", msg: `unknown field "retries"`},
		{name: "unknown field in timeouts", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600, "idle_seconds": 5`)},
			file: settingsFile, path: "timeouts.idle_seconds", msg: `unknown field "idle_seconds"`},
		{name: "unknown field in policy", edits: []edit{sub(crmFile, `"base_url"`, `"timeout": 5, "base_url"`)},
			file: crmFile, path: "timeout", msg: `unknown field "timeout" (allowed: base_url, headers, forward_headers, endpoints, delegations, hooks, approval, escalate)`},
		{name: "unknown field in an endpoint", edits: []edit{sub(crmFile, `"path": "/contacts/{id}"}`, `"path": "/contacts/{id}", "description": "x"}`)},
			file: crmFile, path: "endpoints[0].description", msg: `unknown field "description"`},
		{name: "unknown field in an escalate rule", edits: []edit{sub(crmFile, `"above": 10000,`, `"above": 10000, "currency": "EUR",`)},
			file: crmFile, path: "endpoints[2].escalate[0].currency", msg: `unknown field "currency" (allowed: field, above, escalate)`},
		{name: "unknown field in delegations", edits: []edit{sub(crmFile, `"escalateConfirm": true`, `"escalate_confirm": true`)},
			file: crmFile, path: "delegations.escalate_confirm", msg: `unknown field "escalate_confirm" (allowed: escalateConfirm)`},
		{name: "unknown field in a tool", edits: []edit{sub(archiveFile, `"llm_callable": true`, `"llm_callable": true, "hidden": false`)},
			file: archiveFile, path: "hidden", msg: `unknown field "hidden"`},
		{name: "unknown field in a tool's exposure", edits: []edit{sub(archiveFile, `"kind": "requires-confirmation"`, `"kind": "requires-confirmation", "level": 2`)},
			file: archiveFile, path: "exposure.level", msg: `unknown field "level" (allowed: kind, prompt)`},
		{name: "unknown field in a credential", edits: []edit{sub(credsFile, `"id": "ops-key",`, `"id": "ops-key", "email": "a@b.c",`)},
			file: credsFile, path: "[1].email", msg: `unknown field "email"`},

		// Endpoint confirm, method, path.
		{name: "confirm false is not valid", edits: []edit{sub(crmFile, `"confirm": true, "operation_id"`, `"confirm": false, "operation_id"`)},
			file: crmFile, path: "endpoints[1].confirm", msg: `false is not allowed: omit confirm for auto, or use true, "review" or "never"`},
		{name: "confirm maybe is not valid", edits: []edit{sub(crmFile, `"confirm": "review"`, `"confirm": "maybe"`)},
			file: crmFile, path: "endpoints[3].confirm", msg: `"maybe" is not allowed: omit confirm for auto`},
		{name: "confirm null is not valid", edits: []edit{sub(crmFile, `"confirm": "never"`, `"confirm": null`)},
			file: crmFile, path: "endpoints[4].confirm", msg: `null is not allowed`},
		{name: "lowercase method", edits: []edit{sub(crmFile, `"method": "GET"`, `"method": "get"`)},
			file: crmFile, path: "endpoints[0].method", msg: `"get" must be upper case ("GET")`},
		{name: "unknown method", edits: []edit{sub(crmFile, `"method": "GET"`, `"method": "FETCH"`)},
			file: crmFile, path: "endpoints[0].method", msg: `"FETCH" is not a method: use one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{name: "missing method", edits: []edit{sub(crmFile, `"method": "GET",    `, ``)},
			file: crmFile, path: "endpoints[0].method", msg: "missing"},
		{name: "template without a leading slash", edits: []edit{sub(crmFile, `"path": "/contacts/{id}"}`, `"path": "contacts/{id}"}`)},
			file: crmFile, path: "endpoints[0].path", msg: `"contacts/{id}" is not a path template: must start with "/"`},
		{name: "template with a partial parameter", edits: []edit{sub(crmFile, `"path": "/contacts/{id}"}`, `"path": "/contacts/x{id}"}`)},
			file: crmFile, path: "endpoints[0].path", msg: `neither a literal nor a whole {name}`},
		{name: "template with a repeated parameter", edits: []edit{sub(crmFile, `"path": "/contacts/{id}"}`, `"path": "/contacts/{id}/{id}"}`)},
			file: crmFile, path: "endpoints[0].path", msg: `{id} is repeated`},
		{name: "duplicate endpoints (same shape, other parameter name)", edits: []edit{sub(crmFile, `"confirm": "never"}`, `"confirm": "never"}, {"method": "GET", "path": "/contacts/{cid}"}`)},
			file: crmFile, path: "endpoints[5]", msg: `duplicate endpoint: GET /contacts/{cid} has the same method and path shape as endpoints[0] (GET /contacts/{id})`},
		{name: "duplicate operation_id", edits: []edit{sub(crmFile, `"confirm": "never"}`, `"confirm": "never", "operation_id": "deleteContact"}`)},
			file: crmFile, path: "endpoints[4].operation_id", msg: `"deleteContact" is already the operation_id of endpoints[1]`},

		// Escalation rules.
		{name: "escalation without a number", edits: []edit{sub(crmFile, `"above": 10000, `, ``)},
			file: crmFile, path: "endpoints[2].escalate[0].above", msg: "escalation rule without a number: above is required"},
		{name: "escalation with a string number", edits: []edit{sub(crmFile, `"above": 10000`, `"above": "10000"`)},
			file: crmFile, path: "endpoints[2].escalate[0].above", msg: "escalation rule without a number: above must be a JSON number, not a string"},
		{name: "escalation field without a source", edits: []edit{sub(crmFile, `"field": "body.amount"`, `"field": "amount"`)},
			file: crmFile, path: "endpoints[2].escalate[0].field", msg: `"amount" is not a field: use body.<json path>, query.<name> or path.<param>`},
		{name: "escalation field with an empty body path", edits: []edit{sub(crmFile, `"field": "body.amount"`, `"field": "body."`)},
			file: crmFile, path: "endpoints[2].escalate[0].field", msg: `"body." is not a field`},
		{name: "escalation on a path parameter the template lacks", edits: []edit{sub(crmFile, `"field": "body.amount"`, `"field": "path.id"`)},
			file: crmFile, path: "endpoints[2].escalate[0].field", msg: `"path.id" names no parameter of the endpoint's path (it has none)`},
		{name: "escalation to confirm", edits: []edit{sub(crmFile, `"escalate": "review"`, `"escalate": "confirm"`)},
			file: crmFile, path: "endpoints[2].escalate[0].escalate", msg: `"confirm" is not allowed: escalation only raises, to "review" or "never"`},

		// Tools.
		{name: "tool with the shape of an endpoint", edits: []edit{sub(archiveFile, `"/contacts/{id}/archive"`, `"/accounts/{acct}/close"`)},
			file: archiveFile, path: "call", msg: `duplicate endpoint: POST /accounts/{acct}/close has the same method and path shape as endpoints[3] (POST /accounts/{id}/close) in connections/crm/policy.json`},
		{name: "two tools with the same name", edits: []edit{set("connections/crm/tools/zz.json", `{"name": "archive_contact", "call": {"method": "POST", "path": "/x"}}`)},
			file: "connections/crm/tools/zz.json", path: "name", msg: `"archive_contact" is already the name of the tool in connections/crm/tools/archive.json`},
		{name: "tool with an unknown exposure kind", edits: []edit{sub(archiveFile, `"requires-confirmation"`, `"review"`)},
			file: archiveFile, path: "exposure.kind", msg: `"review" is not allowed: use "open" (the default), "requires-confirmation" or "operator-gated"`},
		{name: "tool without a name", edits: []edit{sub(archiveFile, `"name": "archive_contact", `, ``)},
			file: archiveFile, path: "name", msg: "missing"},
		{name: "tool with a lowercase method", edits: []edit{sub(archiveFile, `"method": "POST"`, `"method": "post"`)},
			file: archiveFile, path: "call.method", msg: `"post" must be upper case`},
		{name: "tool with llm_callable not a boolean", edits: []edit{sub(archiveFile, `"llm_callable": true`, `"llm_callable": "yes"`)},
			file: archiveFile, path: "llm_callable", msg: "want true or false, got a string"},

		// Credentials.
		{name: "credential without a key", edits: []edit{sub(credsFile, `"key": "cs_test_ask",   `, ``)},
			file: credsFile, path: "[0].key", msg: "credential without a key"},
		{name: "credential with both key forms", edits: []edit{sub(credsFile, `"key": "cs_test_ask",`, `"key": "cs_test_ask", "key_sha256": "`+HashKey("x")+`",`)},
			file: credsFile, path: "[0].key", msg: "exactly one of key (plain, hashed at load) or key_sha256, not both"},
		{name: "credential with a bad key_sha256", edits: []edit{sub(credsFile, `"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"`, `"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"`)},
			file: credsFile, path: "[1].key_sha256", msg: "want 64 lowercase hex digits"},
		{name: "credential with an unknown choice", edits: []edit{sub(credsFile, `"choice": "ask_person"`, `"choice": "maybe"`)},
			file: credsFile, path: "[0].choice", msg: `"maybe" is not a choice: use refuse, ask_person, ask_agent or run_without_asking`},
		{name: "credential with an unknown origin", edits: []edit{sub(credsFile, `"origin": "operator"`, `"origin": "wizard"`)},
			file: credsFile, path: "[1].origin", msg: `"wizard" is not an origin: use "operator" (the default) or "chat"`},
		{name: "credential naming an unknown connection", edits: []edit{sub(credsFile, `"connections": ["crm"]`, `"connections": ["crm", "erp"]`)},
			file: credsFile, path: "[3].connections[1]", msg: `"erp" is not a connection: use the name of a folder under connections/ (known: billing, crm)`},
		{name: "credential with an unknown role", edits: []edit{sub(credsFile, `"role": "operator"`, `"role": "admin"`)},
			file: credsFile, path: "[4].role", msg: `"admin" is not a role: the only role is "operator"`},
		{name: "two credentials with the same key", edits: []edit{sub(credsFile, `"cs_test_ro"`, `"cs_test_ask"`)},
			file: credsFile, path: "[2].key", msg: "same key as [0]"},
		{name: "two credentials with the same id", edits: []edit{sub(credsFile, `"id": "reader"`, `"id": "agent"`)},
			file: credsFile, path: "[3].id", msg: `"agent" is already the id of [2]`},
		{name: "credentials not an array", edits: []edit{set(credsFile, `{"id": "x"}`)},
			file: credsFile, path: "", msg: "want a JSON array, got an object"},

		// Settings.
		{name: "a key twice after a number the strict reader refuses", edits: []edit{sub(settingsFile, `"console": true`, `"console": 99999999999999999999, "console": true`)},
			file: settingsFile, path: "approvers", msg: `duplicate key: "console" appears twice`},
		{name: "bad webhook format", edits: []edit{sub(settingsFile, `"format": "json"`, `"format": "xml"`)},
			file: settingsFile, path: "approvers.webhooks[0].format", msg: `"xml" is not a webhook format: use "json" (the default) or "slack"`},
		{name: "webhook without a secret", edits: []edit{sub(settingsFile, `, "secret": "whsec_test"`, ``)},
			file: settingsFile, path: "approvers.webhooks[0].secret", msg: "missing: every webhook needs a secret"},
		{name: "webhook named console", edits: []edit{sub(settingsFile, `"name": "ops"`, `"name": "console"`)},
			file: settingsFile, path: "approvers.webhooks[0].name", msg: `"console" is reserved`},
		{name: "webhook names are unique", edits: []edit{sub(settingsFile, `"secret": "whsec_test"}`, `"secret": "whsec_test"}, {"name": "ops", "url": "https://x.example/h", "secret": "s"}`)},
			file: settingsFile, path: "approvers.webhooks[1].name", msg: `"ops" is already the name of approvers.webhooks[0]`},
		{name: "bad accent colour", edits: []edit{sub(settingsFile, `"#5b21b6"`, `"purple"`)},
			file: settingsFile, path: "workspace.accent_color", msg: `"purple" is not a colour: use #rgb or #rrggbb`},
		{name: "relative public_url", edits: []edit{sub(settingsFile, `"http://127.0.0.1:8080/"`, `"/gateway"`)},
			file: settingsFile, path: "public_url", msg: `"/gateway" is not an absolute http:// or https:// URL`},
		{name: "timeout above its default", edits: []edit{sub(settingsFile, `"script_seconds": 1800`, `"script_seconds": 3600`)},
			file: settingsFile, path: "timeouts.script_seconds", msg: "3600 is out of range: use a whole number of seconds from 1 to 1800"},
		{name: "timeout of zero", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 0`)},
			file: settingsFile, path: "timeouts.call_seconds", msg: "0 is out of range"},
		{name: "limit out of range", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "limits": {"stored_body_bytes": 1048576`)},
			file: settingsFile, path: "limits.stored_body_bytes", msg: "1048576 is out of range: use a whole number from 1 to 262144 (omit it for 131072)"},
		{name: "limit of zero", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "limits": {"calls_per_minute": 0`)},
			file: settingsFile, path: "limits.calls_per_minute", msg: "0 is out of range"},
		{name: "unknown limit", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "limits": {"calls_per_hour": 5`)},
			file: settingsFile, path: "limits.calls_per_hour", msg: `unknown field "calls_per_hour"`},
		{name: "limit as a string", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "limits": {"pending_reviews": "10"`)},
			file: settingsFile, path: "limits.pending_reviews", msg: "want"},
		{name: "unknown audit field", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "audit": {"auto_reads": true`)},
			file: settingsFile, path: "audit.auto_reads", msg: `unknown field "auto_reads" (allowed: auto_calls, retention_days)`},
		{name: "audit retention of zero days", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "audit": {"retention_days": 0`)},
			file: settingsFile, path: "audit.retention_days", msg: "0 is out of range: use a whole number of days from 1 to 3650"},
		{name: "audit retention above its range", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "audit": {"retention_days": 4000`)},
			file: settingsFile, path: "audit.retention_days", msg: "4000 is out of range"},
		{name: "audit retention as a string", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "audit": {"retention_days": "30"`)},
			file: settingsFile, path: "audit.retention_days", msg: "want"},
		{name: "audit flag as a string", edits: []edit{sub(settingsFile, `"call_seconds": 600`, `"call_seconds": 600}, "audit": {"auto_calls": "yes"`)},
			file: settingsFile, path: "audit.auto_calls", msg: "want"},
		{name: "script time limit above its range", edits: []edit{sub(settingsFile, `"time_limit_ms": 2500`, `"time_limit_ms": 60000`)},
			file: settingsFile, path: "scripts.time_limit_ms", msg: "60000 is out of range: use a whole number of milliseconds from 10 to 20000 (omit it for 5000)"},
		{name: "script call limit of zero", edits: []edit{sub(settingsFile, `"max_calls": 20`, `"max_calls": 0`)},
			file: settingsFile, path: "scripts.max_calls", msg: "0 is out of range: use a whole number of calls from 1 to 1000 (omit it for 100)"},
		{name: "script size not a number", edits: []edit{sub(settingsFile, `"max_script_bytes": 4096`, `"max_script_bytes": "64k"`)},
			file: settingsFile, path: "scripts.max_script_bytes", msg: "want a whole number, got a string"},
		{name: "script result size fractional", edits: []edit{sub(settingsFile, `"max_result_bytes": 65536`, `"max_result_bytes": 1.5`)},
			file: settingsFile, path: "scripts.max_result_bytes", msg: "want a whole number, got 1.5"},
		{name: "script memory too small", edits: []edit{sub(settingsFile, `"memory_mib": 32`, `"memory_mib": 1`)},
			file: settingsFile, path: "scripts.memory_mib", msg: "1 is out of range: use a whole number of MiB from 8 to 1024"},
		{name: "scripts not an object", edits: []edit{sub(settingsFile, `"scripts": {"time_limit_ms": 2500, "max_calls": 20, "max_script_bytes": 4096, "max_result_bytes": 65536, "memory_mib": 32}`, `"scripts": 5`)},
			file: settingsFile, path: "scripts", msg: "want a JSON object, got a number"},
		{name: "missing settings.json", edits: []edit{remove(settingsFile)},
			file: settingsFile, path: "", msg: "missing: the configuration directory needs a settings.json"},
		{name: "malformed JSON reports line:column", edits: []edit{set(settingsFile, "{\n  \"public_url\": \"http://x\",\n}\n")},
			file: settingsFile, path: "", msg: "malformed JSON: invalid character '}'", line: 3},

		// Connections.
		{name: "unset environment variable in headers", edits: []edit{sub(crmFile, `${env:CRM_TOKEN}`, `${env:CRM_SECRET}`)},
			file: crmFile, path: "headers.Authorization", msg: "environment variable CRM_SECRET is not set"},
		{name: "unsupported substitution in headers", edits: []edit{sub(crmFile, `${env:CRM_TOKEN}`, `${CRM_TOKEN}`)},
			file: crmFile, path: "headers.Authorization", msg: `"${CRM_TOKEN}" is not supported: the substitutions are ${env:NAME} and ${secretsmanager:NAME}`},
		{name: "connection folder without policy.json", edits: []edit{set("connections/erp/tools/a.json", `{}`)},
			file: "connections/erp/policy.json", path: "", msg: "missing: each connection folder needs a policy.json"},
		{name: "connection name not allowed", edits: []edit{set("connections/CRM2/policy.json", billingJSON)},
			file: "connections/CRM2", path: "", msg: `"CRM2" is not a valid connection name`},
		{name: "missing base_url", edits: []edit{sub(crmFile, `"base_url": "http://127.0.0.1:9100",`, ``)},
			file: crmFile, path: "base_url", msg: "missing"},
		{name: "hook url not absolute", edits: []edit{sub(crmFile, `"http://127.0.0.1:9200/hook"`, `"127.0.0.1:9200/hook"`)},
			file: crmFile, path: "hooks[0].url", msg: "is not an absolute http:// or https:// URL"},
		{name: "out_of_band_only not a boolean", edits: []edit{sub(crmFile, `"out_of_band_only": false`, `"out_of_band_only": "no"`)},
			file: crmFile, path: "approval.out_of_band_only", msg: "want true or false, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := baseFiles()
			for _, e := range tt.edits {
				e(t, files)
			}
			dir := writeConfig(t, files)
			cfg, err := Load(dir, testEnv)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want an error", cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a config with an error")
			}
			file := filepath.Join(dir, filepath.FromSlash(tt.file))
			text := err.Error()
			for _, want := range []string{file, tt.path, tt.msg} {
				if !strings.Contains(text, want) {
					t.Errorf("error does not contain %q:\n%s", want, text)
				}
			}
			// One of the joined errors is exactly this *Error.
			var found bool
			for _, e := range unwrap(err) {
				var pe *Error
				if errors.As(e, &pe) && pe.File == file && pe.Path == tt.path && strings.Contains(pe.Msg, tt.msg) {
					found = true
					if tt.line > 0 && (pe.Line != tt.line || !strings.Contains(pe.Error(), fmt.Sprintf(":%d:%d:", pe.Line, pe.Column))) {
						t.Errorf("line:column = %d:%d in %q, want line %d", pe.Line, pe.Column, pe.Error(), tt.line)
					}
				}
			}
			if !found {
				t.Errorf("no *Error{File: %q, Path: %q, Msg: ~%q} in:\n%s", file, tt.path, tt.msg, text)
			}
		})
	}
}

func unwrap(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestLoadCollectsEveryProblem(t *testing.T) {
	files := baseFiles()
	sub(settingsFile, `"format": "json"`, `"format": "xml"`)(t, files)
	sub(crmFile, `"confirm": true, "operation_id"`, `"confirm": false, "operation_id"`)(t, files)
	sub(crmFile, `"method": "GET"`, `"method": "get"`)(t, files)
	sub(credsFile, `"choice": "ask_person"`, `"choice": "maybe"`)(t, files)
	_, err := Load(writeConfig(t, files), testEnv)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	errs := unwrap(err)
	if len(errs) != 4 {
		t.Fatalf("%d problems, want 4:\n%v", len(errs), err)
	}
	for _, e := range errs {
		var pe *Error
		if !errors.As(e, &pe) {
			t.Errorf("%T is not a *policy.Error", e)
		}
	}
}

func TestLoadUsesOSEnvByDefault(t *testing.T) {
	t.Setenv("CRM_TOKEN", "from_env")
	cfg, err := Load(writeConfig(t, baseFiles()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Connections["crm"].Headers["Authorization"]; got != "Bearer from_env" {
		t.Errorf("Authorization = %q", got)
	}
	if _, err := url.Parse(cfg.Settings.PublicURL); err != nil {
		t.Error(err)
	}
}

// audit.retention_days sets how long denials and auto-tier calls stay on
// the trail.
func TestLoadAuditRetention(t *testing.T) {
	dir := writeConfig(t, map[string]string{"settings.json": `{"audit": {"auto_calls": true, "retention_days": 30}}`})
	cfg, err := Load(dir, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if a := cfg.Settings.Audit; !a.AutoCalls || a.RetentionDays != 30 || a.Retention().Hours() != 30*24 {
		t.Fatalf("audit settings %+v", a)
	}
}
