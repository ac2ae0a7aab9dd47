package calls

import (
	"encoding/json"
	"net/url"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// Request is the body of POST /v1/calls (docs/api.md, Agent calls), the request
// tool's vocabulary. The HTTP surface and the command-line tool's explain
// both read it with ParseRequest, so they cannot drift.
type Request struct {
	Connection     string            `json:"connection"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Query          map[string]string `json:"query"`
	Body           json.RawMessage   `json:"body"`
	Intent         *policy.Intent    `json:"intent"`
	ConfirmationID string            `json:"confirmation_id"`
	Delegated      bool              `json:"delegated"`
	Client         *RequestClient    `json:"client"`
}

// RequestClient is the agent's self-description in a /v1/calls body.
type RequestClient struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ParseRequest reads a /v1/calls body strictly: unknown fields in any case,
// a field name in the wrong case, duplicate keys (at any depth, the call's
// body included), nesting over 64 levels, numbers that do not survive a
// round trip and trailing data are refused. The error is invalid_request
// and names the field. The client, when given, can ask a person (the
// request tool's handshake).
func ParseRequest(b []byte) (*Call, *Client, error) {
	var r Request
	if err := callbody.DecodeStrict(b, &r, nil); err != nil {
		return nil, nil, fault.Errorf(fault.InvalidRequest, "malformed JSON body: %v", err)
	}
	switch {
	case r.Connection == "":
		return nil, nil, fault.New(fault.InvalidRequest, "connection is required")
	case r.Method == "":
		return nil, nil, fault.New(fault.InvalidRequest, "method is required")
	}
	c := &Call{Connection: r.Connection, Method: r.Method, Path: r.Path, Delegated: r.Delegated, ConfirmationID: r.ConfirmationID}
	if len(r.Query) > 0 {
		c.Query = make(url.Values, len(r.Query))
		for k, v := range r.Query {
			c.Query.Set(k, v)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	switch {
	case r.Intent == nil:
		return nil, nil, fault.New(fault.InvalidRequest, "intent is required: read, write or confirmed_write")
	case *r.Intent == policy.IntentConfirmedWrite && r.ConfirmationID == "":
		return nil, nil, fault.New(fault.InvalidRequest, "confirmation_id is required with intent confirmed_write")
	case *r.Intent != policy.IntentConfirmedWrite && r.ConfirmationID != "":
		return nil, nil, fault.New(fault.InvalidRequest, "confirmation_id goes only with intent confirmed_write")
	}
	c.Intent = *r.Intent
	if len(r.Body) > 0 && string(r.Body) != "null" {
		c.Body, c.ContentType = r.Body, "application/json"
	}
	var client *Client
	if r.Client != nil {
		client = &Client{Name: r.Client.Name, Version: r.Client.Version, CanAsk: true}
	}
	return c, client, nil
}

// Explain decides a call exactly as Do would, without any I/O: hooks are
// not asked (the answer is HookNone) and nothing is stored or sent. It
// returns what the decision was made from, the decision and the rules it
// went through (policy.Explain), or the error Do would answer before
// deciding (a body that is not strict JSON).
func (s *Service) Explain(cred *countersign.Credential, c *Call) (policy.Input, policy.Decision, []policy.Check, error) {
	if err := c.Validate(); err != nil {
		return policy.Input{}, policy.Decision{}, nil, err
	}
	p, err := prepare(c, s.Current())
	if err != nil {
		return policy.Input{}, policy.Decision{}, nil, err
	}
	m, ok := s.Current().Policy.Resolve(p.Connection, p.Method, p.Path)
	in := policy.Input{Call: &p.tier, Credential: tierCredential(cred)}
	d, checks := policy.Explain(m, ok, in)
	return in, d, checks, nil
}
