package config

import (
	"encoding/json"
	"net"
	"net/url"
	"strings"

	"github.com/countersign/countersign/shared/webguard"
)

// MCP is settings.json's mcp block: what the MCP surface (/mcp) accepts.
type MCP struct {
	// AllowedOrigins are the browser origins ("https://app.example.com",
	// "http://localhost:6274") whose pages may call /mcp, normalized by
	// NormalizeOrigin. A request without an Origin header (every
	// non-browser client) is always allowed; one with another Origin is
	// refused with 403 and runs nothing. Nil (mcp.allowed_origins absent)
	// allows loopback origins only (localhost, 127.0.0.0/8 and [::1], any
	// port); an empty list allows no browser origin.
	AllowedOrigins []string `json:"allowed_origins"`
}

// OriginAllowed reports whether a browser page at origin (an Origin
// header) may call /mcp.
func (m MCP) OriginAllowed(origin string) bool {
	o, ok := NormalizeOrigin(origin)
	if !ok {
		return false
	}
	if m.AllowedOrigins == nil {
		u, _ := url.Parse(o)
		return IsLoopbackHost(u.Hostname())
	}
	for _, a := range m.AllowedOrigins {
		if a == o {
			return true
		}
	}
	return false
}

// NormalizeOrigin returns an origin as browsers serialize it: an http or
// https scheme and a host, lower case, the port only when it is not the
// scheme's default, and nothing else (no user, path, query or fragment).
// "null" and anything else is not an origin.
func NormalizeOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if host == "" || net.ParseIP(host) == nil && !allBytes(host, func(c byte) bool { return isLetter(c) || isDigit(c) || c == '-' || c == '.' }) {
		return "", false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// IsLoopbackHost reports a host name (without port) that names this
// machine: localhost (or a name under it) or a loopback IP address.
func IsLoopbackHost(host string) bool { return webguard.LoopbackHost(host) }

// mcpSettings reads the mcp block: allowed_origins, a list of origins.
func mcpSettings(s *src, raw json.RawMessage) MCP {
	var out MCP
	var doc struct {
		AllowedOrigins *[]string `json:"allowed_origins"`
	}
	if !s.decode("mcp", raw, &doc) || doc.AllowedOrigins == nil {
		return out
	}
	out.AllowedOrigins = []string{}
	for i, o := range *doc.AllowedOrigins {
		path := index("mcp.allowed_origins", i)
		n, ok := NormalizeOrigin(o)
		if !ok {
			s.errf(path, "%q is not an origin: use scheme://host[:port], e.g. \"https://app.example.com\" or \"http://localhost:6274\" (no path, no wildcard)", o)
			continue
		}
		out.AllowedOrigins = append(out.AllowedOrigins, n)
	}
	return out
}
