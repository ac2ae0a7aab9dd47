package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/countersign/countersign/shared/canon"
	"io/fs"
	"path"
	"slices"
	"strings"

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
	m, ok := s.object("", raw, "base_url", "headers", "forward_headers", "endpoints", "delegations", "hooks", "approval", "escalate")
	if !ok {
		return loadedConn{}, false
	}
	cl := &connLoad{l: l, name: name, shapes: map[string]shapeOwner{}, opIDs: map[string]string{}, tools: map[string]string{}}
	conn := &Connection{Name: name, Headers: map[string]string{}, Tools: map[string]*Tool{}}
	tc := &policy.Connection{Name: name, OutOfBandOnly: false}
	var locs []epLoc

	if v, ok := m["base_url"]; !ok {
		s.errf("base_url", "missing: the upstream's absolute http(s) URL is required")
	} else if u, ok := s.str("base_url", v); ok {
		conn.BaseURL, _ = s.httpURL("base_url", u)
	}
	if v, ok := m["headers"]; ok && canon.Kind(v) != "an object" {
		s.errf("headers", "want a JSON object of header names to string values, got %s", canon.Kind(v))
	} else if ok {
		var h map[string]json.RawMessage
		_ = json.Unmarshal(v, &h)
		keys := make([]string, 0, len(h))
		for k := range h {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := field("headers", k)
			if k == "" {
				s.errf(p, "a header needs a name")
				continue
			}
			if sv, ok := s.str(p, h[k]); ok {
				if ev, ok := s.expand(p, sv); ok {
					conn.Headers[k] = ev
				}
			}
		}
	}
	if v, ok := m["forward_headers"]; ok {
		conn.ForwardHeaders = s.forwardHeaders("forward_headers", v)
	}
	if v, ok := m["endpoints"]; ok {
		if items, ok := s.array("endpoints", v); ok {
			for i, item := range items {
				if ep := cl.endpoint(s, rel, index("endpoints", i), item); ep != nil {
					tc.Endpoints = append(tc.Endpoints, ep)
					locs = append(locs, epLoc{ep: ep, file: rel, path: index("endpoints", i)})
				}
			}
		}
	}
	if v, ok := m["delegations"]; ok {
		if d, ok := s.object("delegations", v, "escalateConfirm"); ok {
			if v, ok := d["escalateConfirm"]; ok {
				tc.EscalateDelegated, _ = s.boolean("delegations.escalateConfirm", v)
			}
		}
	}
	if v, ok := m["hooks"]; ok {
		if items, ok := s.array("hooks", v); ok {
			for i, item := range items {
				p := index("hooks", i)
				h, ok := s.object(p, item, "url")
				if !ok {
					continue
				}
				if v, ok := h["url"]; !ok {
					s.errf(field(p, "url"), "missing: a hook needs an absolute http(s) url")
				} else if u, ok := s.str(field(p, "url"), v); ok {
					if u, ok := s.httpURL(field(p, "url"), u); ok {
						conn.Hooks = append(conn.Hooks, Hook{URL: u})
					}
				}
			}
		}
	}
	if v, ok := m["approval"]; ok {
		if a, ok := s.object("approval", v, "out_of_band_only", "approvers", "separate_approver", "required", "remember", "passkey"); ok {
			if v, ok := a["remember"]; ok {
				tc.Remember = s.remember("approval.remember", v)
			}
			if v, ok := a["required"]; ok {
				var n int
				if err := json.Unmarshal(v, &n); err != nil || n < 2 || n > 5 {
					s.errf("approval.required", "%s is not a quorum: use a whole number of approvers from 2 to 5 (omit it for one)", string(v))
				} else {
					tc.Required = n
				}
			}
			if v, ok := a["out_of_band_only"]; ok {
				conn.OutOfBandOnly, _ = s.boolean("approval.out_of_band_only", v)
			}
			if v, ok := a["approvers"]; ok {
				tc.Approvers = s.approvers("approval.approvers", v)
			}
			if v, ok := a["separate_approver"]; ok {
				tc.SeparateApprover, _ = s.boolean("approval.separate_approver", v)
			}
			if v, ok := a["passkey"]; ok {
				tc.Passkey, _ = s.boolean("approval.passkey", v)
			}
		}
	}
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
	if v, ok := m["escalate"]; ok {
		// A connection's rate rules apply to each of its endpoints, each
		// counted per credential and endpoint, after the endpoint's own.
		for _, r := range s.connectionRates(rel, v) {
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
func (s *src) method(p string, raw json.RawMessage) (string, bool) {
	m, ok := s.str(p, raw)
	if !ok {
		return "", false
	}
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
func (s *src) template(p string, raw json.RawMessage) (tmpl string, params []string, shape string, ok bool) {
	t, ok := s.str(p, raw)
	if !ok {
		return "", nil, "", false
	}
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
	m, ok := s.object(p, raw, "method", "path", "confirm", "operation_id", "escalate", "encoded_slash_params", "approval", "show")
	if !ok {
		return nil
	}
	nerr := len(cl.l.errs)
	ep := &policy.Endpoint{}
	if v, ok := m["approval"]; ok {
		if a, ok := s.object(field(p, "approval"), v, "approvers", "separate_approver", "out_of_band_only", "required", "remember", "passkey", "editable"); ok {
			if v, ok := a["remember"]; ok {
				ep.Remember = s.remember(field(p, "approval.remember"), v)
			}
			if v, ok := a["editable"]; ok {
				ep.Editable = s.editable(field(p, "approval.editable"), v)
			}
			if v, ok := a["approvers"]; ok {
				ep.Approvers = s.approvers(field(p, "approval.approvers"), v)
			}
			// Each key replaces the connection's for calls to this endpoint.
			if v, ok := a["required"]; ok {
				var n int
				if err := json.Unmarshal(v, &n); err != nil || n < 1 || n > 5 {
					s.errf(field(p, "approval.required"), "%s is not a quorum: use a whole number of approvers from 2 to 5, or 1 for one approval whatever the connection asks", string(v))
				} else {
					ep.Required = n
				}
			}
			if v, ok := a["separate_approver"]; ok {
				if b, ok := s.boolean(field(p, "approval.separate_approver"), v); ok {
					ep.SeparateApprover = &b
				}
			}
			if v, ok := a["out_of_band_only"]; ok {
				if b, ok := s.boolean(field(p, "approval.out_of_band_only"), v); ok {
					ep.OutOfBandOnly = &b
				}
			}
			if v, ok := a["passkey"]; ok {
				if b, ok := s.boolean(field(p, "approval.passkey"), v); ok {
					ep.Passkey = &b
				}
			}
		}
	}
	var params []string
	var shape string
	tmplOK := false
	if v, ok := m["method"]; !ok {
		s.errf(field(p, "method"), "missing: use one of %s", strings.Join(policy.Methods[:], ", "))
	} else {
		ep.Method, _ = s.method(field(p, "method"), v)
	}
	if v, ok := m["path"]; !ok {
		s.errf(field(p, "path"), "missing: a path template such as /contacts/{id} is required")
	} else {
		ep.Path, params, shape, tmplOK = s.template(field(p, "path"), v)
	}
	confirmText := "(no confirm: auto)"
	if v, ok := m["confirm"]; ok {
		switch c := strings.TrimSpace(string(v)); c {
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
	if v, ok := m["operation_id"]; ok {
		if id, ok := s.str(field(p, "operation_id"), v); ok {
			switch prev, dup := cl.opIDs[id]; {
			case id == "":
				s.errf(field(p, "operation_id"), "must not be empty (omit it instead)")
			case dup:
				s.errf(field(p, "operation_id"), "%q is already the operation_id of %s: operation ids are unique within a connection", id, prev)
			default:
				cl.opIDs[id] = p
				ep.OperationID = id
			}
		}
	}
	if v, ok := m["escalate"]; ok {
		if items, ok := s.array(field(p, "escalate"), v); ok {
			for i, item := range items {
				ip := index(field(p, "escalate"), i)
				if isRate(item) {
					if r, ok := s.rate(ip, item); ok {
						r.Rule = fmt.Sprintf("%s %s rate %d calls per %d s: %s", rel, ip, r.Calls, r.PerSeconds, r.Escalate)
						ep.Rates = append(ep.Rates, r)
					}
					continue
				}
				if th, ok := s.threshold(ip, item, params, tmplOK); ok {
					ep.Escalate = append(ep.Escalate, th)
				}
			}
			if len(ep.Rates) > policy.MaxRates {
				s.errf(field(p, "escalate"), "%d rate rules: at most %d per endpoint, its connection's included (each is a store write per call)", len(ep.Rates), policy.MaxRates)
			}
		}
	}
	if v, ok := m["encoded_slash_params"]; ok {
		// Parameters whose value may hold an encoded slash (%2F): off by
		// default, since an upstream that decodes the path reads it as a
		// separator and may route to an endpoint this policy does not list.
		if items, ok := s.array(field(p, "encoded_slash_params"), v); ok {
			for i, item := range items {
				ip := index(field(p, "encoded_slash_params"), i)
				name, ok := s.str(ip, item)
				switch {
				case !ok:
				case tmplOK && !slices.Contains(params, name):
					s.errf(ip, "%q names no parameter of the endpoint's path", name)
				case slices.Contains(ep.SlashParams, name):
					s.errf(ip, "%q is listed twice", name)
				default:
					ep.SlashParams = append(ep.SlashParams, name)
				}
			}
		}
	}
	if v, ok := m["show"]; ok {
		if show, ok := s.show(field(p, "show"), v, params, tmplOK); ok {
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
	m, ok := s.object(p, raw, "field", "above", "escalate")
	if !ok {
		return th, false
	}
	good := true
	const fields = "use body.<json path>, query.<name> or path.<param>"
	if v, ok := m["field"]; !ok {
		s.errf(field(p, "field"), "missing: %s", fields)
		good = false
	} else if f, ok := s.str(field(p, "field"), v); ok {
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
	} else {
		good = false
	}
	if v, ok := m["above"]; !ok {
		s.errf(field(p, "above"), "escalation rule without a number: above is required (a JSON number such as 10000)")
		good = false
	} else if k := canon.Kind(v); k != "a number" {
		s.errf(field(p, "above"), "escalation rule without a number: above must be a JSON number, not %s", k)
		good = false
	} else if th.Above, ok = s.number(field(p, "above"), v); !ok {
		good = false
	}
	if t, ok := s.escalateTo(p, m); ok {
		th.Escalate = t
	} else {
		good = false
	}
	return th, good
}

// escalateTo reads an escalate[] rule's "escalate" (p is the rule's
// path): the tier it raises to, "review" or "never", the only two.
func (s *src) escalateTo(p string, m map[string]json.RawMessage) (policy.Tier, bool) {
	v, ok := m["escalate"]
	if !ok {
		s.errf(field(p, "escalate"), `missing: use "review" or "never"`)
		return 0, false
	}
	e, ok := s.str(field(p, "escalate"), v)
	if !ok {
		return 0, false
	}
	switch e {
	case "review":
		return policy.Review, true
	case "never":
		return policy.Never, true
	}
	s.errf(field(p, "escalate"), `%q is not allowed: escalation only raises, to "review" or "never"`, e)
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
	m, ok := s.object("", raw, "name", "description", "exposure", "llm_callable", "call")
	if !ok {
		return loadedTool{}, false
	}
	nerr := len(cl.l.errs)
	t := &Tool{Kind: KindOpen, LLMCallable: true}
	if v, ok := m["name"]; !ok {
		s.errf("name", "missing: a tool needs a name (a letter or _, then letters, digits, _ or -, at most 64)")
	} else if n, ok := s.str("name", v); ok {
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
	if v, ok := m["description"]; ok {
		t.Description, _ = s.str("description", v)
	}
	if v, ok := m["exposure"]; ok {
		if x, ok := s.object("exposure", v, "kind", "prompt"); ok {
			if v, ok := x["kind"]; ok {
				if k, ok := s.str("exposure.kind", v); ok {
					switch ToolKind(k) {
					case KindOpen, KindRequiresConfirmation, KindOperatorGated:
						t.Kind = ToolKind(k)
					default:
						s.errf("exposure.kind", `%q is not allowed: use "open" (the default), "requires-confirmation" or "operator-gated"`, k)
					}
				}
			}
			if v, ok := x["prompt"]; ok {
				t.Prompt, _ = s.str("exposure.prompt", v)
			}
		}
	}
	if v, ok := m["llm_callable"]; ok {
		if b, ok := s.boolean("llm_callable", v); ok {
			t.LLMCallable = b
		}
	}
	var shape string
	callOK := false
	if v, ok := m["call"]; !ok {
		s.errf("call", `missing: a tool needs "call": {"method": ..., "path": ...}`)
	} else if c, ok := s.object("call", v, "method", "path"); ok {
		if v, ok := c["method"]; !ok {
			s.errf("call.method", "missing: use one of %s", strings.Join(policy.Methods[:], ", "))
		} else {
			t.Method, _ = s.method("call.method", v)
		}
		if v, ok := c["path"]; !ok {
			s.errf("call.path", "missing: a path template such as /contacts/{id}/archive is required")
		} else {
			t.Path, _, shape, callOK = s.template("call.path", v)
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
	items, ok := s.array(p, raw)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		s.errf(p, "an empty list lets nobody approve: name at least one e-mail, @domain or group:<name>, or omit approvers")
		return nil
	}
	a := &policy.Approvers{}
	seen := map[string]int{}
	for i, item := range items {
		ip := index(p, i)
		v, ok := s.str(ip, item)
		if !ok {
			continue
		}
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
