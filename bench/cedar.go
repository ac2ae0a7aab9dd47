package bench

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"

	"github.com/countersign/countersign/shared/policy"
)

//go:embed policy/countersign.cedar
var cedarPolicy []byte

// Cedar decides with cedar-go. Cedar cannot match path templates, so
// countersign's router maps the concrete path to its endpoint first (its
// time is counted in Cedar's); Cedar then decides on (principal =
// credential, action = method, resource = endpoint, context = intent,
// delegated and body).
//
// Cedar answers allow or deny and the policies that decided. The outcome,
// the code and, for an escalation, the raised tier are the deciding
// policy's annotations (the forbid with the lowest @rank when several
// hold); a call that was not escalated keeps its endpoint's tier. Cedar's
// numbers are 64-bit integers: an amount is compared when it is a whole
// number, and a policy that cannot be evaluated (an amount that is text, a
// fraction) is an error, which Decide returns (the caller refuses the call).
type Cedar struct {
	policy    *policy.Set
	set       *cedar.PolicySet
	entities  cedar.EntityMap
	verdicts  map[cedar.PolicyID]verdict
	resources map[*policy.Endpoint]cedar.EntityUID
	actions   map[string]cedar.EntityUID
}

// verdict is what a policy decides, from its annotations.
type verdict struct {
	rank      int
	outcome   policy.Outcome
	code      policy.Code
	tier      policy.Tier // the raised tier when escalated
	escalated bool
	notice    bool
}

// NewCedar builds the policy set (policy/countersign.cedar and what
// CedarPolicies generates from the policy) and the entities: the
// credentials, the actions, the connections and their endpoints.
func NewCedar(p *policy.Set, creds map[string]*policy.Credential) (*Cedar, error) {
	generated, err := CedarPolicies(p)
	if err != nil {
		return nil, err
	}
	e := &Cedar{
		policy:    p,
		set:       cedar.NewPolicySet(),
		entities:  cedar.EntityMap{},
		verdicts:  map[cedar.PolicyID]verdict{},
		resources: map[*policy.Endpoint]cedar.EntityUID{},
		actions:   map[string]cedar.EntityUID{},
	}
	for _, f := range []struct {
		name string
		text []byte
	}{{"countersign.cedar", cedarPolicy}, {"connections.cedar", []byte(generated)}} {
		list, err := cedar.NewPolicyListFromBytes(f.name, f.text)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", f.name, err)
		}
		for _, po := range list {
			id, v, err := readVerdict(po)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", f.name, po.Position().Line, err)
			}
			if !e.set.Add(id, po) {
				return nil, fmt.Errorf("%s:%d: policy %q is defined twice", f.name, po.Position().Line, id)
			}
			e.verdicts[id] = v
		}
	}

	write := cedar.NewEntityUID("Action", "write")
	e.entities[write] = cedar.Entity{UID: write}
	for _, m := range policy.Methods {
		uid := cedar.NewEntityUID("Action", cedar.String(m))
		ent := cedar.Entity{UID: uid}
		if policy.IsMutating(m) {
			ent.Parents = cedar.NewEntityUIDSet(write)
		}
		e.entities[uid] = ent
		e.actions[m] = uid
	}
	for _, c := range p.Connections() {
		conn := cedar.NewEntityUID("Connection", cedar.String(c.Name))
		e.entities[conn] = cedar.Entity{UID: conn}
		for _, ep := range c.Endpoints {
			uid := endpointUID(c, ep)
			e.entities[uid] = cedar.Entity{
				UID:        uid,
				Parents:    cedar.NewEntityUIDSet(conn),
				Attributes: cedar.NewRecord(cedar.RecordMap{"tier": cedar.String(ep.Tier.String())}),
			}
			e.resources[ep] = uid
		}
	}
	for id, c := range creds {
		uid := cedar.NewEntityUID("Credential", cedar.String(id))
		e.entities[uid] = cedar.Entity{UID: uid, Attributes: cedar.NewRecord(cedar.RecordMap{
			"choice":    cedar.String(c.Choice.String()),
			"read_only": cedar.Boolean(c.ReadOnly),
		})}
	}
	return e, nil
}

func endpointUID(c *policy.Connection, ep *policy.Endpoint) cedar.EntityUID {
	return cedar.NewEntityUID("Endpoint", cedar.String(c.Name+" "+ep.Method+" "+ep.Path))
}

