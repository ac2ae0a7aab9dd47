package calls

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// Call is one call from any surface, as the agent made it.
type Call struct {
	Connection string
	Method     string
	// Path is the concrete path in its escaped (wire) form, e.g. /contacts/12.
	Path string
	// Query is the call's query; with RawQuery set it is RawQuery parsed.
	Query url.Values
	// RawQuery, when set, is sent upstream as it is (REST pass-through).
	RawQuery string
	// Body is the request body to send upstream; nil sends none.
	Body []byte
	// ContentType is the body's media type.
	ContentType string
	// Forward are the agent's request headers (REST) by lower-case name,
	// as events carry them. Only those the connection forwards are read:
	// content negotiation and its forward_headers (readHeaders).
	Forward   map[string]string
	Intent    policy.Intent
	Delegated bool
	// ConfirmationID names the approval this call redeems.
	ConfirmationID string
	// IdempotencyKey is the agent's Idempotency-Key: sent upstream as
	// <credential id>:<key> when the call executes.
	IdempotencyKey string
}

// Validate refuses what no surface may send and puts the path in its one
// canonical form (policy.CanonicalPath), which the call is then routed,
// bound, shown and sent upstream with: a path with a query, fragment, dot
// segments or empty segments (such a path could match one endpoint here and
// reach another upstream, which may normalise it), a segment holding a
// backslash, a ;, a control character or invalid UTF-8, and a query name
// that upstreams read differently (callbody.CheckPair) are invalid_request.
// An encoded slash is checked against the endpoint when the call is
// prepared. Validate may be called again: a canonical path stays as it is.
func (c *Call) Validate() error {
	switch {
	case c.Connection == "":
		return fault.New(fault.InvalidRequest, "connection is required")
	case !policy.ValidMethod(c.Method):
		return fault.Errorf(fault.InvalidRequest, "method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", c.Method)
	case c.Path == "" || c.Path[0] != '/':
		return fault.New(fault.InvalidRequest, "path is required and must start with /")
	case strings.ContainsAny(c.Path, "?#"):
		return fault.New(fault.InvalidRequest, "path must not contain a query or fragment: put query parameters in query")
	case HasDotSegment(c.Path):
		return fault.New(fault.InvalidRequest, "path must not contain . or .. segments")
	case strings.Contains(c.Path, "//"):
		return fault.New(fault.InvalidRequest, "path must not contain empty segments (//)")
	}
	canon, _, err := policy.CanonicalPath(c.Path)
	if err != nil {
		return fault.Errorf(fault.InvalidRequest, "%v", err)
	}
	c.Path = canon
	for k, vs := range c.Query {
		for _, v := range vs {
			if err := callbody.CheckPair(k, v); err != nil {
				return fault.Errorf(fault.InvalidRequest, "query: %v", err)
			}
		}
		if len(vs) == 0 {
			if err := callbody.CheckPair(k, ""); err != nil {
				return fault.Errorf(fault.InvalidRequest, "query: %v", err)
			}
		}
	}
	return nil
}

// checkSlashes refuses an encoded slash (%2F, the canonical spelling) in a
// segment unless it is the value of a parameter the endpoint lets hold one
// (policy.json encoded_slash_params): an upstream that decodes the path
// before routing would run another endpoint than the one decided.
func checkSlashes(c *Call, pol *policy.Set) error {
	if !strings.Contains(c.Path, "%2F") {
		return nil
	}
	m, ok := pol.Resolve(c.Connection, c.Method, c.Path)
	if ok && m.Endpoint != nil {
		for i := range m.Params.Len() {
			name, v := m.Params.At(i)
			if strings.Contains(v, "%2F") && !slices.Contains(m.Endpoint.SlashParams, name) {
				return fault.Errorf(fault.InvalidRequest, "path segment %q holds an encoded slash (%%2F), which upstreams that decode the path read as a separator; "+
					"{%s} of %s %s does not list it in encoded_slash_params", v, name, m.Endpoint.Method, m.Endpoint.Path)
			}
		}
		return nil
	}
	for seg := range strings.SplitSeq(c.Path[1:], "/") {
		if strings.Contains(seg, "%2F") {
			return fault.Errorf(fault.InvalidRequest, "path segment %q holds an encoded slash (%%2F), which upstreams that decode the path read as a separator", seg)
		}
	}
	return nil
}

// HasDotSegment reports a "." or ".." segment, also percent-encoded, or a
// segment that cannot be unescaped.
func HasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if !strings.ContainsAny(seg, ".%") {
			continue // nothing to unescape, and not a dot segment
		}
		if u, err := url.PathUnescape(seg); err != nil || u == "." || u == ".." {
			return true
		}
	}
	return false
}

// prepared is a call with what the decision and the binding read of it.
type prepared struct {
	*Call
	// cfg is the configuration the call is decided and sent with, read
	// once when it starts (Service.Current).
	cfg  *config.Config
	tier policy.Call
	// arg is the body's form in the binding: the JSON itself, a string for
	// other text, {"base64": ...} for bytes, null for none.
	arg json.RawMessage
	// isJSON is set when the body was read as strict JSON.
	isJSON bool
	// hook is the hooks' answer, when they were asked (for the audit).
	hook *policy.HookAnswer
	// headers are the forwarded headers that bind, negotiation those that
	// do not (readHeaders).
	headers, negotiation map[string]string
}

