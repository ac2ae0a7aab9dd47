package mcpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// The _meta keys a tools/call may carry (an extension of docs/mcp.md).
const (
	// MetaDelegated marks a delegated call (a sub-agent acting for the
	// agent), as "delegated" does on /v1/calls.
	MetaDelegated = "countersign/delegated"
	// MetaIdempotencyKey is the call's Idempotency-Key, as on /v1/calls.
	MetaIdempotencyKey = "countersign/idempotencyKey"
)

// operation is one operation tool of a credential's server.
type operation struct {
	name string
	conn *policy.Connection
	ep   *policy.Endpoint
}

// visibleOperations lists the operations a credential may see, named as
// docs/mcp.md says. Hidden: confirm-tier operations for refuse
// credentials, llm_callable: false and operator-gated tools, never-tier
// endpoints, every write for a read-only credential, and connections
// outside the credential's list.
func visibleOperations(cfg *config.Config, cred *countersign.Credential) []operation {
	var conns []*policy.Connection
	for _, c := range cfg.Policy.Connections() {
		if len(cred.Connections) == 0 || slices.Contains(cred.Connections, c.Name) {
			conns = append(conns, c)
		}
	}
	var ops []operation
	for _, c := range conns {
		for _, ep := range c.Endpoints {
			if !visible(ep, cred) {
				continue
			}
			name := config.ToolName(ep)
			if len(conns) > 1 {
				name = config.PrefixedToolName(c.Name, name)
			}
			ops = append(ops, operation{name: name, conn: c, ep: ep})
		}
	}
	return ops
}

func visible(ep *policy.Endpoint, cred *countersign.Credential) bool {
	switch {
	case ep.Hidden, ep.OperatorOnly, ep.Tier == policy.Never:
		return false
	case cred.ReadOnly && policy.IsMutating(ep.Method):
		return false
	case ep.Tier == policy.Confirm && cred.Choice == countersign.Refuse:
		return false
	}
	return true
}

// takesBody reports whether the method carries a request body.
func takesBody(method string) bool {
	return method == "POST" || method == "PUT" || method == "PATCH"
}

// pathParams are a template's parameter names in order.
func pathParams(template string) []string {
	var names []string
	for _, seg := range strings.Split(template, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			names = append(names, seg[1:len(seg)-1])
		}
	}
	return names
}

// toolOf is an operation's tool: description, input schema, annotations.
func toolOf(op operation, cfg *config.Config) *mcp.Tool {
	ep := op.ep
	props := map[string]any{}
	required := []string{}
	for _, p := range pathParams(ep.Path) {
		props[p] = map[string]any{"type": "string", "description": "path parameter {" + p + "}"}
		required = append(required, p)
	}
	if _, clash := props["query"]; !clash {
		props["query"] = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"},
			"description": "query parameters"}
	}
	if _, clash := props["body"]; !clash && takesBody(ep.Method) {
		// Typed, as strict schema validators require; an object, as JSON
		// APIs take (the value is sent as given).
		props["body"] = map[string]any{"type": "object", "description": "the JSON request body"}
	}
	schema := map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}

	desc := fmt.Sprintf("%s %s on %s. Tier: %s", ep.Method, ep.Path, op.conn.Name, tierText(ep))
	if ep.Tool != "" {
		if t := cfg.Connections[op.conn.Name].Tools[ep.Tool]; t != nil && t.Description != "" {
			desc = t.Description + ". " + desc
		}
	}
	ann := &mcp.ToolAnnotations{}
	if policy.IsMutating(ep.Method) {
		destructive := ep.Method == "DELETE" || ep.Tier == policy.Confirm
		ann.DestructiveHint = &destructive
	} else if ep.Method == "GET" || ep.Method == "HEAD" {
		ann.ReadOnlyHint = true
	}
	return &mcp.Tool{Name: op.name, Description: desc, InputSchema: schema, Annotations: ann}
}

func tierText(ep *policy.Endpoint) string {
	switch ep.Tier {
	case policy.Confirm:
		return "confirm (a person approves each call)."
	case policy.Review:
		return "review (an operator runs it; a call is queued for review)."
	}
	return "auto (runs at once)."
}

