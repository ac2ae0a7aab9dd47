package policy

import (
	"net/url"

	"github.com/countersign/countersign"
)

// FieldSource says which part of a call a threshold field addresses.
type FieldSource uint8

// Threshold field sources: body.<json path>, query.<name>, path.<param>.
const (
	SourceBody FieldSource = iota
	SourceQuery
	SourcePath
)

// Threshold raises an endpoint's tier when a numeric field of the call is
// above a limit: {"field": "body.amount", "above": 10000, "escalate": "review"}.
type Threshold struct {
	// Field is the rule as written, e.g. "body.amount".
	Field string
	// Source and Path are Field compiled: SourceBody with Path ["amount"].
	Source FieldSource
	Path   []string
	// Above is the limit; a value strictly greater escalates.
	Above float64
	// Escalate is Review or Never.
	Escalate Tier
	// Rule names the rule for explanations, e.g.
	// `connections/crm/policy.json endpoints[6].escalate[0] body.amount above 10000: review`;
	// empty means Field.
	Rule string
}

// Endpoint is one operation of a connection, compiled from policy.json or a
// custom tool.
type Endpoint struct {
	// Approvers is the endpoint's approval.approvers, replacing its
	// connection's; nil means the connection's.
	Approvers *Approvers
	// Required, SeparateApprover and OutOfBandOnly are the endpoint's
	// approval.required, approval.separate_approver and
	// approval.out_of_band_only, replacing its connection's for calls to
	// it; 0 and nil mean the connection's (Connection.RulesFor).
	Required         int
	SeparateApprover *bool
	OutOfBandOnly    *bool
	Method           string
	Path             string // the template, e.g. /contacts/{id}
	OperationID      string
	// Tool is the custom tool's name when the operation comes from tools/*.json.
	Tool string
	// Tier is the configured tier an agent's call starts from. An
	// operator-gated tool is Never for agents.
	Tier Tier
	// Recorded is the tier recorded in the tool registry: a
	// requires-confirmation tool is recorded at Review but pauses like Confirm.
	Recorded Tier
	// OperatorOnly marks an operator-gated tool (runs only from the operator surface).
	OperatorOnly bool
	// Hidden marks a tool with llm_callable: false; agents cannot see or call it.
	Hidden bool
	// Prompt is the tool's confirmation prompt, if any.
	Prompt   string
	Escalate []Threshold
	// Rates are the endpoint's rate rules, its own and then its
	// connection's (escalate[] with "rate"); Input.Counts holds the
	// call's count in each one's window.
	Rates []Rate
	// Remember is the endpoint's approval.remember, replacing its
	// connection's (RememberFor); nil means the connection's.
	Remember *Remember
	// Editable is the endpoint's approval.editable: the fields an
	// approver may change when approving ("body.<json path>",
	// "query.<name>"; never path parameters or headers).
	Editable []string
	// SlashParams names the template's parameters whose value may hold an
	// encoded slash (%2F); a %2F anywhere else is refused before the
	// call is decided (policy.json encoded_slash_params).
	SlashParams []string
	// Show is the endpoint's show read (policy.json "show"): a path
	// template of an auto-tier GET of the same connection whose
	// parameters are the endpoint's; nil without one. The decision never
	// reads it: the lifecycle runs the read for the person to see.
	Show *Show
	// Rule names where the configured tier comes from, for explanations,
	// e.g. `connections/crm/policy.json endpoints[1] DELETE /contacts/{id} confirm: true`.
	Rule string
	// Passkey is the endpoint's approval.passkey, replacing its
	// connection's; nil means the connection's.
	Passkey *bool

	// Set by NewPolicy: the template's parameter names and the
	// precomputed explanations.
	params []string
	text   *endpointText
}

// Show is an endpoint's show read, resolved at load.
type Show struct {
	// Path is the template, e.g. /contacts/{id}; its parameters are the
	// endpoint's.
	Path string
	// Recheck reads it again right before the write (default true).
	Recheck bool
}

