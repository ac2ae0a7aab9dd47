package stack

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/mcpapi"
)

// reconfigure writes files into the running stack's configuration
// directory, loads it and puts it in force, as a deployment does when it
// re-reads its configuration (awsenv: App.Apply).
func (h *harness) reconfigure(files map[string]string) {
	h.t.Helper()
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(h.configDir, rel), []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	cfg, err := config.Load(h.configDir, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.stack.app.Apply(app.Live{Config: cfg})
}

// TestCodeModeObeysTheLiveConfiguration: code mode reads the configuration
// in force for every run, on both surfaces: a connection made
// out_of_band_only while the stack runs has its calls collected for its
// approvers on the next run (before, a client that can ask nobody was
// denied them), and new script limits bound the next run, over POST
// /v1/scripts and MCP run_script alike; run_script's description says the
// limits in force.
func TestCodeModeObeysTheLiveConfiguration(t *testing.T) {
	vault := func(outOfBand bool) string {
		approval := ""
		if outOfBand {
			approval = `, "approval": {"out_of_band_only": true}`
		}
		return `{"base_url": "%UPSTREAM%", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]` + approval + `}`
	}
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/vault/policy.json": vault(false)}})
	plain := h.mcpSession("cs_test_ask", clientKind{name: "Plain Client"}, nil)
	const del = "const v = call('vault', 'DELETE', '/contacts/7'); ({v})"

	// The start-up configuration: a client that can ask nobody is denied the call.
	r := runScript(t, plain, del, "", nil)
	if sc := structured(t, r); !r.IsError || sc["code"] != "requires_confirmation" || sc["confirmation_id"] != nil {
		t.Fatalf("before: %q %v", text(r), sc)
	}

	// The vault's approvals now come only from its approvers.
	h.reconfigure(map[string]string{"connections/vault/policy.json": strings.ReplaceAll(vault(true), "%UPSTREAM%", h.stack.Config.Connections["crm"].BaseURL)})
	r = runScript(t, plain, del, "", nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if r.IsError || id == "" || !strings.Contains(text(r), "only from their approvers") {
		t.Fatalf("after out_of_band_only: %q", text(r))
	}
	if h.upstream.Count("DELETE", "/contacts/7") != 0 {
		t.Fatal("the vault delete ran before approval")
	}

	// Limits: three calls pass the start-up limit of 100 and fail the new one of 2.
	const three = "for (let i = 1; i <= 3; i++) call('crm', 'GET', '/contacts/' + i); 'done'"
	expect(t, h.script("cs_test_run", three, ""), http.StatusOK, "")
	if r := runScript(t, plain, three, "", nil); r.IsError {
		t.Fatalf("three calls before: %q", text(r))
	}
	settings, err := os.ReadFile(filepath.Join(h.configDir, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	tightened := strings.Replace(string(settings), `"timeouts":`, `"scripts": {"max_calls": 2, "time_limit_ms": 3000}, "timeouts":`, 1)
	h.reconfigure(map[string]string{"settings.json": tightened})
	res := h.script("cs_test_run", three, "")
	expect(t, res, http.StatusUnprocessableEntity, "script_limit_exceeded")
	if !strings.Contains(string(res.body), "more than 2 times (scripts.max_calls)") {
		t.Errorf("POST /v1/scripts: %s", res.body)
	}
	r = runScript(t, plain, three, "", nil)
	if sc := structured(t, r); !r.IsError || sc["code"] != "script_limit_exceeded" || !strings.Contains(text(r), "more than 2 times") {
		t.Errorf("run_script: %q %v", text(r), sc)
	}
	fresh := h.mcpSession("cs_test_ask", clientKind{name: "Plain Client"}, nil)
	if d := listTools(t, fresh)[mcpapi.ToolRunScript].Description; !strings.Contains(d, "3000 ms, 2 calls") {
		t.Errorf("run_script's description does not say the limits in force: %s", d)
	}
}
