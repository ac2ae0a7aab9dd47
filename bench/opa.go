package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/countersign/countersign/shared/policy"
)

//go:embed policy/countersign.rego
var regoPolicy string

// OPA decides with a prepared Rego query on data.countersign.decision.
//
// OPA gets the endpoint template from countersign's router, as Cedar does,
// rather than matching path templates in Rego. That is the fairer option for
// OPA: matching in Rego (split the path, try every template of the method)
// costs more than the decision itself and is not what OPA is good at, and
// the router's time is counted in OPA's time either way. The ratio to
// countersign is therefore a lower bound of what a Rego-only gateway would
// see. The input is handed over as an ast.Value (rego.EvalParsedInput),
// the cheapest way in: rego.EvalInput would round-trip a Go map through JSON.
type OPA struct {
	policy *policy.Set
	query  rego.PreparedEvalQuery
	ctx    context.Context
	// Precomputed input terms: the router's answer and the credentials are
	// known at start, as they are to a gateway.
	conns map[*policy.Connection]*ast.Term
	ops   map[*policy.Endpoint]*ast.Term
	creds map[string]*ast.Term
}

// NewOPA prepares the Rego query for a compiled policy: policy/countersign.rego
// and the data module RegoData generates from the policy.
func NewOPA(p *policy.Set, creds map[string]*policy.Credential) (*OPA, error) {
	data, err := RegoData(p)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	q, err := rego.New(
		rego.Query("data.countersign.decision"),
		rego.Module("countersign.rego", regoPolicy),
		rego.Module("policy.rego", data),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	e := &OPA{policy: p, query: q, ctx: ctx,
		conns: map[*policy.Connection]*ast.Term{}, ops: map[*policy.Endpoint]*ast.Term{}, creds: map[string]*ast.Term{}}
	for _, c := range p.Connections() {
		e.conns[c] = ast.StringTerm(c.Name)
		for _, ep := range c.Endpoints {
			e.ops[ep] = ast.StringTerm(ep.Method + " " + ep.Path)
		}
	}
	for id, c := range creds {
		e.creds[id] = credentialTerm(c)
	}
	return e, nil
}

// Name returns "opa".
func (*OPA) Name() string { return "opa" }

var (
	keyConnection = ast.StringTerm("connection")
	keyOperation  = ast.StringTerm("operation")
	keyMethod     = ast.StringTerm("method")
	keyIntent     = ast.StringTerm("intent")
	keyDelegated  = ast.StringTerm("delegated")
	keyCredential = ast.StringTerm("credential")
	keyBody       = ast.StringTerm("body")
	keyChoice     = ast.StringTerm("choice")
	keyReadOnly   = ast.StringTerm("read_only")
)

func credentialTerm(c *policy.Credential) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(keyChoice, ast.StringTerm(c.Choice.String())),
		ast.Item(keyReadOnly, ast.BooleanTerm(c.ReadOnly)),
	)
}

// Decide resolves the call with countersign's router and evaluates the
// prepared query on it.
func (e *OPA) Decide(c *policy.Call, cred *policy.Credential) (Result, error) {
	m, ok := e.policy.Resolve(c.Connection, c.Method, c.Path)
	if !ok {
		return routerRefusal, nil
	}
	ct, ok := e.creds[cred.ID]
	if !ok {
		ct = credentialTerm(cred)
	}
	items := make([][2]*ast.Term, 0, 7)
	items = append(items,
		ast.Item(keyConnection, e.conns[m.Connection]),
		ast.Item(keyOperation, e.ops[m.Endpoint]),
		ast.Item(keyMethod, ast.StringTerm(c.Method)),
		ast.Item(keyIntent, ast.StringTerm(c.Intent.String())),
		ast.Item(keyDelegated, ast.BooleanTerm(c.Delegated)),
		ast.Item(keyCredential, ct),
	)
	if c.Body != nil {
		body, err := ast.InterfaceToValue(c.Body)
		if err != nil {
			return Result{}, fmt.Errorf("body: %w", err)
		}
		items = append(items, ast.Item(keyBody, ast.NewTerm(body)))
	}
	rs, err := e.query.Eval(e.ctx, rego.EvalParsedInput(ast.NewObject(items...)))
	if err != nil {
		return Result{}, err
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return Result{}, fmt.Errorf("want one result, got %v", rs)
	}
	d, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return Result{}, fmt.Errorf("want an object, got %T", rs[0].Expressions[0].Value)
	}
	return parseRegoDecision(d)
}

func parseRegoDecision(d map[string]any) (Result, error) {
	var r Result
	outcome, _ := d["outcome"].(string)
	switch outcome {
	case "deny":
		r.Outcome = policy.Deny
	case "execute":
		r.Outcome = policy.Execute
	case "pause":
		r.Outcome = policy.Pause
	default:
		return r, fmt.Errorf("unknown outcome %q", outcome)
	}
	code, _ := d["code"].(string)
	r.Code = policy.Code(code)
	name, _ := d["tier"].(string)
	t, ok := policy.ParseTier(name)
	if !ok {
		return r, fmt.Errorf("unknown tier %q", name)
	}
	r.Tier = t
	r.Escalated, _ = d["escalated"].(bool)
	r.Notice, _ = d["notice"].(bool)
	return r, nil
}

// RegoData returns the Rego module data.countersign.policy for a compiled
// policy: per connection, escalate_delegated and the endpoints by
// "METHOD /template" with their tier and thresholds. It supports what the
// benchmark policy uses: endpoints of policy.json with body thresholds;
// custom tools, hooks and query or path thresholds are refused.
func RegoData(p *policy.Set) (string, error) {
	var b strings.Builder
	b.WriteString("# Code generated by bench.RegoData from the configuration. DO NOT EDIT.\n\n")
	b.WriteString("package countersign.policy\n\nconnections := {\n")
	for _, c := range p.Connections() {
		if err := supported(c); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\t%s: {\n\t\t\"escalate_delegated\": %t,\n\t\t\"endpoints\": {\n", quote(c.Name), c.EscalateDelegated)
		for _, ep := range c.Endpoints {
			fmt.Fprintf(&b, "\t\t\t%s: {\"tier\": %d, \"escalate\": [", quote(ep.Method+" "+ep.Path), ep.Tier)
			for i, th := range ep.Escalate {
				if i > 0 {
					b.WriteString(", ")
				}
				path := make([]string, len(th.Path))
				for j, s := range th.Path {
					path[j] = quote(s)
				}
				fmt.Fprintf(&b, "{\"path\": [%s], \"above\": %s, \"escalate\": %d}",
					strings.Join(path, ", "), strconv.FormatFloat(th.Above, 'f', -1, 64), th.Escalate)
			}
			b.WriteString("]},\n")
		}
		b.WriteString("\t\t},\n\t},\n")
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// supported reports what the Rego and Cedar encodings do not cover.
func supported(c *policy.Connection) error {
	if c.Hooked {
		return fmt.Errorf("connection %s: hooks are not encoded", c.Name)
	}
	for _, ep := range c.Endpoints {
		if ep.Tool != "" || ep.Hidden || ep.OperatorOnly {
			return fmt.Errorf("connection %s: %s %s: custom tools are not encoded", c.Name, ep.Method, ep.Path)
		}
		for _, th := range ep.Escalate {
			if th.Source != policy.SourceBody {
				return fmt.Errorf("connection %s: %s %s: only body thresholds are encoded, not %s", c.Name, ep.Method, ep.Path, th.Field)
			}
		}
	}
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
