package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

func TestToolName(t *testing.T) {
	tests := []struct {
		name string
		ep   policy.Endpoint
		want string
	}{
		{"path parameter", policy.Endpoint{Method: "GET", Path: "/contacts/{id}"}, "get_contacts_by_id"},
		{"no parameter", policy.Endpoint{Method: "POST", Path: "/payments"}, "post_payments"},
		{"parameter in the middle", policy.Endpoint{Method: "POST", Path: "/accounts/{id}/close"}, "post_accounts_by_id_close"},
		{"root", policy.Endpoint{Method: "GET", Path: "/"}, "get"},
		{"trailing slash", policy.Endpoint{Method: "GET", Path: "/contacts/"}, "get_contacts"},
		{"characters outside the set", policy.Endpoint{Method: "GET", Path: "/files/{id}/v1.2~x"}, "get_files_by_id_v1_2_x"},
		{"hyphen kept", policy.Endpoint{Method: "DELETE", Path: "/api-keys/{key_id}"}, "delete_api-keys_by_key_id"},
		{"operation_id wins", policy.Endpoint{Method: "DELETE", Path: "/contacts/{id}", OperationID: "deleteContact"}, "deleteContact"},
		{"operation_id sanitized", policy.Endpoint{Method: "DELETE", Path: "/contacts/{id}", OperationID: "contacts.delete"}, "contacts_delete"},
		{"custom tool wins", policy.Endpoint{Method: "POST", Path: "/contacts/{id}/archive", OperationID: "x", Tool: "archive_contact"}, "archive_contact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolName(&tt.ep); got != tt.want {
				t.Errorf("ToolName = %q, want %q", got, tt.want)
			}
		})
	}
	if got := PrefixedToolName("crm", "get_contacts_by_id"); got != "crm__get_contacts_by_id" {
		t.Errorf("PrefixedToolName = %q", got)
	}
}

func TestLoadToolNameErrors(t *testing.T) {
	long := strings.Repeat("x", 60)
	tests := []struct {
		name  string
		edits []edit
		file  string
		path  string
		msg   string
	}{
		{name: "operation_id names a custom tool",
			edits: []edit{sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "archive_contact"`)},
			file:  archiveFile, path: "name", msg: `the MCP tool name "archive_contact" (from POST /contacts/{id}/archive) is already the name of connections/crm/policy.json endpoints[1]`},
		{name: "two derived names clash",
			edits: []edit{sub(crmFile, `{"method": "GET",    "path": "/contacts/{id}"},`, `{"method": "GET", "path": "/contacts/{id}"}, {"method": "GET", "path": "/contacts/by_id"},`)},
			file:  crmFile, path: "endpoints[1]", msg: `the MCP tool name "get_contacts_by_id" (from GET /contacts/by_id) is already the name of connections/crm/policy.json endpoints[0]`},
		{name: "sanitized names clash",
			edits: []edit{set("connections/billing/policy.json", `{"base_url": "http://127.0.0.1:9", "endpoints": [
  {"method": "GET", "path": "/a.b"}, {"method": "GET", "path": "/a_b"}]}`)},
			file: "connections/billing/policy.json", path: "endpoints[1]", msg: `"get_a_b" (from GET /a_b) is already the name of`},
		{name: "name too long",
			edits: []edit{sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "`+long+long+`"`)},
			file:  crmFile, path: "endpoints[1]", msg: "is 120 characters, more than 64: give the endpoint a shorter operation_id"},
		{name: "prefixed name too long",
			edits: []edit{sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "`+long+`"`)},
			file:  crmFile, path: "endpoints[1]", msg: `with more than one connection the MCP tool is named "crm__` + long + `"`},
		{name: "prefixed names clash across connections",
			edits: []edit{
				sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "a__b"`),
				set("connections/crm__a/policy.json", `{"base_url": "http://127.0.0.1:9", "endpoints": [{"method": "GET", "path": "/x", "operation_id": "b"}]}`),
			},
			file: "connections/crm__a/policy.json", path: "endpoints[0]", msg: `the MCP tool name "crm__a__b" (from GET /x) is already the name of connections/crm/policy.json endpoints[1] in another connection`},
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
			file := filepath.Join(dir, filepath.FromSlash(tt.file))
			var found bool
			for _, e := range unwrap(err) {
				var pe *Error
				if errors.As(e, &pe) && pe.File == file && pe.Path == tt.path && strings.Contains(pe.Msg, tt.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no *Error{File: %q, Path: %q, Msg: ~%q} in:\n%v", file, tt.path, tt.msg, err)
			}
		})
	}
}

func TestLoadReservedToolName(t *testing.T) {
	files := baseFiles()
	remove("connections/billing/policy.json")(t, files)
	sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "review_pending"`)(t, files)
	dir := writeConfig(t, files)
	_, err := Load(dir, testEnv)
	if err == nil || !strings.Contains(err.Error(), `the MCP tool name "review_pending" (from DELETE /contacts/{id}) is one of the MCP surface's own tools`) {
		t.Fatalf("Load = %v, want the reserved name refused", err)
	}
	// With several connections the name is prefixed (crm__review_pending) and loads.
	files = baseFiles()
	sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "review_pending"`)(t, files)
	if _, err := Load(writeConfig(t, files), testEnv); err != nil {
		t.Errorf("Load with two connections: %v", err)
	}
}

func TestLoadOneConnectionNamesUnprefixed(t *testing.T) {
	// With a single connection no tool is ever prefixed, so a long name
	// that would not fit with the prefix still loads.
	files := baseFiles()
	remove("connections/billing/policy.json")(t, files)
	sub(crmFile, `"operation_id": "deleteContact"`, `"operation_id": "`+strings.Repeat("x", 62)+`"`)(t, files)
	if _, err := Load(writeConfig(t, files), testEnv); err != nil {
		t.Fatalf("Load: %v", err)
	}
}
