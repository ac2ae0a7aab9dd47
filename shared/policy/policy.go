package policy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Set is a compiled set of connections. Build it with NewPolicy; it is
// immutable afterwards and safe for concurrent use.
type Set struct {
	conns  map[string]*Connection
	sorted []*Connection
}

// NewPolicy compiles each connection's endpoints into a router and
// precomputes the explanations the decision returns. It takes ownership of
// the connections and their endpoints: they must not be changed, or passed
// to another NewPolicy, afterwards.
//
// It returns an error naming the connection, the endpoint's index and its
// template when a template does not parse (see ParseTemplate), a method is
// not one of Methods, two endpoints have the same method and shape
// (/contacts/{id} and /contacts/{cid} are the same), a tier is out of range,
// or a threshold is malformed. All problems are returned, joined.
func NewPolicy(conns []*Connection) (*Set, error) {
	p := &Set{conns: make(map[string]*Connection, len(conns))}
	var errs []error
	for ci, c := range conns {
		if c == nil {
			errs = append(errs, fmt.Errorf("tier: connections[%d] is nil", ci))
			continue
		}
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("tier: connections[%d] has no name", ci))
			continue
		}
		if _, dup := p.conns[c.Name]; dup {
			errs = append(errs, fmt.Errorf("tier: connection %q is listed twice", c.Name))
			continue
		}
		if err := c.compile(); err != nil {
			errs = append(errs, err)
			continue
		}
		p.conns[c.Name] = c
		p.sorted = append(p.sorted, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(p.sorted, func(a, b *Connection) int { return strings.Compare(a.Name, b.Name) })
	return p, nil
}

