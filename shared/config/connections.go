package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/countersign/countersign/shared/canon"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign/shared/policy"
)

type loadedConn struct {
	conn *Connection
	tier *policy.Connection
	// locs says where each operation was configured (MCP tool name checks).
	locs []epLoc
}

// connections loads every connections/<name>/ folder. names holds every
// folder name seen, so credentials are checked against them even when a
// folder has problems.
func (l *loader) connections() ([]loadedConn, map[string]bool) {
	names := map[string]bool{}
	dir := l.where("connections")
	entries, err := fs.ReadDir(l.fsys, "connections")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, names
	}
	if err != nil {
		l.errs = append(l.errs, &Error{File: dir, Msg: fmt.Sprintf("cannot read: %v", err)})
		return nil, names
	}
	var out []loadedConn
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if !e.IsDir() {
			l.errs = append(l.errs, &Error{File: l.where("connections/" + name),
				Msg: "not a connection folder: connections/ holds one folder per connection, each with a policy.json"})
			continue
		}
		names[name] = true
		if !validName(name) {
			l.errs = append(l.errs, &Error{File: l.where("connections/" + name),
				Msg: fmt.Sprintf("%q is not a valid connection name: use lowercase letters, digits, _ and - ([a-z0-9][a-z0-9_-]*)", name)})
			continue
		}
		if c, ok := l.connection(name); ok {
			out = append(out, c)
		}
	}
	return out, names
}

// shapeOwner remembers which endpoint or tool has a method and path shape.
type shapeOwner struct {
	where  string // e.g. "endpoints[0]" or "tool archive_contact"
	method string
	path   string
	file   string // relative
}

type connLoad struct {
	l      *loader
	name   string
	shapes map[string]shapeOwner
	opIDs  map[string]string
	tools  map[string]string // tool name → relative file
	// shows are the endpoints' show reads, resolved once every endpoint
	// of the connection is loaded (resolveShows).
	shows []pendingShow
}

func (l *loader) connection(name string) (loadedConn, bool) {
	nerr := len(l.errs)
	rel := "connections/" + name + "/policy.json"
	s, raw, missing := l.read(rel)
	if missing {
		s.errf("", "missing: each connection folder needs a policy.json (base_url, endpoints, ...)")
		return loadedConn{}, false
	}
	if raw == nil {
		return loadedConn{}, false
	}
	var doc policyDoc
	if !s.decode("", raw, &doc) {
		return loadedConn{}, false
	}
	cl := &connLoad{l: l, name: name, shapes: map[string]shapeOwner{}, opIDs: map[string]string{}, tools: map[string]string{}}
	conn := &Connection{Name: name, Headers: map[string]string{}, Tools: map[string]*Tool{}}
	tc := &policy.Connection{Name: name, OutOfBandOnly: false}
	var locs []epLoc

	if doc.BaseURL == nil {
		s.errf("base_url", "missing: the upstream's absolute http(s) URL is required")
	} else {
		conn.BaseURL, _ = s.httpURL("base_url", *doc.BaseURL)
	}
	for _, k := range slices.Sorted(maps.Keys(doc.Headers)) {
		p := field("headers", k)
		if k == "" {
			s.errf(p, "a header needs a name")
		} else if ev, ok := s.expand(p, doc.Headers[k]); ok {
			conn.Headers[k] = ev
		}
	}
	if doc.ForwardHeaders != nil {
		conn.ForwardHeaders = s.forwardHeaders("forward_headers", json.RawMessage(doc.ForwardHeaders))
	}
	for i, item := range doc.Endpoints {
		if ep := cl.endpoint(s, rel, index("endpoints", i), json.RawMessage(item)); ep != nil {
			tc.Endpoints = append(tc.Endpoints, ep)
			locs = append(locs, epLoc{ep: ep, file: rel, path: index("endpoints", i)})
		}
	}
	tc.EscalateDelegated = doc.Delegations.EscalateConfirm
	for i, h := range doc.Hooks {
		p := field(index("hooks", i), "url")
		if h.URL == nil {
			s.errf(p, "missing: a hook needs an absolute http(s) url")
		} else if u, ok := s.httpURL(p, *h.URL); ok {
			conn.Hooks = append(conn.Hooks, Hook{URL: u})
		}
	}
	a := doc.Approval
	if a.Remember != nil {
		tc.Remember = s.remember("approval.remember", json.RawMessage(a.Remember))
	}
	if a.Required != nil {
		var n int
		if err := json.Unmarshal(a.Required, &n); err != nil || n < 2 || n > 5 {
			s.errf("approval.required", "%s is not a quorum: use a whole number of approvers from 2 to 5 (omit it for one)", string(a.Required))
		} else {
			tc.Required = n
		}
	}
	if a.Approvers != nil {
		tc.Approvers = s.approvers("approval.approvers", json.RawMessage(a.Approvers))
	}
	conn.OutOfBandOnly, tc.SeparateApprover, tc.Passkey = a.OutOfBandOnly, a.SeparateApprover, a.Passkey
	tc.Hooked = len(conn.Hooks) > 0
	// Under four eyes the approvers decide: nobody is asked in the client
	// that made the call, which is the person who may not approve it.
	// So under a quorum: one person in a client is not a quorum.
	tc.OutOfBandOnlySet = conn.OutOfBandOnly
	tc.OutOfBandOnly = conn.OutOfBandOnly || tc.SeparateApprover || tc.Required > 1 || tc.Passkey

	for _, t := range cl.loadTools() {
		conn.Tools[t.tool.Name] = t.tool
		tc.Endpoints = append(tc.Endpoints, t.ep)
		locs = append(locs, epLoc{ep: t.ep, file: t.file, path: "name"})
	}
	if doc.Escalate != nil {
		// A connection's rate rules apply to each of its endpoints, each
		// counted per credential and endpoint, after the endpoint's own.
		for _, r := range s.connectionRates(rel, json.RawMessage(doc.Escalate)) {
			for _, ep := range tc.Endpoints {
				ep.Rates = append(ep.Rates, r)
			}
		}
		for _, ep := range tc.Endpoints {
			if len(ep.Rates) > policy.MaxRates {
				s.errf("escalate", "%s %s has %d rate rules with its own: at most %d per endpoint (each is a store write per call)",
					ep.Method, ep.Path, len(ep.Rates), policy.MaxRates)
				break
			}
		}
	}
	cl.resolveShows(tc.Endpoints)
	return loadedConn{conn: conn, tier: tc, locs: locs}, len(l.errs) == nerr
}

