package mcpclients

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
)

// scenario says what a conformance scenario means for countersign: it
// applies (every check must pass, except the few named in fixtures), or it
// does not and why. A scenario the suite runs that no table names fails the
// test: a new suite version's scenarios get classified, never ignored.
type scenario struct {
	// notApplicable, when set, is why the scenario does not apply.
	notApplicable string
	// fixtures are checks of an applicable scenario that call a diagnostic
	// tool or prompt only the suite's reference server has (check id →
	// what it needs). They may fail or warn only for that reason: their
	// message must say so (fixtureMissing).
	fixtures map[string]string
	// accepted are warnings that are countersign's design (check id → why).
	accepted map[string]string
}

// Reasons shared by the tables below.
const (
	fixtureTools   = "calls the reference server's fixture tools (test_simple_text, test_image_content, ...); countersign lists one tool per configured operation, never these"
	fixturePrompts = "gets the reference server's fixture prompts (test_simple_prompt, ...); countersign serves no prompts"
	fixtureRes     = "reads the reference server's fixture resources (test://static-text, ...); countersign serves no resources"
	noCompletion   = "calls completion/complete; countersign declares no completions capability (it has no prompt or resource arguments to complete)"
	noSubscribe    = "calls resources/subscribe; countersign serves no resources and declares no resources.subscribe"
	fixtureIRR     = "calls the reference server's input-required fixture tool (test_input_required_result_*); countersign's own multi round-trip flow is asserted in infra/local/stack (TestMCPElicitation)"
	tasksExtension = "the tasks extension (io.modelcontextprotocol/tasks, not scored for 2026-07-28): countersign declares it but makes a task only for a call that waits for its approvers, and the scenario calls fixture tools (slow_compute, greet, ...); the same rules are asserted in infra/local/stack (TestMCPTask*) and with Claude Code (TestClaudeCodeTask)"
	noXMCPHeader   = "pending in the suite; needs a tool with x-mcp-header annotations, which countersign's tools do not have"
	fixture2020    = "pending in the suite; needs the reference server's json_schema_2020_12_tool"
	stateless      = "countersign is stateless by design (no Mcp-Session-Id); the suite warns that it cannot test several streams of one session"
)

// conformance020 classifies every server scenario of conformance
// 0.2.0-alpha.12 run with --requirements 2026-07-28.
var conformance020 = map[string]scenario{
	"server-stateless": {fixtures: map[string]string{
		"sep-2575-server-rejects-undeclared-capability":          "the diagnostic tool test_missing_capability",
		"sep-2575-missing-capability-http-400":                   "the diagnostic tool test_missing_capability",
		"sep-2575-http-server-no-independent-requests-on-stream": "the diagnostic tool test_streaming_elicitation",
		"sep-2575-server-no-log-without-loglevel":                "the diagnostic tool test_logging_tool",
	}},
	"dns-rebinding-protection":                  {},
	"tools-list":                                {},
	"server-sse-multiple-streams":               {},
	"resources-list":                            {},
	"sep-2164-resource-not-found":               {},
	"prompts-list":                              {},
	"caching":                                   {},
	"http-header-validation":                    {},
	"input-required-result-unsupported-methods": {},
	"input-required-result-validate-input":      {},
	"input-required-result-missing-input-response": {fixtures: map[string]string{
		"sep-2322-missing-response-rerequests": "the fixture tool test_input_required_result_elicitation",
	}},
	"input-required-result-ignore-extra-params": {fixtures: map[string]string{
		"sep-2322-ignore-unexpected-params": "the fixture tool test_input_required_result_elicitation",
	}},

	"completion-complete":                           {notApplicable: noCompletion},
	"tools-call-simple-text":                        {notApplicable: fixtureTools},
	"tools-call-image":                              {notApplicable: fixtureTools},
	"tools-call-audio":                              {notApplicable: fixtureTools},
	"tools-call-embedded-resource":                  {notApplicable: fixtureTools},
	"tools-call-mixed-content":                      {notApplicable: fixtureTools},
	"tools-call-error":                              {notApplicable: fixtureTools},
	"tools-call-with-progress":                      {notApplicable: fixtureTools},
	"resources-read-text":                           {notApplicable: fixtureRes},
	"resources-read-binary":                         {notApplicable: fixtureRes},
	"resources-templates-read":                      {notApplicable: fixtureRes},
	"prompts-get-simple":                            {notApplicable: fixturePrompts},
	"prompts-get-with-args":                         {notApplicable: fixturePrompts},
	"prompts-get-embedded-resource":                 {notApplicable: fixturePrompts},
	"prompts-get-with-image":                        {notApplicable: fixturePrompts},
	"input-required-result-basic-elicitation":       {notApplicable: fixtureIRR},
	"input-required-result-basic-sampling":          {notApplicable: fixtureIRR},
	"input-required-result-basic-list-roots":        {notApplicable: fixtureIRR},
	"input-required-result-request-state":           {notApplicable: fixtureIRR},
	"input-required-result-multiple-input-requests": {notApplicable: fixtureIRR},
	"input-required-result-multi-round":             {notApplicable: fixtureIRR},
	"input-required-result-non-tool-request":        {notApplicable: fixtureIRR},
	"input-required-result-result-type":             {notApplicable: fixtureIRR},
	"input-required-result-tampered-state":          {notApplicable: fixtureIRR + " (tampered states: TestMCPElicitation)"},
	"input-required-result-capability-check":        {notApplicable: fixtureIRR},
	"tasks-lifecycle":                               {notApplicable: tasksExtension},
	"tasks-capability-negotiation":                  {notApplicable: tasksExtension},
	"tasks-wire-fields":                             {notApplicable: tasksExtension},
	"tasks-request-state-removal":                   {notApplicable: tasksExtension},
	"tasks-mrtr-input":                              {notApplicable: tasksExtension},
	"tasks-request-headers":                         {notApplicable: tasksExtension},
	"tasks-dispatch-and-envelope":                   {notApplicable: tasksExtension},
	"tasks-status-notifications":                    {notApplicable: tasksExtension},
	"tasks-required-task-error":                     {notApplicable: tasksExtension},
	"tasks-mrtr-composition":                        {notApplicable: tasksExtension},
	"json-schema-2020-12":                           {notApplicable: fixture2020},
	"http-custom-header-server-validation":          {notApplicable: noXMCPHeader},
}

