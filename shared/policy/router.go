package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Methods lists the HTTP methods an endpoint may declare, in the order the
// router indexes them.
var Methods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// methodIndex returns the router slot of an upper-case method, or -1.
func methodIndex(m string) int {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 6
	}
	return -1
}

// ValidMethod reports whether m is one of Methods (upper case, exactly).
func ValidMethod(m string) bool { return methodIndex(m) >= 0 }

// MaxParams is the largest number of parameters a path template may have.
const MaxParams = maxParams

// ParseTemplate checks a path template such as /contacts/{id} and returns its
// parameter names in order and its shape: the template with every parameter
// written as {}, so that /contacts/{id} and /contacts/{cid} have the same
// shape. A template starts with "/"; each segment is either a literal
// (without braces) or a whole {name} with name [A-Za-z_][A-Za-z0-9_]*; a
// name appears once; there are at most MaxParams parameters. An empty
// segment is allowed only at the end (a trailing slash, or the root "/").
func ParseTemplate(template string) (params []string, shape string, err error) {
	if !strings.HasPrefix(template, "/") {
		return nil, "", errors.New(`must start with "/"`)
	}
	if strings.ContainsAny(template, "?#") {
		return nil, "", errors.New("must not contain a query (?) or a fragment (#)")
	}
	segs := strings.Split(template[1:], "/")
	var b strings.Builder
	for i, s := range segs {
		b.WriteByte('/')
		if s == "" {
			if i != len(segs)-1 {
				return nil, "", errors.New(`empty segment ("//"): segments are literals or whole {name} parameters`)
			}
			continue
		}
		if !strings.ContainsAny(s, "{}") {
			// A literal is compared with canonical paths: it must be
			// canonical itself, or no call could ever match it.
			c, slash, err := CanonicalPath("/" + s)
			switch {
			case err != nil:
				return nil, "", fmt.Errorf("literal segment %q: %v", s, err.(*PathError).Reason)
			case slash:
				return nil, "", fmt.Errorf("literal segment %q holds an encoded slash (%%2F)", s)
			case c[1:] != s:
				return nil, "", fmt.Errorf("literal segment %q is not written canonically: write %q", s, c[1:])
			}
			b.WriteString(s)
			continue
		}
		if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || strings.ContainsAny(s[1:len(s)-1], "{}") {
			return nil, "", fmt.Errorf("segment %q is neither a literal nor a whole {name} parameter", s)
		}
		name := s[1 : len(s)-1]
		if !validParamName(name) {
			return nil, "", fmt.Errorf("parameter name %q is not valid (want a letter or _ followed by letters, digits or _)", name)
		}
		for _, p := range params {
			if p == name {
				return nil, "", fmt.Errorf("parameter {%s} is repeated", name)
			}
		}
		if len(params) == maxParams {
			return nil, "", fmt.Errorf("more than %d parameters", maxParams)
		}
		params = append(params, name)
		b.WriteString("{}")
	}
	return params, b.String(), nil
}

func validParamName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// router is a connection's compiled endpoints: one segment trie per method.
type router struct {
	roots [len(Methods)]*node
}

// node is one segment position of a trie. Literal children are tried before
// the parameter child; the search backtracks, so /a/{x}/c still matches
// /a/b/c when /a/b exists but has no /c below it.
type node struct {
	lits  map[string]*node
	param *node
	ep    *Endpoint
	// keys are the literal children's segments in insertion order: a
	// parameter value that names one of them in another case or spelling is
	// decided at the stricter of the two routes (see twin).
	keys []string
	// plain[i] reports that keys[i] is a plainSegment, so twin can compare
	// it with a plain parameter value byte by byte.
	plain []bool
}

func (r *router) insert(method string, template string, ep *Endpoint) *Endpoint {
	i := methodIndex(method)
	if r.roots[i] == nil {
		r.roots[i] = &node{}
	}
	n := r.roots[i]
	for _, s := range strings.Split(template[1:], "/") {
		if len(s) > 1 && s[0] == '{' {
			if n.param == nil {
				n.param = &node{}
			}
			n = n.param
			continue
		}
		c := n.lits[s]
		if c == nil {
			if n.lits == nil {
				n.lits = make(map[string]*node)
			}
			c = &node{}
			n.lits[s] = c
			n.keys = append(n.keys, s)
			n.plain = append(n.plain, plainSegment(s))
		}
		n = c
	}
	if n.ep != nil {
		return n.ep
	}
	n.ep = ep
	return nil
}

// lookup matches the rest of a concrete path (after a "/") below n, storing
// parameter values from index k on.
func (n *node) lookup(path string, vals *[maxParams]string, k int) *Endpoint {
	seg, rest, more := path, "", false
	if i := strings.IndexByte(path, '/'); i >= 0 {
		seg, rest, more = path[:i], path[i+1:], true
	}
	if c := n.lits[seg]; c != nil {
		if !more {
			if c.ep != nil {
				return c.ep
			}
		} else if ep := c.lookup(rest, vals, k); ep != nil {
			return ep
		}
	}
	if c := n.param; c != nil && seg != "" && k < maxParams {
		vals[k] = seg
		var ep *Endpoint
		if !more {
			ep = c.ep
		} else {
			ep = c.lookup(rest, vals, k+1)
		}
		if ep != nil && len(n.keys) > 0 {
			ep = n.twin(seg, rest, more, ep, vals, k)
		}
		return ep
	}
	return nil
}

// twin decides between the parameter route a segment took (ep) and a
// literal sibling the segment names in another spelling (twinFold):
// /contacts/ALL or /contacts/all.json takes /contacts/{id}, but a router
// that ignores case, or reads a format suffix, runs /contacts/all. The
// stricter endpoint wins (its parameter values replace vals); on a tie the
// parameter route stays. It runs only where a node has both kinds of child.
func (n *node) twin(seg, rest string, more bool, ep *Endpoint, vals *[maxParams]string, k int) *Endpoint {
	plain := plainSegment(seg)
	for i, lit := range n.keys {
		if lit == seg {
			continue
		}
		if plain && n.plain[i] {
			// Both plain: twinFold is ASCII case folding (plainTwin), and
			// an id like 12345 is refused at its length.
			if !plainTwin(lit, seg) {
				continue
			}
		} else if !twinFold(lit, seg) {
			continue
		}
		c := n.lits[lit]
		// The literal route writes its parameters over vals; a copy by
		// value (no pointer to it, so it stays on the stack) puts the
		// current route's back when the literal is not stricter.
		saved := *vals
		te := c.ep
		if more {
			te = c.lookup(rest, vals, k)
		}
		if te != nil && strictness(te) > strictness(ep) {
			ep = te
		} else {
			*vals = saved
		}
	}
	return ep
}

// strictness orders endpoints for twin: by the tier an agent's call starts
// from (an operator-gated tool is never), and a hidden tool, which no
// agent may call at all, above every tier.
func strictness(ep *Endpoint) int {
	switch {
	case ep.Hidden:
		return int(Never) + 1
	case ep.OperatorOnly:
		return int(Never)
	}
	return int(ep.Tier)
}

func (r *router) match(method, path string, m *Match) bool {
	i := methodIndex(method)
	if i < 0 || len(path) == 0 || path[0] != '/' || r.roots[i] == nil {
		return false
	}
	ep := r.roots[i].lookup(path[1:], &m.Params.values, 0)
	if ep == nil {
		return false
	}
	m.Endpoint = ep
	m.Params.n = len(ep.params)
	m.Params.names = &ep.params
	for j := m.Params.n; j < maxParams; j++ {
		m.Params.values[j] = ""
	}
	return true
}
