package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

const explainSynopsis = `--config DIR --credential ID [--json] [--why-not] CALL

CALL is the JSON body of a POST /v1/calls request, inline or @file, e.g.
  '{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}'
Nothing is called: no upstream, no store, no hook.`

// runExplain is "countersign explain": it decides CALL for a credential of
// the configuration with policy.Decide, as the gateway does, and prints the
// decision without calling anything.
func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explain", explainSynopsis, stderr)
	configDir := fs.String("config", "", "configuration directory (required)")
	credID := fs.String("credential", "", "id of a credential in the configuration's credentials.json (required)")
	asJSON := fs.Bool("json", false, "print one JSON object (fields named as in docs/api.md)")
	whyNot := fs.Bool("why-not", false, "also list the rules that did not decide, and why")
	pos, err := parseFlags(fs, args)
	switch {
	case err != nil:
	case *configDir == "":
		err = usagef("--config DIR is required")
	case *credID == "":
		err = usagef("--credential ID is required")
	case len(pos) != 1:
		err = usagef("explain takes one CALL (a JSON body, or @file), got %d arguments", len(pos))
	}
	if err != nil {
		return finish(fs, err, stderr)
	}
	ex, err := explainCall(*configDir, *credID, pos[0])
	if err != nil {
		return finish(nil, err, stderr)
	}
	if !*whyNot {
		ex.WhyNot = nil
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ex); err != nil {
			return finish(nil, fmt.Errorf("explain: write: %w", err), stderr)
		}
		return exitOK
	}
	writeExplanation(stdout, ex)
	return exitOK
}

// explainCall loads the configuration, finds the credential, reads the call
// and decides it as the gateway does, without the hooks.
func explainCall(configDir, credID, callArg string) (explanation, error) {
	cfg, err := config.Load(configDir, nil)
	if err != nil {
		return explanation{}, err
	}
	cred, err := configCredential(cfg, credID)
	if err != nil {
		return explanation{}, err
	}
	raw, err := readCallArg(callArg)
	if err != nil {
		return explanation{}, err
	}
	c, _, err := calls.ParseRequest(raw)
	if err != nil {
		return explanation{}, fmt.Errorf("explain: the gateway answers 400 invalid_request: %s", fault.ReasonOf(err))
	}
	// The pipeline's own decision, without I/O: explain and the server
	// cannot drift.
	in, d, checks, err := (&calls.Service{}).WithConfig(cfg).Explain(cred, c)
	if err != nil {
		return explanation{}, fmt.Errorf("explain: the gateway answers %s: %s", fault.CodeOf(err), fault.ReasonOf(err))
	}
	return explain(d, in, checks), nil
}

// configCredential returns the credential with the id from credentials.json.
func configCredential(cfg *config.Config, id string) (*countersign.Credential, error) {
	ids := make([]string, 0, len(cfg.Credentials))
	for i := range cfg.Credentials {
		if cfg.Credentials[i].ID == id {
			return &cfg.Credentials[i], nil
		}
		ids = append(ids, cfg.Credentials[i].ID)
	}
	known := "it has none"
	if len(ids) > 0 {
		known = "known: " + strings.Join(ids, ", ")
	}
	return nil, fmt.Errorf("explain: no credential %q in %s (%s)", id, cfg.Dir+string(os.PathSeparator)+"credentials.json", known)
}

// readCallArg returns CALL's bytes: the argument itself, or the file it
// names after @.
func readCallArg(arg string) ([]byte, error) {
	name, ok := strings.CutPrefix(arg, "@")
	if !ok {
		return []byte(arg), nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("explain: read CALL: %w", err)
	}
	return b, nil
}