// readVerdict reads a policy's @id and what it decides: a forbid denies
// with @code at @rank (and @tier when @escalated); a permit gives @outcome
// (execute or pause) and @notice.
func readVerdict(po *cedar.Policy) (cedar.PolicyID, verdict, error) {
	a := po.Annotations()
	id := cedar.PolicyID(a["id"])
	if id == "" {
		return "", verdict{}, errors.New("policy without @id")
	}
	v := verdict{rank: math.MaxInt, escalated: a["escalated"] == "true", notice: a["notice"] == "true"}
	if r, ok := a["rank"]; ok {
		n, err := strconv.Atoi(string(r))
		if err != nil {
			return "", v, fmt.Errorf("policy %q: @rank %q is not a number", id, r)
		}
		v.rank = n
	}
	if po.Effect() == cedar.Forbid {
		v.outcome, v.code = policy.Deny, policy.Code(a["code"])
		if v.code == policy.CodeNone {
			return "", v, fmt.Errorf("forbid %q without @code", id)
		}
		if v.escalated {
			t, ok := policy.ParseTier(string(a["tier"]))
			if !ok {
				return "", v, fmt.Errorf("escalating forbid %q without a valid @tier", id)
			}
			v.tier = t
		}
		return id, v, nil
	}
	switch a["outcome"] {
	case "execute":
		v.outcome = policy.Execute
	case "pause":
		v.outcome = policy.Pause
	default:
		return "", v, fmt.Errorf("permit %q: @outcome must be execute or pause", id)
	}
	return id, v, nil
}

// Name returns "cedar".
func (*Cedar) Name() string { return "cedar" }

// Decide resolves the call with countersign's router and authorizes the
// request with cedar-go.
func (e *Cedar) Decide(c *policy.Call, cred *policy.Credential) (Result, error) {
	m, ok := e.policy.Resolve(c.Connection, c.Method, c.Path)
	if !ok {
		return routerRefusal, nil
	}
	ctx := cedar.RecordMap{
		"intent":    cedar.String(c.Intent.String()),
		"delegated": cedar.Boolean(c.Delegated),
	}
	if c.Body != nil {
		body, err := cedarValue(c.Body)
		if err != nil {
			return Result{}, fmt.Errorf("body: %w", err)
		}
		ctx["body"] = body
	}
	dec, diag := cedar.Authorize(e.set, e.entities, cedar.Request{
		Principal: cedar.NewEntityUID("Credential", cedar.String(cred.ID)),
		Action:    e.actions[c.Method],
		Resource:  e.resources[m.Endpoint],
		Context:   cedar.NewRecord(ctx),
	})
	if len(diag.Errors) > 0 {
		return Result{}, fmt.Errorf("policy %s: %s", diag.Errors[0].PolicyID, diag.Errors[0].Message)
	}
	var best verdict
	found := false
	for _, r := range diag.Reasons {
		if v := e.verdicts[r.PolicyID]; !found || v.rank < best.rank {
			best, found = v, true
		}
	}
	if !found {
		return Result{}, fmt.Errorf("no policy decided (%s)", dec)
	}
	if (dec == cedar.Allow) != (best.outcome != policy.Deny) {
		return Result{}, fmt.Errorf("decision %s but deciding policy says %s", dec, best.outcome)
	}
	r := Result{Outcome: best.outcome, Code: best.code, Tier: m.Endpoint.Tier, Escalated: best.escalated, Notice: best.notice}
	if best.escalated {
		r.Tier = best.tier
	}
	return r, nil
}

// cedarValue converts a decoded JSON value to Cedar: objects to records,
// arrays to sets, whole numbers to Long, other numbers to decimal (which
// Cedar's > does not compare), and null to nothing (an absent attribute).
func cedarValue(v any) (cedar.Value, error) {
	switch x := v.(type) {
	case map[string]any:
		m := make(cedar.RecordMap, len(x))
		for k, item := range x {
			if item == nil {
				continue
			}
			cv, err := cedarValue(item)
			if err != nil {
				return nil, err
			}
			m[cedar.String(k)] = cv
		}
		return cedar.NewRecord(m), nil
	case []any:
		items := make([]cedar.Value, 0, len(x))
		for _, item := range x {
			if item == nil {
				continue
			}
			cv, err := cedarValue(item)
			if err != nil {
				return nil, err
			}
			items = append(items, cv)
		}
		return cedar.NewSet(items...), nil
	case string:
		return cedar.String(x), nil
	case bool:
		return cedar.Boolean(x), nil
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return cedar.Long(n), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return cedarNumber(f)
	case float64:
		return cedarNumber(x)
	}
	return nil, fmt.Errorf("unsupported JSON value %T", v)
}

