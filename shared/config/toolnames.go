package config

import (
	"slices"
	"strings"

	"github.com/countersign/countersign/shared/policy"
)

// MaxToolName is the longest MCP tool name (docs/mcp.md).
const MaxToolName = 64

// ToolName is an operation's MCP tool name within its connection
// (docs/mcp.md): the custom tool's name; else the endpoint's
// operation_id; else the method in lower case and the path's segments
// joined by "_", a {param} segment written by_param
// (GET /contacts/{id} → get_contacts_by_id). Characters outside
// A-Za-z0-9_- become "_". Load refuses a configuration where two
// operations get the same name or a name is longer than MaxToolName.
func ToolName(ep *policy.Endpoint) string {
	switch {
	case ep.Tool != "":
		return ep.Tool
	case ep.OperationID != "":
		return sanitizeToolName(ep.OperationID)
	}
	parts := []string{strings.ToLower(ep.Method)}
	for _, seg := range strings.Split(ep.Path, "/") {
		switch {
		case seg == "":
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
			parts = append(parts, "by_"+seg[1:len(seg)-1])
		default:
			parts = append(parts, seg)
		}
	}
	return sanitizeToolName(strings.Join(parts, "_"))
}

// ReservedToolNames are the MCP surface's own tools; an operation may not
// take one of these names (with a single connection, where names are not
// prefixed).
var ReservedToolNames = []string{"review_pending", "card_decide", "confirmation_status", "run_script"}

// PrefixedToolName is the tool name a credential that sees more than one
// connection uses: "<connection>__<name>".
func PrefixedToolName(connection, name string) string { return connection + "__" + name }

func sanitizeToolName(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// epLoc is where an operation was configured: the file (relative to the
// configuration directory) and the JSON path inside it.
type epLoc struct {
	ep         *policy.Endpoint
	file, path string
}

func (o epLoc) String() string {
	if o.path == "" {
		return o.file
	}
	return o.file + " " + o.path
}

// toolNames checks that every operation has a usable MCP tool name: unique
// within its connection and at most MaxToolName characters; with more than
// one connection, the prefixed names too, across connections (a connection
// named "a__b" could otherwise collide with connection "a").
func (l *loader) toolNames(conns []loadedConn) {
	prefixed := len(conns) > 1
	global := map[string]epLoc{}
	for _, c := range conns {
		local := map[string]epLoc{}
		for _, at := range c.locs {
			s := &src{l: l, file: l.where(at.file)}
			name := ToolName(at.ep)
			if prev, dup := local[name]; dup {
				s.errf(at.path, "the MCP tool name %q (from %s %s) is already the name of %s: give one of them an operation_id",
					name, at.ep.Method, at.ep.Path, prev)
				continue
			}
			local[name] = at
			if !prefixed && slices.Contains(ReservedToolNames, name) {
				s.errf(at.path, "the MCP tool name %q (from %s %s) is one of the MCP surface's own tools (%s): give the endpoint an operation_id",
					name, at.ep.Method, at.ep.Path, strings.Join(ReservedToolNames, ", "))
				continue
			}
			if len(name) > MaxToolName {
				s.errf(at.path, "the MCP tool name %q (from %s %s) is %d characters, more than %d: give the endpoint a shorter operation_id",
					name, at.ep.Method, at.ep.Path, len(name), MaxToolName)
				continue
			}
			if !prefixed {
				continue
			}
			full := PrefixedToolName(c.conn.Name, name)
			if len(full) > MaxToolName {
				s.errf(at.path, "with more than one connection the MCP tool is named %q (from %s %s), %d characters, more than %d: give the endpoint a shorter operation_id",
					full, at.ep.Method, at.ep.Path, len(full), MaxToolName)
				continue
			}
			if prev, dup := global[full]; dup {
				s.errf(at.path, "the MCP tool name %q (from %s %s) is already the name of %s in another connection: rename a connection or give one of them an operation_id",
					full, at.ep.Method, at.ep.Path, prev)
				continue
			}
			global[full] = at
		}
	}
}