// explanation is what explain prints. The first six fields are named as in
// docs/api.md: tier, outcome (the pipeline's outcome: executed,
// confirmation_required or denied), code, reason, rule and escalated.
type explanation struct {
	Tier      string `json:"tier"`
	Outcome   string `json:"outcome"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
	Rule      string `json:"rule"`
	Escalated bool   `json:"escalated"`
	// HTTPStatus is what POST /v1/calls answers.
	HTTPStatus int `json:"http_status"`
	// ConfiguredTier is the tier before escalation.
	ConfiguredTier string `json:"configured_tier"`
	// Credential is the caller as the decision saw it.
	Credential explainedCredential `json:"credential"`
	// Endpoint is the matched operation and where its tier is configured.
	Endpoint *explainedEndpoint `json:"endpoint,omitempty"`
	// Notice is set when the call runs although it requires confirmation (ask_agent).
	Notice bool `json:"notice,omitempty"`
	// Redeems names the approval a confirmed_write call would redeem.
	Redeems string `json:"redeems,omitempty"`
	// Hooks is "not consulted" when the connection has hooks.
	Hooks string `json:"hooks,omitempty"`
	// WhyNot lists the rules that did not decide, in the order of
	// docs/design.md (The model): policy.Explain's checks but the one that
	// decided.
	WhyNot []whyNot `json:"why_not,omitempty"`
}

type explainedCredential struct {
	ID          string   `json:"id"`
	Choice      string   `json:"choice"`
	ReadOnly    bool     `json:"read_only"`
	Connections []string `json:"connections,omitempty"`
}

type explainedEndpoint struct {
	Connection  string `json:"connection"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	OperationID string `json:"operation_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	Rule        string `json:"rule"`
}

// whyNot is one rule that did not decide.
type whyNot struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// hooksNotConsulted is the Hooks field for a connection with hooks;
// hooksNote says what that means.
const (
	hooksNotConsulted = "not consulted"
	hooksNote         = "hooks not consulted: explain calls nothing, and the connection's hook could still deny the call or ask for confirmation"
)

// explain turns a decision into the explanation. It takes the decision and
// its checks as policy.Explain returned them; in is what the decision was
// made from, read for the credential and the redemption.
func explain(d policy.Decision, in policy.Input, checks []policy.Check) explanation {
	c := in.Call
	if c == nil {
		c = &policy.Call{}
	}
	ex := explanation{
		Tier:           d.Tier.String(),
		Code:           string(d.Code),
		Reason:         d.Reason,
		Rule:           d.Rule,
		Escalated:      d.Escalated,
		ConfiguredTier: d.Configured.String(),
		Notice:         d.Notice,
	}
	if cred := in.Credential; cred != nil {
		ex.Credential = explainedCredential{ID: cred.ID, Choice: cred.Choice.String(), ReadOnly: cred.ReadOnly, Connections: cred.Connections}
	}
	switch d.Outcome {
	case policy.Execute:
		ex.Outcome, ex.HTTPStatus = calls.Executed.String(), 200
	case policy.Pause:
		ex.Outcome, ex.HTTPStatus = calls.Paused.String(), 202
	default:
		ex.Outcome, ex.HTTPStatus = calls.Denied.String(), 403
		if d.Code == policy.CodeUnknownOperation {
			ex.HTTPStatus = 404
		}
	}
	if d.Outcome != policy.Deny && c.Intent == policy.IntentConfirmedWrite {
		// A call that names an approval redeems it instead of pausing or
		// running on its own (shared/calls): it runs once if a person
		// approved this exact call, and is refused otherwise.
		ex.Outcome, ex.HTTPStatus = calls.Executed.String(), 200
		ex.Redeems = "the approval named by confirmation_id: the call runs once if a person approved this exact call, else 403, 409 or 410"
	}
	if m := d.Match; m.Endpoint != nil && m.Connection != nil {
		ex.Endpoint = &explainedEndpoint{Connection: m.Connection.Name, Method: m.Endpoint.Method, Path: m.Endpoint.Path,
			OperationID: m.Endpoint.OperationID, Tool: m.Endpoint.Tool, Rule: m.Endpoint.Rule}
		if m.Connection.Hooked {
			ex.Hooks = hooksNotConsulted
		}
	}
	for _, c := range checks {
		switch {
		case c.Verdict == policy.Decided:
			continue
		case c.Rule == policy.RuleHook && c.Verdict == policy.Passed && ex.Hooks != "":
			c.Why = hooksNote // explain asked no hook
		}
		ex.WhyNot = append(ex.WhyNot, whyNot{Rule: c.Rule, Why: c.Why})
	}
	return ex
}

// writeExplanation prints the explanation as aligned "name: value" lines.
func writeExplanation(w io.Writer, ex explanation) {
	code := ex.Code
	if code == "" {
		code = "-"
	}
	tierLine := ex.Tier
	if ex.ConfiguredTier != ex.Tier {
		tierLine += " (configured: " + ex.ConfiguredTier + ")"
	}
	lines := [][2]string{
		{"tier", tierLine},
		{"outcome", fmt.Sprintf("%s (HTTP %d)", ex.Outcome, ex.HTTPStatus)},
		{"code", code},
		{"reason", ex.Reason},
		{"rule", ex.Rule},
		{"escalated", fmt.Sprint(ex.Escalated)},
	}
	if ex.Endpoint != nil {
		lines = append(lines, [2]string{"endpoint", ex.Endpoint.Rule})
	}
	cred := ex.Credential.ID + " (choice " + ex.Credential.Choice
	if ex.Credential.ReadOnly {
		cred += ", read-only"
	}
	if len(ex.Credential.Connections) > 0 {
		cred += ", connections " + strings.Join(ex.Credential.Connections, ", ")
	}
	lines = append(lines, [2]string{"credential", cred + ")"})
	if ex.Notice {
		lines = append(lines, [2]string{"notice", "the response tells the agent the operation requires confirmation"})
	}
	if ex.Redeems != "" {
		lines = append(lines, [2]string{"redeems", ex.Redeems})
	}
	if ex.Hooks != "" {
		lines = append(lines, [2]string{"hooks", hooksNote})
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%-11s %s\n", l[0]+":", l[1])
	}
	if len(ex.WhyNot) > 0 {
		fmt.Fprintln(w, "why not:")
		for _, wn := range ex.WhyNot {
			fmt.Fprintf(w, "  %s: %s\n", wn.Rule, wn.Why)
		}
	}
}