// prepare reads the call's body once, by the one rule of package callbody:
// strict JSON (no duplicate keys, nesting within 64 levels, numbers that
// survive a round trip, nothing trailing) under a JSON content type, a
// strict form under a form one, and anything else unreadable, which makes
// a body threshold escalate. A body that claims to be JSON or a form and
// is not is refused with 400, as is a method override in the query or the
// form (an upstream that honours _method would run another operation than
// the one decided).
func prepare(c *Call, cfg *config.Config) (*prepared, error) {
	if err := checkSlashes(c, cfg.Policy); err != nil {
		return nil, err
	}
	p := &prepared{Call: c, cfg: cfg}
	p.tier = policy.Call{Connection: c.Connection, Method: c.Method, Path: c.Path, Query: c.Query, Intent: c.Intent, Delegated: c.Delegated}
	b := callbody.Read(c.ContentType, c.Body, nil)
	if b.Err != nil {
		return nil, fault.Errorf(fault.InvalidRequest, "body: %v", b.Err)
	}
	if hasMethodOverride(c.Query) || hasMethodOverride(b.Form) {
		return nil, fault.New(fault.InvalidRequest, "a _method parameter (a method override) is refused: send the call with its real method")
	}
	b.ApplyTo(&p.tier)
	p.isJSON = b.Kind == callbody.JSON
	p.arg = bodyArg(c.Body, p.isJSON)
	if err := p.readHeaders(); err != nil {
		return nil, err
	}
	return p, nil
}

// hasMethodOverride reports a parameter that PHP or Rails reads as the
// _method key, in any case: _method, and _method followed by a bracket
// (_method[], _method[x]) or a dot (_method.x).
func hasMethodOverride(v url.Values) bool {
	const name = "_method"
	for k := range v {
		if len(k) >= len(name) && strings.EqualFold(k[:len(name)], name) &&
			(len(k) == len(name) || k[len(name)] == '[' || k[len(name)] == '.') {
			return true
		}
	}
	return false
}

// bodyArg is the JSON form of a body for the binding.
func bodyArg(b []byte, isJSON bool) json.RawMessage {
	switch {
	case len(b) == 0:
		return json.RawMessage("null")
	case isJSON:
		return b
	case utf8.Valid(b):
		s, _ := json.Marshal(string(b))
		return s
	default:
		s, _ := json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(b)})
		return s
	}
}

// operation builds the bound operation of a resolved call, keeping what
// replaying it needs: the body's bytes when they are not its JSON form,
// the content type, a raw query sent as it was, and the forwarded headers
// (those of forward_headers bound in its arguments, content negotiation
// beside them). A call that resolved to no endpoint (unknown, hidden)
// binds its concrete path in the endpoint's place, so that its binding
// still tells two calls apart.
func (p *prepared) operation(cred *countersign.Credential, m *policy.Match) (countersign.Operation, error) {
	return p.operationWith(cred, m, p.headers)
}

// operationWith is operation with the given forwarded headers in the
// binding in place of the call's own: a redemption binds with the approved
// request's headers, which it replays.
func (p *prepared) operationWith(cred *countersign.Credential, m *policy.Match, headers map[string]string) (countersign.Operation, error) {
	endpoint, params := p.Path, map[string]string{}
	if m.Endpoint != nil {
		endpoint, params = m.Endpoint.Path, m.Params.Map()
	}
	args := countersign.Args{Path: params, Query: confirm.QueryArgs(p.Query), Body: p.arg, Headers: headers}
	op, err := confirm.NewOperation(cred.ID, p.Connection, p.Method, p.Path, endpoint, args)
	if err != nil {
		return op, fault.Wrap(err, "the call could not be bound to an approval")
	}
	if len(p.Body) > 0 {
		op.ContentType = p.ContentType
		// A stored JSON body comes back compacted: keep the bytes unless
		// that gives them back exactly.
		if stored, err := json.Marshal(p.arg); !p.isJSON || err != nil || string(stored) != string(p.Body) {
			op.Payload = p.Body
		}
	}
	op.RawQuery, op.Negotiation = p.RawQuery, p.negotiation
	if m.Endpoint != nil && m.Endpoint.Show != nil {
		op.Show = showRead(m.Endpoint.Show, params)
	}
	if m.Endpoint != nil {
		// Recorded with the call: what an approver may change does not
		// change while it waits.
		op.Editable = m.Endpoint.Editable
	}
	return op, nil
}

// Bind returns the bound operation of a call without deciding or running
// it: code mode compares a replayed call with its journal by binding. It
// resolves the call as Do does; a call that names no endpoint binds its
// concrete path.
func (s *Service) Bind(cred *countersign.Credential, c *Call) (countersign.Operation, error) {
	if err := c.Validate(); err != nil {
		return countersign.Operation{}, err
	}
	p, err := prepare(c, s.Current())
	if err != nil {
		return countersign.Operation{}, err
	}
	m, ok := p.cfg.Policy.Resolve(p.Connection, p.Method, p.Path)
	if !ok {
		m = policy.Match{}
	}
	return p.operation(cred, &m)
}