// Connection is one upstream API and its compiled endpoints.
type Connection struct {
	Name      string
	Endpoints []*Endpoint
	// EscalateDelegated is delegations.escalateConfirm: a delegated call at
	// the confirm tier becomes review.
	EscalateDelegated bool
	// Hooked is true when the connection has hooks to ask.
	Hooked bool
	// OutOfBandOnly forbids approval through the client
	// (approval.out_of_band_only, and implied by approval.separate_approver
	// and approval.required); an endpoint may set its own (RulesFor).
	OutOfBandOnly bool
	// OutOfBandOnlySet is approval.out_of_band_only as configured, before
	// four eyes and a quorum imply it.
	OutOfBandOnlySet bool
	// Approvers is approval.approvers: who may approve its calls (nil:
	// anyone holding a link); an endpoint's own list replaces it.
	Approvers *Approvers
	// SeparateApprover is approval.separate_approver: the person who made a
	// call may not approve it (four eyes).
	SeparateApprover bool
	// Required is approval.required: how many distinct people must approve
	// a call (2 to 5); 0 means one.
	Required int
	// Remember is approval.remember: how long and how many calls an
	// approver may allow at once (RememberFor); nil offers no grant.
	Remember *Remember
	// Passkey is approval.passkey: each approval is a signed-in person's
	// passkey assertion over what is approved.
	Passkey bool

	router router
	text   *connText
}

// Rules are the approval rules in force for calls to one endpoint: its
// own approval block's, else its connection's.
type Rules struct {
	// Required is how many distinct people must approve (2 to 5); 0 or 1:
	// one approval decides.
	Required int
	// SeparateApprover: the person who made the call may not approve it.
	SeparateApprover bool
	// OutOfBandOnly: only the approvers decide, never the client that made
	// the call. Four eyes, a quorum and named approvers imply it: the
	// person in the client may not approve, one person is not a quorum,
	// and the person in the client may not be among those named. So does
	// a passkey: the client's dialog cannot sign.
	OutOfBandOnly bool
	// Passkey: each approval is a signed-in person's passkey assertion.
	Passkey bool
}

// RulesFor is the approval rules for calls to ep, one of c's endpoints (nil:
// the connection's own): each of ep's approval keys replaces c's.
func (c *Connection) RulesFor(ep *Endpoint) Rules {
	r := Rules{Required: c.Required, SeparateApprover: c.SeparateApprover, OutOfBandOnly: c.OutOfBandOnlySet, Passkey: c.Passkey}
	if ep != nil {
		if ep.Required > 0 {
			r.Required = ep.Required
		}
		if ep.SeparateApprover != nil {
			r.SeparateApprover = *ep.SeparateApprover
		}
		if ep.OutOfBandOnly != nil {
			r.OutOfBandOnly = *ep.OutOfBandOnly
		}
		if ep.Passkey != nil {
			r.Passkey = *ep.Passkey
		}
	}
	if r.Required < 2 {
		r.Required = 0
	}
	// Named approvers decide through their links, signed in: the client
	// that made the call is not asked, as its person may not be one of them.
	named := c.Approvers != nil
	if ep != nil && ep.Approvers != nil {
		named = true
	}
	r.OutOfBandOnly = r.OutOfBandOnly || r.SeparateApprover || r.Required > 1 || named || r.Passkey
	return r
}

// PasskeyAlone reports whether a passkey is all that keeps calls to ep
// (nil: the connection's own) from the client that made them: no four
// eyes, no quorum, no approvers named, no out_of_band_only. The person
// who made the call may then approve it on the page with their passkey
// (URL mode), never in the client's dialog.
func (c *Connection) PasskeyAlone(ep *Endpoint) bool {
	r := c.RulesFor(ep)
	if !r.Passkey || r.SeparateApprover || r.Required > 1 || c.Approvers != nil || ep != nil && ep.Approvers != nil {
		return false
	}
	set := c.OutOfBandOnlySet
	if ep != nil && ep.OutOfBandOnly != nil {
		set = *ep.OutOfBandOnly
	}
	return !set
}