// conformance0116 classifies every server scenario of conformance 0.1.16
// (its default active suite: protocol 2025-06-18 and 2025-11-25).
var conformance0116 = map[string]scenario{
	"server-initialize":           {},
	"logging-set-level":           {},
	"ping":                        {},
	"tools-list":                  {},
	"resources-list":              {},
	"prompts-list":                {},
	"dns-rebinding-protection":    {},
	"server-sse-multiple-streams": {accepted: map[string]string{"server-sse-multiple-streams-session": stateless}},

	"completion-complete":           {notApplicable: noCompletion},
	"tools-call-simple-text":        {notApplicable: fixtureTools},
	"tools-call-image":              {notApplicable: fixtureTools},
	"tools-call-audio":              {notApplicable: fixtureTools},
	"tools-call-embedded-resource":  {notApplicable: fixtureTools},
	"tools-call-mixed-content":      {notApplicable: fixtureTools},
	"tools-call-with-logging":       {notApplicable: fixtureTools},
	"tools-call-error":              {notApplicable: fixtureTools},
	"tools-call-with-progress":      {notApplicable: fixtureTools},
	"tools-call-sampling":           {notApplicable: fixtureTools},
	"tools-call-elicitation":        {notApplicable: fixtureTools + " (countersign's elicitation: TestSDKv1Elicitation)"},
	"elicitation-sep1034-defaults":  {notApplicable: fixtureTools},
	"elicitation-sep1330-enums":     {notApplicable: fixtureTools},
	"resources-read-text":           {notApplicable: fixtureRes},
	"resources-read-binary":         {notApplicable: fixtureRes},
	"resources-templates-read":      {notApplicable: fixtureRes},
	"resources-subscribe":           {notApplicable: noSubscribe},
	"resources-unsubscribe":         {notApplicable: noSubscribe},
	"prompts-get-simple":            {notApplicable: fixturePrompts},
	"prompts-get-with-args":         {notApplicable: fixturePrompts},
	"prompts-get-embedded-resource": {notApplicable: fixturePrompts},
	"prompts-get-with-image":        {notApplicable: fixturePrompts},
}

// fixtureMissing is how the suite says a check could not run for want of
// a fixture: the diagnostic tool is not listed, or the server answered
// that the fixture tool is unknown.
var fixtureMissing = regexp.MustCompile(`Not testable: server does not list the diagnostic tool|unknown tool "test_|JSON-RPC error instead of re-requesting`)

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
	Description  string `json:"description"`
}

