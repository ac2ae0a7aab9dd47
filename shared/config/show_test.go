package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

// deleteShow is the crm policy's DELETE endpoint with a show read.
func deleteShow(show string) edit {
	return sub(crmFile, `"confirm": true, "operation_id": "deleteContact"}`, `"confirm": true, "operation_id": "deleteContact", "show": `+show+`}`)
}

func TestLoadShow(t *testing.T) {
	files := baseFiles()
	deleteShow(`{"path": "/contacts/{id}"}`)(t, files)
	sub(crmFile, `{"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"}`,
		`{"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review", "show": {"path": "/contacts/{id}", "recheck": false}}`)(t, files)
	cfg, err := Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	shows := map[string]*policy.Show{}
	for _, ep := range cfg.Policy.Connection("crm").Endpoints {
		shows[ep.Method+" "+ep.Path] = ep.Show
	}
	if got := shows["DELETE /contacts/{id}"]; got == nil || got.Path != "/contacts/{id}" || !got.Recheck {
		t.Errorf("DELETE show = %+v, want /contacts/{id} with recheck (the default)", got)
	}
	if got := shows["POST /accounts/{id}/close"]; got == nil || got.Recheck {
		t.Errorf("POST show = %+v, want recheck false", got)
	}
	if got := shows["GET /contacts/{id}"]; got != nil {
		t.Errorf("GET has show %+v, want none", got)
	}
}

func TestLoadShowErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		path  string
		msg   string
	}{
		{name: "not an object", edits: []edit{deleteShow(`"/contacts/{id}"`)},
			path: "endpoints[1].show", msg: "want a JSON object, got a string"},
		{name: "unknown field", edits: []edit{deleteShow(`{"path": "/contacts/{id}", "method": "GET"}`)},
			path: "endpoints[1].show.method", msg: `unknown field "method" (allowed: path, recheck)`},
		{name: "no path", edits: []edit{deleteShow(`{"recheck": true}`)},
			path: "endpoints[1].show.path", msg: "missing: the path of an auto-tier GET"},
		{name: "not a template", edits: []edit{deleteShow(`{"path": "contacts/{id}"}`)},
			path: "endpoints[1].show.path", msg: "is not a path template"},
		{name: "recheck not a boolean", edits: []edit{deleteShow(`{"path": "/contacts/{id}", "recheck": "no"}`)},
			path: "endpoints[1].show.recheck", msg: "want true or false, got a string"},
		{name: "a parameter the endpoint lacks", edits: []edit{deleteShow(`{"path": "/contacts/{contact}"}`)},
			path: "endpoints[1].show.path", msg: "{contact} is not a parameter of the endpoint's path (its parameters: id)"},
		{name: "a parameter where the endpoint has none", edits: []edit{
			sub(crmFile, `"path": "/payments", "confirm": true,`, `"path": "/payments", "confirm": true, "show": {"path": "/contacts/{id}"},`)},
			path: "endpoints[2].show.path", msg: "{id} is not a parameter of the endpoint's path (it has none)"},
		{name: "no such GET", edits: []edit{deleteShow(`{"path": "/people/{id}"}`)},
			path: "endpoints[1].show.path", msg: `"/people/{id}" matches no GET endpoint of connection "crm"`},
		{name: "a GET that asks", edits: []edit{deleteShow(`{"path": "/contacts/{id}"}`),
			sub(crmFile, `{"method": "GET",    "path": "/contacts/{id}"}`, `{"method": "GET",    "path": "/contacts/{id}", "confirm": true}`)},
			path: "endpoints[1].show.path", msg: "which is not auto tier"},
		{name: "a GET that escalates", edits: []edit{deleteShow(`{"path": "/contacts/{id}"}`),
			sub(crmFile, `{"method": "GET",    "path": "/contacts/{id}"}`,
				`{"method": "GET",    "path": "/contacts/{id}", "escalate": [{"field": "path.id", "above": 5, "escalate": "review"}]}`)},
			path: "endpoints[1].show.path", msg: "which is not auto tier"},
		{name: "a write is not a read", edits: []edit{deleteShow(`{"path": "/accounts/{id}"}`)},
			path: "endpoints[1].show.path", msg: `"/accounts/{id}" matches no GET endpoint`},
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
			file := filepath.Join(dir, filepath.FromSlash(crmFile))
			found := false
			for _, e := range unwrap(err) {
				var pe *Error
				if errors.As(e, &pe) && pe.File == file && pe.Path == tt.path && strings.Contains(pe.Msg, tt.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no *Error{File: %q, Path: %q, Msg: ~%q} in:\n%s", file, tt.path, tt.msg, err)
			}
		})
	}
}
