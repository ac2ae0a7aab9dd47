package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
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
	in, d, err := (&calls.Service{}).WithConfig(cfg).Explain(cred, c)
	if err != nil {
		return explanation{}, fmt.Errorf("explain: the gateway answers %s: %s", fault.CodeOf(err), fault.ReasonOf(err))
	}
	return explain(d, in), nil
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
	// WhyNot lists the rules that did not decide, in the order of docs/design.md (The model).
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

// explain turns a decision into the explanation. It takes the decision as
// policy.Decide returned it, so that routing explain through the shared
// pipeline later changes where the decision comes from, not what is
// printed; in is what the decision was made from, read only for the
// why-not list and the redemption.
func explain(d policy.Decision, in policy.Input) explanation {
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
	ex.WhyNot = whyNots(d, in)
	return ex
}

// The stages of the decision, in the order policy.Decide applies them.
const (
	stageOperation = iota // connection, credential connections, endpoint
	stageThreshold
	stageDelegation
	stageHook
	stageReadOnly
	stageIntent
	stageTier // the tier, and at confirm the credential's choice
)

// stageOf says which stage decided.
func stageOf(d policy.Decision) int {
	switch {
	case d.Code == policy.CodeUnknownOperation:
		return stageOperation
	case d.Rule == policy.RuleDelegation:
		return stageDelegation
	case d.Escalated:
		return stageThreshold
	case d.Rule == policy.RuleHook:
		return stageHook
	case d.Rule == policy.RuleReadOnly:
		return stageReadOnly
	case d.Rule == policy.RuleIntent:
		return stageIntent
	}
	return stageTier
}

var stageNames = [...]string{"the operation", "an escalation threshold", "delegation", "the hook", "the read-only flag", "the intent", "the tier"}

// whyNots lists every rule that could apply to the call and did not
// decide it: those checked before the deciding rule say why they passed,
// those after it say they were not reached.
func whyNots(d policy.Decision, in policy.Input) []whyNot {
	c, cred := in.Call, in.Credential
	if c == nil {
		c = &policy.Call{}
	}
	if cred == nil {
		cred = &policy.Credential{}
	}
	decided := stageOf(d)
	notReached := func(int) string {
		return fmt.Sprintf("not reached: %s decided first", stageNames[decided])
	}
	var out []whyNot
	add := func(rule, why string) { out = append(out, whyNot{Rule: rule, Why: why}) }

	m := d.Match
	if decided == stageOperation {
		// Nothing past the operation applies to an unknown one.
		if d.Rule != policy.RuleCredentialConnections {
			add(policy.RuleCredentialConnections, credentialConnections(cred, c.Connection))
		}
		return out
	}
	add(policy.RuleCredentialConnections, credentialConnections(cred, m.Connection.Name))

	// Escalation thresholds.
	ep := m.Endpoint
	for i := range ep.Escalate {
		th := ep.Escalate[i]
		rule := th.Rule
		if rule == "" {
			rule = th.Field
		}
		if d.Escalated && d.Rule == rule {
			continue // the one that decided
		}
		var why string
		exceeded := thresholdExceeded(m, th, c)
		value := fieldText(th, m, c)
		switch {
		case decided < stageThreshold:
			why = notReached(stageThreshold)
		case th.Escalate <= d.Configured:
			why = fmt.Sprintf("cannot raise: the endpoint is already at the %s tier", d.Configured)
		case exceeded && d.Escalated:
			why = fmt.Sprintf("%s is %s, also above %s, but %s escalates to %s", th.Field, value, number(th.Above), d.Rule, d.Tier)
		case exceeded:
			why = fmt.Sprintf("%s is %s: above %s", th.Field, value, number(th.Above))
		case value == "":
			why = fmt.Sprintf("%s is not in the call", th.Field)
		default:
			why = fmt.Sprintf("%s is %s, not above %s", th.Field, value, number(th.Above))
		}
		add(rule, why)
	}

	// Delegation.
	if decided != stageDelegation {
		var why string
		switch {
		case decided < stageDelegation:
			why = notReached(stageDelegation)
		case !m.Connection.EscalateDelegated:
			why = fmt.Sprintf("connection %s does not set delegations.escalateConfirm", m.Connection.Name)
		case !c.Delegated:
			why = `the call is not delegated ("delegated": false)`
		case d.Configured != policy.Confirm:
			why = fmt.Sprintf("it turns only confirm into review; the endpoint is at the %s tier", d.Configured)
		default:
			why = "did not apply"
		}
		add(policy.RuleDelegation, why)
	}

	// Hooks.
	switch {
	case !m.Connection.Hooked:
		add(policy.RuleHook, fmt.Sprintf("connection %s has no hooks", m.Connection.Name))
	case decided < stageHook:
		add(policy.RuleHook, notReached(stageHook))
	default:
		add(policy.RuleHook, hooksNote)
	}

	// The credential's limits.
	write := policy.IsMutating(ep.Method)
	if decided != stageReadOnly {
		var why string
		switch {
		case decided < stageReadOnly:
			why = notReached(stageReadOnly)
		case !write:
			why = fmt.Sprintf("%s is not a write", ep.Method)
		default:
			why = fmt.Sprintf("credential %s is not read-only", cred.ID)
		}
		add(policy.RuleReadOnly, why)
	}
	if decided != stageIntent {
		var why string
		switch {
		case decided < stageIntent:
			why = notReached(stageIntent)
		case !write:
			why = fmt.Sprintf("%s is not a write, so any intent will do", ep.Method)
		default:
			why = fmt.Sprintf("the call declares intent %s", c.Intent)
		}
		add(policy.RuleIntent, why)
	}

	// The credential's choice decides only at the confirm tier.
	choice := "choice " + cred.Choice.String()
	if d.Rule != choice {
		var why string
		switch {
		case decided < stageTier:
			why = notReached(stageTier)
		default:
			why = fmt.Sprintf("the choice decides only at the confirm tier; this call is at the %s tier", d.Tier)
		}
		add(choice, why)
	}
	return out
}