// toolArgs are an operation tool's arguments: path parameters by name,
// query and body.
type toolArgs map[string]json.RawMessage

// callOf builds the pipeline's call from a tool call's arguments and _meta.
func callOf(op operation, raw json.RawMessage, meta mcp.Meta) (*calls.Call, error) {
	args := toolArgs{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fault.Errorf(fault.InvalidRequest, "the arguments must be a JSON object: %v", err)
		}
	}
	params := pathParams(op.ep.Path)
	for k := range args {
		if !slices.Contains(params, k) && k != "query" && !(k == "body" && takesBody(op.ep.Method)) {
			return nil, fault.Errorf(fault.InvalidRequest, "unknown argument %q: the tool takes %s", k, strings.Join(argNames(op), ", "))
		}
	}
	var path strings.Builder
	for _, seg := range strings.Split(op.ep.Path, "/")[1:] {
		path.WriteByte('/')
		if !strings.HasPrefix(seg, "{") || !strings.HasSuffix(seg, "}") {
			path.WriteString(seg)
			continue
		}
		name := seg[1 : len(seg)-1]
		v, ok := args[name]
		if !ok {
			return nil, fault.Errorf(fault.InvalidRequest, "argument %q is required (path parameter {%s})", name, name)
		}
		s, err := scalar(v)
		if err != nil || s == "" {
			return nil, fault.Errorf(fault.InvalidRequest, "argument %q must be a non-empty string", name)
		}
		// A value is one segment: a / in it would be sent as %2F, which an
		// upstream that decodes the path reads as a separator, reaching an
		// endpoint the policy does not list (unless the parameter opts in).
		if strings.Contains(s, "/") && !slices.Contains(op.ep.SlashParams, name) {
			return nil, fault.Errorf(fault.InvalidRequest, "argument %q must not contain /: it is one path segment of %s %s", name, op.ep.Method, op.ep.Path)
		}
		path.WriteString(url.PathEscape(s))
	}
	c := &calls.Call{Connection: op.conn.Name, Method: op.ep.Method, Path: path.String(), Intent: policy.IntentRead}
	if policy.IsMutating(op.ep.Method) {
		c.Intent = policy.IntentWrite
	}
	if q, ok := args["query"]; ok && string(q) != "null" && !slices.Contains(params, "query") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(q, &m); err != nil {
			return nil, fault.New(fault.InvalidRequest, "argument \"query\" must be an object of strings")
		}
		c.Query = url.Values{}
		for k, v := range m {
			s, err := scalar(v)
			if err != nil {
				return nil, fault.Errorf(fault.InvalidRequest, "query parameter %q must be a string", k)
			}
			c.Query.Set(k, s)
		}
	}
	if b, ok := args["body"]; ok && string(b) != "null" && !slices.Contains(params, "body") {
		c.Body, c.ContentType = b, "application/json"
	}
	if d, ok := meta[MetaDelegated]; ok {
		b, isBool := d.(bool)
		if !isBool {
			return nil, fault.Errorf(fault.InvalidRequest, "_meta %q must be true or false", MetaDelegated)
		}
		c.Delegated = b
	}
	if k, ok := meta[MetaIdempotencyKey]; ok {
		s, isString := k.(string)
		if !isString {
			return nil, fault.Errorf(fault.InvalidRequest, "_meta %q must be a string", MetaIdempotencyKey)
		}
		c.IdempotencyKey = s
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// scalar reads a string argument; a number or a boolean is taken as its
// JSON text, as models often send ids as numbers.
func scalar(v json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "", err
	}
	switch x.(type) {
	case float64, bool:
		return string(bytes.TrimSpace(v)), nil
	}
	return "", fmt.Errorf("not a string")
}

func argNames(op operation) []string {
	names := pathParams(op.ep.Path)
	names = append(names, "query")
	if takesBody(op.ep.Method) {
		names = append(names, "body")
	}
	return names
}
