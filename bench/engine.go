package bench

import (
	"fmt"

	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/policy"
)

// Result is the part of a decision the three engines must agree on.
type Result struct {
	Outcome policy.Outcome
	// Code is set when Outcome is Deny.
	Code policy.Code
	// Tier is the effective tier, after escalation.
	Tier policy.Tier
	// Escalated is true when a threshold or delegation rule raised the tier.
	Escalated bool
	// Notice is true when an ask_agent credential runs a confirm-tier call.
	Notice bool
}

// String describes the result, e.g. "deny review review_required escalated".
func (r Result) String() string {
	s := fmt.Sprintf("%s %s", r.Outcome, r.Tier)
	if r.Code != policy.CodeNone {
		s += " " + string(r.Code)
	}
	if r.Escalated {
		s += " escalated"
	}
	if r.Notice {
		s += " notice"
	}
	return s
}

// Engine decides a call made with a credential.
type Engine interface {
	// Name is the engine's name in benchmark names and the table.
	Name() string
	// Decide decides the call. An error means the engine could not decide
	// (the call is then refused by whoever asked).
	Decide(c *policy.Call, cred *policy.Credential) (Result, error)
}

// routerRefusal is the answer for a call the router does not resolve: the
// engines are not asked, as in countersign, where what the policy does not
// list is denied before any rule runs.
var routerRefusal = Result{Outcome: policy.Deny, Code: policy.CodeUnknownOperation, Tier: policy.Never}

// Bench is a loaded configuration and the three engines built from it.
type Bench struct {
	Config *config.Config
	// Credentials are the decision's view of the configuration's
	// credentials, by id (the gateway builds the same view per call).
	Credentials map[string]*policy.Credential
	Engines     []Engine
}

// Load loads the configuration directory dir with shared/config.Load, as
// the server does, and builds the countersign, OPA and Cedar engines from
// its compiled policy.
func Load(dir string) (*Bench, error) {
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	b := &Bench{Config: cfg, Credentials: make(map[string]*policy.Credential, len(cfg.Credentials))}
	for _, c := range cfg.Credentials {
		if len(c.Connections) > 0 {
			return nil, fmt.Errorf("credential %s: credentials limited to connections are not encoded in Rego and Cedar", c.ID)
		}
		b.Credentials[c.ID] = &policy.Credential{ID: c.ID, Choice: c.Choice, ReadOnly: c.ReadOnly, Connections: c.Connections}
	}
	o, err := NewOPA(cfg.Policy, b.Credentials)
	if err != nil {
		return nil, fmt.Errorf("opa: %w", err)
	}
	c, err := NewCedar(cfg.Policy, b.Credentials)
	if err != nil {
		return nil, fmt.Errorf("cedar: %w", err)
	}
	b.Engines = []Engine{NewCountersign(cfg.Policy), o, c}
	return b, nil
}