// policyDoc is a connection's policy.json as written: the parts that are
// read field by field stay JSON.
type policyDoc struct {
	BaseURL        *string           `json:"base_url"`
	Headers        map[string]string `json:"headers"`
	ForwardHeaders jsontext.Value    `json:"forward_headers"`
	Endpoints      []jsontext.Value  `json:"endpoints"`
	Delegations    struct {
		EscalateConfirm bool `json:"escalateConfirm"`
	} `json:"delegations"`
	Hooks []struct {
		URL *string `json:"url"`
	} `json:"hooks"`
	Approval struct {
		OutOfBandOnly    bool           `json:"out_of_band_only"`
		Approvers        jsontext.Value `json:"approvers"`
		SeparateApprover bool           `json:"separate_approver"`
		Required         jsontext.Value `json:"required"`
		Remember         jsontext.Value `json:"remember"`
		Passkey          bool           `json:"passkey"`
	} `json:"approval"`
	Escalate jsontext.Value `json:"escalate"`
}

// endpointDoc is one of policy.json's endpoints as written.
type endpointDoc struct {
	Method             *string          `json:"method"`
	Path               *string          `json:"path"`
	Confirm            jsontext.Value   `json:"confirm"`
	OperationID        *string          `json:"operation_id"`
	Escalate           []jsontext.Value `json:"escalate"`
	EncodedSlashParams []string         `json:"encoded_slash_params"`
	Approval           struct {
		Approvers        jsontext.Value `json:"approvers"`
		SeparateApprover *bool          `json:"separate_approver"`
		OutOfBandOnly    *bool          `json:"out_of_band_only"`
		Required         jsontext.Value `json:"required"`
		Remember         jsontext.Value `json:"remember"`
		Passkey          *bool          `json:"passkey"`
		Editable         jsontext.Value `json:"editable"`
	} `json:"approval"`
	Show jsontext.Value `json:"show"`
}