func (c *Connection) compile() error {
	var errs []error
	fail := func(i int, ep *Endpoint, format string, args ...any) {
		errs = append(errs, fmt.Errorf("tier: connection %q endpoints[%d] %s %q: %s",
			c.Name, i, ep.Method, ep.Path, fmt.Sprintf(format, args...)))
	}
	var r router
	for i, ep := range c.Endpoints {
		if ep == nil {
			errs = append(errs, fmt.Errorf("tier: connection %q endpoints[%d] is nil", c.Name, i))
			continue
		}
		params, _, err := ParseTemplate(ep.Path)
		if err != nil {
			fail(i, ep, "path template %v", err)
			continue
		}
		if !ValidMethod(ep.Method) {
			fail(i, ep, "method must be one of %s", strings.Join(Methods[:], ", "))
			continue
		}
		if ep.Tier > Never || ep.Recorded > Never {
			fail(i, ep, "tier out of range")
			continue
		}
		bad := false
		for _, name := range ep.SlashParams {
			if !slices.Contains(params, name) {
				fail(i, ep, "encoded_slash_params: %q is not a parameter of the template", name)
				bad = true
			}
		}
		for j := range ep.Escalate {
			if err := checkThreshold(&ep.Escalate[j], params); err != nil {
				fail(i, ep, "escalate[%d]: %v", j, err)
				bad = true
			}
		}
		if len(ep.Rates) > MaxRates {
			fail(i, ep, "%d rate rules: at most %d per endpoint, its connection's included", len(ep.Rates), MaxRates)
			bad = true
		}
		for j := range ep.Rates {
			if err := checkRate(&ep.Rates[j]); err != nil {
				fail(i, ep, "rate rule %d: %v", j, err)
				bad = true
			}
		}
		if bad {
			continue
		}
		if prev := r.insert(ep.Method, ep.Path, ep); prev != nil {
			fail(i, ep, "duplicate endpoint: same method and path shape as %s %s", prev.Method, prev.Path)
			continue
		}
		ep.params = params
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.router = r
	c.text = newConnText(c)
	for _, ep := range c.Endpoints {
		ep.text = newEndpointText(c, ep)
	}
	return nil
}

func checkThreshold(t *Threshold, params []string) error {
	if t.Escalate != Review && t.Escalate != Never {
		return fmt.Errorf("escalate must be review or never, not %s", t.Escalate)
	}
	switch t.Source {
	case SourceBody:
		if len(t.Path) == 0 {
			return errors.New("a body field needs a path")
		}
	case SourceQuery:
		if len(t.Path) != 1 || t.Path[0] == "" {
			return errors.New("a query field needs exactly one name")
		}
	case SourcePath:
		if len(t.Path) != 1 || !slices.Contains(params, t.Path[0]) {
			return fmt.Errorf("path field %q is not a parameter of the template", strings.Join(t.Path, "."))
		}
	default:
		return errors.New("unknown field source")
	}
	return nil
}

// Connection returns the named connection, or nil.
func (p *Set) Connection(name string) *Connection {
	if p == nil {
		return nil
	}
	return p.conns[name]
}

// Connections returns the connections sorted by name. The slice is shared;
// do not modify it.
func (p *Set) Connections() []*Connection {
	if p == nil {
		return nil
	}
	return p.sorted
}

// Resolve matches a concrete path (without its query) against the
// connection's templates for the method. Literal segments beat parameters
// (/contacts/search beats /contacts/{id}); an empty segment never matches a
// parameter; a trailing slash is significant. When the connection exists but
// nothing matches, the returned Match still carries the Connection. Resolve
// does not allocate.
func (p *Set) Resolve(connection, method, path string) (m Match, ok bool) {
	ok = p.resolveInto(connection, method, path, &m)
	return m, ok
}

// resolveInto is Resolve writing the match into m, which is zero.
func (p *Set) resolveInto(connection, method, path string, m *Match) bool {
	c := p.Connection(connection)
	if c == nil {
		return false
	}
	m.Connection = c
	return c.router.match(method, path, m)
}

// RulesOf is the approval rules for a call to connection, method and
// concrete path (Connection.RulesFor its endpoint); a connection that no
// longer exists has none.
func (p *Set) RulesOf(connection, method, path string) Rules {
	m, ok := p.Resolve(connection, method, path)
	if m.Connection == nil {
		return Rules{}
	}
	if !ok {
		m.Endpoint = nil
	}
	return m.Connection.RulesFor(m.Endpoint)
}

// Built-in rule names reported in Decision.Rule.
const (
	RuleUnknownConnection     = "unknown connection"
	RuleCredentialConnections = "credential connections"
	RuleUnknownEndpoint       = "unknown endpoint"
	RuleHidden                = "tool llm_callable: false"
	RuleDelegation            = "delegations.escalateConfirm"
	RuleHook                  = "hook"
	RuleReadOnly              = "credential read_only"
	RuleIntent                = "intent"
	// RulePeople: a quorum or four eyes (approval.required,
	// approval.separate_approver) pauses a call the credential's choice
	// would have run without a person.
	RulePeople = "approval rules ask people"
)

var choiceRules = [...]string{"choice refuse", "choice ask_person", "choice ask_agent", "choice run_without_asking"}

// choiceSuffix completes "<operation> requires confirmation" per choice.
var choiceSuffix = [...]string{
	", and this credential's choice is refuse",
	": waiting for a person to approve it",
	"; it runs because this credential's choice is ask_agent, so the agent decides whether to ask the person",
	"; it runs because this credential's choice is run_without_asking",
}

const (
	reasonUnknownConnection = "unknown operation: there is no such connection"
	reasonDelegation        = "escalated to review: delegated call and delegations.escalateConfirm is true"
	reasonHookDenied        = "the connection's hook denied the call"
	reasonReadOnly          = "this credential is read-only and refuses every write, whatever its confirmation choice"
	reasonWriteIntent       = "a write (POST, PUT, PATCH, DELETE) needs intent write or confirmed_write, not read"
)

type connText struct {
	noEndpoint string // also used for hidden endpoints, which look unknown
	notAllowed string
}

func newConnText(c *Connection) *connText {
	return &connText{
		noEndpoint: fmt.Sprintf("unknown operation: connection %q has no endpoint for this method and path", c.Name),
		notAllowed: fmt.Sprintf("unknown operation: this credential may not use connection %q", c.Name),
	}
}

type endpointText struct {
	rule      string
	auto      string
	review    string
	never     string
	hookCause string
	confirm   [len(choiceSuffix)]string
	hookAsk   [len(choiceSuffix)]string
	// people, when set, is the reason a call that would run without a
	// person (ask_agent, run_without_asking) pauses instead: the
	// endpoint's rules ask for people (a quorum or four eyes).
	people string
	esc    []escText
	// rates[i] is the reason of a call escalated by Rates[i].
	rates []string
	// sameField[i] is the first earlier threshold that reads the same
	// field as threshold i (two levels on one amount), or -1: the field is
	// read once per decision.
	sameField []int
}

type escText struct {
	prefix, suffix string // prefix + value + suffix
}

func endpointLabel(ep *Endpoint) string {
	if ep.Tool != "" {
		return fmt.Sprintf("tool %q (%s %s)", ep.Tool, ep.Method, ep.Path)
	}
	return ep.Method + " " + ep.Path
}

func newEndpointText(c *Connection, ep *Endpoint) *endpointText {
	label := endpointLabel(ep)
	t := &endpointText{rule: ep.Rule}
	if t.rule == "" {
		t.rule = defaultRule(c, ep, label)
	}
	t.auto = label + " is at the auto tier, so it runs without confirmation"
	t.review = label + " is at the review tier: the agent cannot run it, an operator must review it"
	t.never = label + " is at the never tier: agents may not call it"
	if ep.OperatorOnly {
		t.never = label + " is operator-gated: it runs only from the operator surface, never for agents"
	}
	t.hookCause = "the connection's hook asked for confirmation of " + label
	for i, s := range choiceSuffix {
		t.confirm[i] = label + " requires confirmation" + s
		t.hookAsk[i] = t.hookCause + s
	}
	switch r := c.RulesFor(ep); {
	case r.Required > 1:
		t.people = fmt.Sprintf("%s requires the approval of %d people (approval.required), whatever this credential's choice: waiting for them to approve it", label, r.Required)
	case r.SeparateApprover:
		t.people = label + " requires the approval of a person other than the caller (approval.separate_approver), whatever this credential's choice: waiting for them to approve it"
	}
	for i, th := range ep.Escalate {
		t.esc = append(t.esc, escText{
			prefix: "escalated to " + th.Escalate.String() + ": " + thresholdField(&th) + " ",
			suffix: " is above " + strconv.FormatFloat(th.Above, 'f', -1, 64),
		})
		same := -1
		for j := range i {
			if o := &ep.Escalate[j]; o.Source == th.Source && slices.Equal(o.Path, th.Path) {
				same = j
				break
			}
		}
		t.sameField = append(t.sameField, same)
	}
	for i := range ep.Rates {
		r := &ep.Rates[i]
		t.rates = append(t.rates, "escalated to "+r.Escalate.String()+": this credential called "+label+" more than "+
			strconv.FormatInt(r.Calls, 10)+" times within "+strconv.FormatInt(r.PerSeconds, 10)+" s (rate "+rateText(r)+")")
	}
	return t
}

func defaultRule(c *Connection, ep *Endpoint, label string) string {
	switch {
	case ep.OperatorOnly:
		return "connection " + c.Name + " " + label + " exposure.kind: operator-gated"
	case ep.Tool != "" && ep.Recorded == Review && ep.Tier == Confirm:
		return "connection " + c.Name + " " + label + " exposure.kind: requires-confirmation"
	}
	switch ep.Tier {
	case Confirm:
		return "connection " + c.Name + " " + label + " confirm: true"
	case Review, Never:
		return "connection " + c.Name + " " + label + ` confirm: "` + ep.Tier.String() + `"`
	}
	return "connection " + c.Name + " " + label + " (no confirm: auto)"
}

func thresholdField(t *Threshold) string {
	if t.Field != "" {
		return t.Field
	}
	return [...]string{"body", "query", "path"}[t.Source%3] + "." + strings.Join(t.Path, ".")
}