func cedarNumber(f float64) (cedar.Value, error) {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return cedar.Long(int64(f)), nil
	}
	return cedar.NewDecimalFromFloat(f)
}

// CedarPolicies returns the per-connection Cedar policies of a compiled
// policy: one forbid per threshold that can raise its endpoint's tier
// (rank 1 for never, 2 for review, so the highest tier wins) and, when
// delegations.escalateConfirm is set, the delegation forbid (rank 3). Like
// RegoData, it refuses what the encodings do not cover, and thresholds
// whose limit is not a whole number.
func CedarPolicies(p *policy.Set) (string, error) {
	var qerr error
	q := func(s string) string {
		v, err := cedarQuote(s)
		if err != nil && qerr == nil {
			qerr = err
		}
		return v
	}
	var b strings.Builder
	b.WriteString("// Code generated by bench.CedarPolicies from the configuration. DO NOT EDIT.\n")
	for _, c := range p.Connections() {
		if err := supported(c); err != nil {
			return "", err
		}
		if c.EscalateDelegated {
			fmt.Fprintf(&b, "\n// connection %s: delegations.escalateConfirm\n", c.Name)
			fmt.Fprintf(&b, "@id(%s)\n@rank(\"3\")\n@code(\"review_required\")\n@tier(\"review\")\n@escalated(\"true\")\n", q(c.Name+" delegation"))
			fmt.Fprintf(&b, "forbid (principal, action, resource in Connection::%s)\nwhen { resource.tier == \"confirm\" && context.delegated };\n", q(c.Name))
		}
		for _, ep := range c.Endpoints {
			for i, th := range ep.Escalate {
				if th.Escalate <= ep.Tier {
					continue // escalation only raises
				}
				if th.Above != math.Trunc(th.Above) || math.Abs(th.Above) >= 1<<53 {
					return "", fmt.Errorf("connection %s: %s %s: %s above %v: Cedar compares whole numbers only", c.Name, ep.Method, ep.Path, th.Field, th.Above)
				}
				rank := 2
				if th.Escalate == policy.Never {
					rank = 1
				}
				fmt.Fprintf(&b, "\n@id(%s)\n@rank(\"%d\")\n@code(%s)\n@tier(%s)\n@escalated(\"true\")\n",
					q(fmt.Sprintf("%s %s %s escalate[%d]", c.Name, ep.Method, ep.Path, i)), rank,
					q(string(denyCodes[th.Escalate])), q(th.Escalate.String()))
				fmt.Fprintf(&b, "forbid (principal, action == Action::%s, resource == Endpoint::%s)\nwhen { %s };\n",
					q(ep.Method), q(c.Name+" "+ep.Method+" "+ep.Path), cedarAbove(q, th.Path, int64(th.Above)))
			}
		}
	}
	if qerr != nil {
		return "", qerr
	}
	return b.String(), nil
}

var denyCodes = map[policy.Tier]policy.Code{policy.Review: policy.CodeReviewRequired, policy.Never: policy.CodeBlocked}

// cedarAbove is the condition "the body field at path is above limit":
// context has body && context.body has total && context.body.total has
// amount && context.body.total.amount > 5000.
func cedarAbove(q func(string) string, path []string, limit int64) string {
	ref := "context.body"
	conds := []string{"context has body"}
	for _, k := range path {
		if cedarIdent.MatchString(k) && !cedarReserved[k] {
			conds = append(conds, ref+" has "+k)
			ref += "." + k
		} else {
			conds = append(conds, ref+" has "+q(k))
			ref += "[" + q(k) + "]"
		}
	}
	conds = append(conds, ref+" > "+strconv.FormatInt(limit, 10))
	return strings.Join(conds, " && ")
}

var cedarIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var cedarReserved = map[string]bool{
	"true": true, "false": true, "if": true, "then": true, "else": true,
	"in": true, "is": true, "like": true, "has": true, "__cedar": true,
}

// cedarQuote writes s as a Cedar string literal; it refuses control
// characters rather than guess at their escapes.
func cedarQuote(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			return "", fmt.Errorf("%q: control characters are not written into Cedar strings", s)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}