// envName reports [A-Za-z_][A-Za-z0-9_]*.
func envName(s string) bool {
	return s != "" && !isDigit(s[0]) && allBytes(s, func(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' })
}

// expand replaces each ${env:NAME} with the variable's value, and each
// ${secretsmanager:NAME} with the secret's (see SecretRef;
// with LoadOptions.KeepSecretRefs these stay as they are).
func (s *src) expand(p, v string) (string, bool) {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), true
		}
		b.WriteString(v[:i])
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			s.errf(p, "unterminated ${: write ${env:NAME} or ${secretsmanager:NAME}")
			return "", false
		}
		inner := v[i+2 : i+j]
		if store, name, ok := strings.Cut(inner, ":"); ok && store == SecretsManager {
			val, ok := s.resolve(p, SecretRef{Store: store, Name: name})
			if !ok {
				return "", false
			}
			if s.l.keepRefs {
				val = v[i : i+j+1]
			}
			b.WriteString(val)
			v = v[i+j+1:]
			continue
		}
		name, ok := strings.CutPrefix(inner, "env:")
		if !ok || !envName(name) {
			s.errf(p, "%q is not supported: the substitutions are ${env:NAME} and ${secretsmanager:NAME}", "${"+inner+"}")
			return "", false
		}
		val, ok := s.l.env(name)
		if !ok {
			s.errf(p, "environment variable %s is not set (referenced as ${env:%s})", name, name)
			return "", false
		}
		b.WriteString(val)
		v = v[i+j+1:]
	}
}

const confirmAllowed = `omit confirm for auto, or use true, "review" or "never"`

// method checks an HTTP method.
func (s *src) method(p, m string) (string, bool) {
	if policy.ValidMethod(m) {
		return m, true
	}
	allowed := strings.Join(policy.Methods[:], ", ")
	if policy.ValidMethod(strings.ToUpper(m)) {
		s.errf(p, "%q must be upper case (%q); methods are %s", m, strings.ToUpper(m), allowed)
	} else {
		s.errf(p, "%q is not a method: use one of %s", m, allowed)
	}
	return "", false
}

// template checks a path template and returns its parameters and shape.
func (s *src) template(p, t string) (tmpl string, params []string, shape string, ok bool) {
	params, shape, err := policy.ParseTemplate(t)
	if err != nil {
		s.errf(p, "%q is not a path template: %v (a template starts with / and each segment is a literal or a whole {name}, at most %d parameters)", t, err, policy.MaxParams)
		return "", nil, "", false
	}
	return t, params, shape, true
}

// claim records a method and shape, reporting a duplicate.
func (cl *connLoad) claim(s *src, p string, o shapeOwner, shape string) bool {
	key := o.method + " " + shape
	if prev, dup := cl.shapes[key]; dup {
		in := ""
		if prev.file != o.file {
			in = " in " + prev.file
		}
		s.errf(p, "duplicate endpoint: %s %s has the same method and path shape as %s (%s %s)%s; each operation is listed once",
			o.method, o.path, prev.where, prev.method, prev.path, in)
		return false
	}
	cl.shapes[key] = o
	return true
}