func credentialConnections(cred *policy.Credential, conn string) string {
	if len(cred.Connections) == 0 {
		return fmt.Sprintf("credential %s may use every connection", cred.ID)
	}
	if slices.Contains(cred.Connections, conn) {
		return fmt.Sprintf("%s is one of credential %s's connections (%s)", conn, cred.ID, strings.Join(cred.Connections, ", "))
	}
	return fmt.Sprintf("%s is not one of credential %s's connections (%s)", conn, cred.ID, strings.Join(cred.Connections, ", "))
}

// thresholdExceeded asks policy.Decide whether one threshold alone would
// raise the call, so the answer cannot drift from the decision's own
// reading of the field (numbers as text, repeated query parameters, values
// that are not numbers).
func thresholdExceeded(m policy.Match, th policy.Threshold, c *policy.Call) bool {
	ep := &policy.Endpoint{Method: m.Endpoint.Method, Path: m.Endpoint.Path, Tier: policy.Auto, Escalate: []policy.Threshold{th}}
	probe := policy.Match{Connection: &policy.Connection{Name: m.Connection.Name}, Endpoint: ep, Params: m.Params}
	return policy.Decide(probe, true, policy.Input{Call: c, Credential: &policy.Credential{Choice: policy.RunWithoutAsking}}).Escalated
}

// fieldText shows a threshold's field as the call has it, or "" when the
// call does not have it. It is for display only; thresholdExceeded decides.
func fieldText(th policy.Threshold, m policy.Match, c *policy.Call) string {
	switch th.Source {
	case policy.SourceQuery:
		if len(th.Path) == 1 && c.Query.Has(th.Path[0]) {
			return strings.Join(c.Query[th.Path[0]], ", ")
		}
	case policy.SourcePath:
		if len(th.Path) == 1 {
			if v, ok := m.Params.Get(th.Path[0]); ok {
				return v
			}
		}
	case policy.SourceBody:
		v := c.Body
		for _, k := range th.Path {
			switch x := v.(type) {
			case map[string]any:
				v = x[k]
			case []any:
				i := -1
				if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(x) {
					return ""
				}
				v = x[i]
			default:
				return ""
			}
		}
		if v == nil {
			return ""
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	return ""
}

func number(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
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