// Strictest is what r and o both ask: the larger quorum, four eyes if
// either keeps it, out of band if either is (a batch of operations asks
// what its strictest operation does).
func (r Rules) Strictest(o Rules) Rules {
	return Rules{Required: max(r.Required, o.Required), SeparateApprover: r.SeparateApprover || o.SeparateApprover,
		OutOfBandOnly: r.OutOfBandOnly || o.OutOfBandOnly, Passkey: r.Passkey || o.Passkey}
}

// Params holds the path parameters of a match without allocating.
type Params struct {
	n int
	// names points at the endpoint's own list (Endpoint.params), never
	// written: Resolve does not copy it, and Params stays comparable.
	names  *[]string
	values [maxParams]string
}

const maxParams = 8

// Len returns the number of parameters.
func (p *Params) Len() int { return p.n }

// At returns the i-th parameter's name and value.
func (p *Params) At(i int) (name, value string) { return (*p.names)[i], p.values[i] }

// Get returns the value of the named parameter.
func (p *Params) Get(name string) (string, bool) {
	for i := 0; i < p.n; i++ {
		if (*p.names)[i] == name {
			return p.values[i], true
		}
	}
	return "", false
}

// Map returns the parameters as a new map (allocates; not for the hot path).
func (p *Params) Map() map[string]string {
	m := make(map[string]string, p.n)
	for i := 0; i < p.n; i++ {
		m[(*p.names)[i]] = p.values[i]
	}
	return m
}

// Match is a resolved operation.
type Match struct {
	Connection *Connection
	Endpoint   *Endpoint
	Params     Params
}

// Call is what an agent asked for.
type Call struct {
	Connection string
	Method     string
	Path       string // concrete path, e.g. /contacts/12
	Query      url.Values
	// Body is the decoded JSON body (shared/callbody, or encoding/json with
	// UseNumber, so numbers are json.Number; float64 is accepted too), or nil.
	Body any
	// BodyForm holds the values of a form-encoded body. Body thresholds read
	// them like query parameters, and read Body as well when both are set
	// (a form-encoded body that is also JSON).
	BodyForm url.Values
	// BodyUnreadable, when not empty, says why the body the endpoint
	// receives cannot be checked (not JSON, a content type no threshold can
	// read, malformed). Every body threshold then escalates (fail closed),
	// with this as its reason. It completes "the body could not be checked: ".
	BodyUnreadable string
	Intent         Intent
	Delegated      bool
}

// Credential is what the decision needs to know about the caller.
type Credential struct {
	ID       string
	Choice   countersign.Choice
	ReadOnly bool
	// Connections limits the credential; empty means all.
	Connections []string
}

// Input is everything a decision depends on besides the policy.
type Input struct {
	Call       *Call
	Credential *Credential
	// Hook is the connection's hook answer (HookNone when there is no hook).
	Hook HookAnswer
	// Counts[i] is how many calls of the endpoint this credential made in
	// the current window of its Rates[i], this call included (the
	// pipeline counts them in the store). A rate without a count (Explain,
	// a re-decision that does not count) escalates nothing.
	Counts []int64
}

// Decision is the result of evaluating a call.
type Decision struct {
	// Tier is the effective tier after escalation and hooks.
	Tier Tier
	// Configured is the tier from the vocabulary, before escalation.
	Configured Tier
	Outcome    Outcome
	// Code is set when Outcome is Deny.
	Code Code
	// Reason explains the decision in a sentence.
	Reason string
	// Escalated is true when a threshold or delegation rule raised the tier.
	Escalated bool
	// Rule names the rule that decided (a config location or a built-in rule).
	Rule string
	// Notice is true for ask_agent executions of confirm-tier calls: the
	// response tells the agent the operation requires confirmation.
	Notice bool
	// Match is the resolved operation (zero when unknown_operation).
	Match Match
}