func (cl *connLoad) endpoint(s *src, rel, p string, raw json.RawMessage) *policy.Endpoint {
	nerr := len(cl.l.errs)
	var doc endpointDoc
	if !s.decode(p, raw, &doc) {
		return nil
	}
	ep := &policy.Endpoint{}
	a := doc.Approval
	if a.Remember != nil {
		ep.Remember = s.remember(field(p, "approval.remember"), json.RawMessage(a.Remember))
	}
	if a.Editable != nil {
		ep.Editable = s.editable(field(p, "approval.editable"), json.RawMessage(a.Editable))
	}
	if a.Approvers != nil {
		ep.Approvers = s.approvers(field(p, "approval.approvers"), json.RawMessage(a.Approvers))
	}
	// Each key replaces the connection's for calls to this endpoint.
	if a.Required != nil {
		var n int
		if err := json.Unmarshal(a.Required, &n); err != nil || n < 1 || n > 5 {
			s.errf(field(p, "approval.required"), "%s is not a quorum: use a whole number of approvers from 2 to 5, or 1 for one approval whatever the connection asks", string(a.Required))
		} else {
			ep.Required = n
		}
	}
	ep.SeparateApprover, ep.OutOfBandOnly, ep.Passkey = a.SeparateApprover, a.OutOfBandOnly, a.Passkey
	var params []string
	var shape string
	tmplOK := false
	if doc.Method == nil {
		s.errf(field(p, "method"), "missing: use one of %s", strings.Join(policy.Methods[:], ", "))
	} else {
		ep.Method, _ = s.method(field(p, "method"), *doc.Method)
	}
	if doc.Path == nil {
		s.errf(field(p, "path"), "missing: a path template such as /contacts/{id} is required")
	} else {
		ep.Path, params, shape, tmplOK = s.template(field(p, "path"), *doc.Path)
	}
	confirmText := "(no confirm: auto)"
	if doc.Confirm != nil {
		switch c := string(doc.Confirm); c {
		case "true":
			ep.Tier, confirmText = policy.Confirm, "confirm: true"
		case `"review"`:
			ep.Tier, confirmText = policy.Review, `confirm: "review"`
		case `"never"`:
			ep.Tier, confirmText = policy.Never, `confirm: "never"`
		case "false":
			s.errf(field(p, "confirm"), "false is not allowed: %s", confirmAllowed)
		default:
			if len(c) > 40 {
				c = c[:40] + "..."
			}
			s.errf(field(p, "confirm"), "%s is not allowed: %s", c, confirmAllowed)
		}
	}
	ep.Recorded = ep.Tier
	if id := doc.OperationID; id != nil {
		switch prev, dup := cl.opIDs[*id]; {
		case *id == "":
			s.errf(field(p, "operation_id"), "must not be empty (omit it instead)")
		case dup:
			s.errf(field(p, "operation_id"), "%q is already the operation_id of %s: operation ids are unique within a connection", *id, prev)
		default:
			cl.opIDs[*id] = p
			ep.OperationID = *id
		}
	}
	for i, item := range doc.Escalate {
		ip := index(field(p, "escalate"), i)
		if isRate(json.RawMessage(item)) {
			if r, ok := s.rate(ip, json.RawMessage(item)); ok {
				r.Rule = fmt.Sprintf("%s %s rate %d calls per %d s: %s", rel, ip, r.Calls, r.PerSeconds, r.Escalate)
				ep.Rates = append(ep.Rates, r)
			}
			continue
		}
		if th, ok := s.threshold(ip, json.RawMessage(item), params, tmplOK); ok {
			ep.Escalate = append(ep.Escalate, th)
		}
	}
	if len(ep.Rates) > policy.MaxRates {
		s.errf(field(p, "escalate"), "%d rate rules: at most %d per endpoint, its connection's included (each is a store write per call)", len(ep.Rates), policy.MaxRates)
	}
	// Parameters whose value may hold an encoded slash (%2F): off by
	// default, since an upstream that decodes the path reads it as a
	// separator and may route to an endpoint this policy does not list.
	for i, name := range doc.EncodedSlashParams {
		ip := index(field(p, "encoded_slash_params"), i)
		switch {
		case tmplOK && !slices.Contains(params, name):
			s.errf(ip, "%q names no parameter of the endpoint's path", name)
		case slices.Contains(ep.SlashParams, name):
			s.errf(ip, "%q is listed twice", name)
		default:
			ep.SlashParams = append(ep.SlashParams, name)
		}
	}
	if doc.Show != nil {
		if show, ok := s.show(field(p, "show"), json.RawMessage(doc.Show), params, tmplOK); ok {
			ep.Show = show.show
			show.ep = ep
			cl.shows = append(cl.shows, show)
		}
	}
	if ep.Method != "" && tmplOK {
		cl.claim(s, p, shapeOwner{where: p, method: ep.Method, path: ep.Path, file: rel}, shape)
	}
	if len(cl.l.errs) != nerr {
		return nil
	}
	ep.Rule = fmt.Sprintf("%s %s %s %s %s", rel, p, ep.Method, ep.Path, confirmText)
	for i := range ep.Escalate {
		th := &ep.Escalate[i]
		th.Rule = fmt.Sprintf("%s %s.escalate[%d] %s above %v: %s", rel, p, i, th.Field, th.Above, th.Escalate)
	}
	return ep
}