// TestConformance runs the official conformance suite's server scenarios
// against /mcp with the demo ask_person key: 0.2.0-alpha.12 with the
// 2026-07-28 requirements, and 0.1.16's active suite. The suite has no
// option for request headers, so it talks to a proxy that adds the
// Authorization header and passes everything else (Host and Origin too)
// through as sent. Each scenario's checks are read from the suite's JSON
// results and judged by the tables above: every check of an applicable
// scenario passes; a scenario that needs the reference server's fixtures is
// listed with why.
func TestConformance(t *testing.T) {
	need(t)
	node, why := node22()
	if node == "" {
		testenv.Missing(t, testenv.MCPClients, why)
	}
	for _, suite := range []struct {
		name, pkg string
		args      []string
		table     map[string]scenario
	}{
		{"0.2.0-alpha.12 requirements 2026-07-28", "conformance", []string{"--requirements", "2026-07-28", "--timeout", "20000"}, conformance020},
		{"0.1.16", "conformance-0.1", nil, conformance0116},
	} {
		t.Run(suite.name, func(t *testing.T) {
			e := startStack(t)
			base := e.withKey(demoKey)
			out := t.TempDir()
			args := append([]string{filepath.Join("node_modules", suite.pkg, "dist", "index.js"), "server",
				"--url", base + "/mcp", "-o", out}, suite.args...)
			// The suite exits 1 whenever a check fails, and checks of
			// scenarios that need its fixtures always do: the verdict is read
			// from the results, not the exit status.
			log, took, err := runCmd(context.Background(), 4*time.Minute, nil, node, args...)
			t.Logf("conformance %s: %s (exit: %v)", suite.name, took.Round(time.Millisecond), err)
			if err != nil && strings.Contains(err.Error(), "killed after") {
				t.Fatalf("the suite did not finish: %v\n%s", err, log)
			}
			results := readResults(t, out)
			if len(results) == 0 {
				t.Fatalf("the suite saved no results:\n%s", log)
			}
			judge(t, suite.table, results)
			if t.Failed() {
				// The suite's own summary (its whole log is one paragraph a scenario).
				if i := strings.Index(log, "=== SUMMARY ==="); i >= 0 {
					log = log[i:]
				}
				t.Logf("the suite's summary:\n%s", log)
			}
		})
	}
}

// readResults reads every scenario's checks.json under dir (the suite
// saves server-<scenario>-<timestamp>/checks.json).
func readResults(t testing.TB, dir string) map[string][]check {
	t.Helper()
	stamp := regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]check{}
	for _, en := range entries {
		m := stamp.FindStringSubmatch(en.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, en.Name(), "checks.json"))
		if err != nil {
			t.Errorf("scenario %s: %v", m[1], err)
			continue
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Errorf("scenario %s: checks.json: %v", m[1], err)
			continue
		}
		out[m[1]] = cs
	}
	return out
}

// judge applies a table to a suite's results.
func judge(t testing.TB, table map[string]scenario, results map[string][]check) {
	t.Helper()
	var names []string
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	passed, na := 0, 0
	for _, name := range names {
		sc, ok := table[name]
		if !ok {
			t.Errorf("scenario %s is in no table: classify it (applies, or why not) in conformance_test.go; its checks: %s", name, summary(results[name]))
			continue
		}
		if sc.notApplicable != "" {
			na++
			continue
		}
		ok = true
		for _, c := range results[name] {
			switch {
			case c.Status == "SUCCESS" || c.Status == "INFO":
			case c.Status == "SKIPPED":
				// The suite skips a check whose precondition the server does
				// not advertise (a list-changed kind it does not declare).
				t.Logf("%s: %s skipped by the suite: %s", name, c.ID, orDesc(c))
			case sc.accepted[c.ID] != "" && c.Status == "WARNING":
				t.Logf("%s: %s warns, accepted: %s", name, c.ID, sc.accepted[c.ID])
			case sc.fixtures[c.ID] != "" && fixtureMissing.MatchString(c.ErrorMessage):
				t.Logf("%s: %s not testable here: needs %s", name, c.ID, sc.fixtures[c.ID])
			default:
				ok = false
				t.Errorf("%s: %s %s: %s", name, c.ID, c.Status, orDesc(c))
			}
		}
		if ok {
			passed++
		}
	}
	for name, sc := range table {
		if _, ran := results[name]; !ran && sc.notApplicable == "" {
			t.Errorf("scenario %s applies but did not run", name)
		}
	}
	t.Logf("%d applicable scenarios passed, %d not applicable (fixtures or features countersign does not have)", passed, na)
}

func orDesc(c check) string {
	if c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return c.Description
}

func summary(cs []check) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s", c.ID, c.Status))
	}
	return strings.Join(parts, ", ")
}