func (s *src) threshold(p string, raw json.RawMessage, params []string, tmplOK bool) (policy.Threshold, bool) {
	var th policy.Threshold
	var doc struct {
		Field    *string        `json:"field"`
		Above    jsontext.Value `json:"above"`
		Escalate *string        `json:"escalate"`
	}
	if !s.decode(p, raw, &doc) {
		return th, false
	}
	good := true
	const fields = "use body.<json path>, query.<name> or path.<param>"
	if doc.Field == nil {
		s.errf(field(p, "field"), "missing: %s", fields)
		good = false
	} else {
		f := *doc.Field
		th.Field = f
		src, rest, _ := strings.Cut(f, ".")
		switch src {
		case "body":
			th.Source, th.Path = policy.SourceBody, strings.Split(rest, ".")
			if rest == "" || slices.Contains(th.Path, "") {
				s.errf(field(p, "field"), "%q is not a field: %s", f, fields)
				good = false
			}
		case "query":
			th.Source, th.Path = policy.SourceQuery, []string{rest}
			if rest == "" {
				s.errf(field(p, "field"), "%q is not a field: %s", f, fields)
				good = false
			}
		case "path":
			th.Source, th.Path = policy.SourcePath, []string{rest}
			if rest == "" {
				s.errf(field(p, "field"), "%q is not a field: %s", f, fields)
				good = false
			} else if tmplOK && !slices.Contains(params, rest) {
				have := "it has none"
				if len(params) > 0 {
					have = "its parameters: " + strings.Join(params, ", ")
				}
				s.errf(field(p, "field"), "%q names no parameter of the endpoint's path (%s)", f, have)
				good = false
			}
		default:
			s.errf(field(p, "field"), "%q is not a field: %s", f, fields)
			good = false
		}
	}
	var err error
	if v := doc.Above; v == nil {
		s.errf(field(p, "above"), "escalation rule without a number: above is required (a JSON number such as 10000)")
		good = false
	} else if k := canon.Kind(json.RawMessage(v)); k != "a number" {
		s.errf(field(p, "above"), "escalation rule without a number: above must be a JSON number, not %s", k)
		good = false
	} else if th.Above, err = strconv.ParseFloat(string(v), 64); err != nil {
		s.errf(field(p, "above"), "want a JSON number that fits a float64: %v", err)
		good = false
	}
	if t, ok := s.escalateTo(p, doc.Escalate); ok {
		th.Escalate = t
	} else {
		good = false
	}
	return th, good
}

// escalateTo reads an escalate[] rule's "escalate" (p is the rule's
// path): the tier it raises to, "review" or "never", the only two.
func (s *src) escalateTo(p string, to *string) (policy.Tier, bool) {
	if to == nil {
		s.errf(field(p, "escalate"), `missing: use "review" or "never"`)
		return 0, false
	}
	switch e := *to; e {
	case "review":
		return policy.Review, true
	case "never":
		return policy.Never, true
	}
	s.errf(field(p, "escalate"), `%q is not allowed: escalation only raises, to "review" or "never"`, *to)
	return 0, false
}

type loadedTool struct {
	tool *Tool
	ep   *policy.Endpoint
	file string // relative
}

// toolName reports [A-Za-z_][A-Za-z0-9_-]{0,63}.
func toolName(s string) bool {
	return s != "" && len(s) <= 64 && (isLetter(s[0]) || s[0] == '_') &&
		allBytes(s, func(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' })
}

func (cl *connLoad) loadTools() []loadedTool {
	dir := path.Join("connections", cl.name, "tools")
	entries, err := fs.ReadDir(cl.l.fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		cl.l.errs = append(cl.l.errs, &Error{File: cl.l.where(dir), Msg: fmt.Sprintf("cannot read: %v", err)})
		return nil
	}
	var out []loadedTool
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if t, ok := cl.tool(path.Join(dir, e.Name())); ok {
			out = append(out, t)
		}
	}
	return out
}

func (cl *connLoad) tool(rel string) (loadedTool, bool) {
	s, raw, _ := cl.l.read(rel)
	if raw == nil {
		return loadedTool{}, false
	}
	nerr := len(cl.l.errs)
	var doc struct {
		Name        *string `json:"name"`
		Description string  `json:"description"`
		Exposure    struct {
			Kind   *string `json:"kind"`
			Prompt string  `json:"prompt"`
		} `json:"exposure"`
		LLMCallable *bool `json:"llm_callable"`
		Call        *struct {
			Method *string `json:"method"`
			Path   *string `json:"path"`
		} `json:"call"`
	}
	if !s.decode("", raw, &doc) {
		return loadedTool{}, false
	}
	t := &Tool{Kind: KindOpen, LLMCallable: true, Description: doc.Description, Prompt: doc.Exposure.Prompt}
	if doc.Name == nil {
		s.errf("name", "missing: a tool needs a name (a letter or _, then letters, digits, _ or -, at most 64)")
	} else {
		n := *doc.Name
		switch prev, dup := cl.tools[n]; {
		case !toolName(n):
			s.errf("name", "%q is not a valid tool name: a letter or _, then letters, digits, _ or -, at most 64", n)
		case dup:
			s.errf("name", "%q is already the name of the tool in %s: tool names are unique within a connection", n, prev)
		default:
			cl.tools[n] = rel
		}
		t.Name = n
	}
	if k := doc.Exposure.Kind; k != nil {
		switch ToolKind(*k) {
		case KindOpen, KindRequiresConfirmation, KindOperatorGated:
			t.Kind = ToolKind(*k)
		default:
			s.errf("exposure.kind", `%q is not allowed: use "open" (the default), "requires-confirmation" or "operator-gated"`, *k)
		}
	}
	if doc.LLMCallable != nil {
		t.LLMCallable = *doc.LLMCallable
	}
	var shape string
	callOK := false
	if c := doc.Call; c == nil {
		s.errf("call", `missing: a tool needs "call": {"method": ..., "path": ...}`)
	} else {
		if c.Method == nil {
			s.errf("call.method", "missing: use one of %s", strings.Join(policy.Methods[:], ", "))
		} else {
			t.Method, _ = s.method("call.method", *c.Method)
		}
		if c.Path == nil {
			s.errf("call.path", "missing: a path template such as /contacts/{id}/archive is required")
		} else {
			t.Path, _, shape, callOK = s.template("call.path", *c.Path)
		}
	}
	if t.Method != "" && callOK {
		cl.claim(s, "call", shapeOwner{where: "tool " + t.Name, method: t.Method, path: t.Path, file: rel}, shape)
	}
	if len(cl.l.errs) != nerr {
		return loadedTool{}, false
	}
	ep := &policy.Endpoint{Method: t.Method, Path: t.Path, Tool: t.Name, Prompt: t.Prompt, Hidden: !t.LLMCallable}
	switch t.Kind {
	case KindOpen:
		ep.Tier, ep.Recorded = policy.Auto, policy.Auto
	case KindRequiresConfirmation:
		ep.Tier, ep.Recorded = policy.Confirm, policy.Review
	case KindOperatorGated:
		ep.Tier, ep.Recorded, ep.OperatorOnly = policy.Never, policy.Never, true
	}
	ep.Rule = fmt.Sprintf("%s %s %s %s exposure.kind: %s", rel, t.Name, t.Method, t.Path, t.Kind)
	if !t.LLMCallable {
		ep.Rule += ", llm_callable: false"
	}
	return loadedTool{tool: t, ep: ep, file: rel}, true
}

// approvers reads an approval.approvers list: e-mails, "@domain" and
// "group:<name>" entries, at least one, none twice.
func (s *src) approvers(p string, raw json.RawMessage) *policy.Approvers {
	var items []string
	if !s.decode(p, raw, &items) {
		return nil
	}
	if len(items) == 0 {
		s.errf(p, "an empty list lets nobody approve: name at least one e-mail, @domain or group:<name>, or omit approvers")
		return nil
	}
	a := &policy.Approvers{}
	seen := map[string]int{}
	for i, v := range items {
		ip := index(p, i)
		key := v // a group as given
		if !strings.HasPrefix(v, "group:") {
			key = policy.EmailKey(v) // NFC and ASCII case: how approvers are matched
		}
		if key == "" && strings.TrimSpace(v) != "" {
			s.errf(ip, "%q holds a character that Unicode normalization turns into ASCII (such as the Kelvin sign): write the address in plain letters", v)
			continue
		}
		if j, dup := seen[key]; dup {
			s.errf(ip, "%q is already %s", v, index(p, j))
			continue
		}
		seen[key] = i
		switch {
		case strings.HasPrefix(v, "group:"):
			g := strings.TrimPrefix(v, "group:")
			if g == "" || strings.TrimSpace(g) != g {
				s.errf(ip, "%q: name the identity provider's group after group:", v)
				continue
			}
			a.Groups = append(a.Groups, g)
		case strings.HasPrefix(v, "@"):
			if d := key[1:]; !validDomain(d) {
				s.errf(ip, "%q is not an e-mail domain: write @example.com", v)
				continue
			}
			a.Domains = append(a.Domains, key)
		default:
			local, domain, ok := strings.Cut(key, "@")
			if !ok || local == "" || !validDomain(domain) || strings.ContainsAny(local, " @") {
				s.errf(ip, "%q is not an approver: use an e-mail (ada@example.com), a domain (@example.com) or group:<name>", v)
				continue
			}
			a.Emails = append(a.Emails, key)
		}
	}
	return a
}

// validDomain reports a DNS name with at least one dot.
func validDomain(d string) bool {
	if !strings.Contains(d, ".") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") || strings.Contains(d, "..") {
		return false
	}
	return allBytes(d, func(c byte) bool { return isLetter(c) || isDigit(c) || c == '-' || c == '.' })
}
