package config

import (
	"encoding/json"
	"net/textproto"
	"strings"

	"github.com/countersign/countersign/shared/upstream"
)

// MaxForwardHeaders bounds a connection's forward_headers.
const MaxForwardHeaders = 32

// forwardHeaders reads a connection's forward_headers: the names of the
// agent's request headers the connection forwards besides content
// negotiation, in canonical form (X-Tenant-Id). A name that is never
// forwarded (upstream.CheckForwardName: "_" or another character outside
// letters, digits and "-", hop-by-hop, Host, credentials, method, URL and
// client address overrides, X-Forwarded-*, Countersign-*), a default one,
// a repeated one or more than MaxForwardHeaders names is an error.
func (s *src) forwardHeaders(p string, raw json.RawMessage) []string {
	var items []string
	if !s.decode(p, raw, &items) {
		return nil
	}
	if len(items) > MaxForwardHeaders {
		s.errf(p, "%d names: a connection forwards at most %d headers", len(items), MaxForwardHeaders)
		return nil
	}
	var out []string
	seen := map[string]string{}
	for i, name := range items {
		ip := index(p, i)
		if err := upstream.CheckForwardName(name); err != nil {
			s.errf(ip, "%q %v", name, err)
			continue
		}
		canonical := textproto.CanonicalMIMEHeaderKey(name)
		if isDefaultForward(canonical) {
			s.errf(ip, "%q is always forwarded (content negotiation, not bound): leave it out", name)
			continue
		}
		if was, ok := seen[canonical]; ok {
			s.errf(ip, "%q is listed twice (also as %q): header names are case-insensitive", name, was)
			continue
		}
		seen[canonical] = name
		out = append(out, canonical)
	}
	return out
}

func isDefaultForward(canonical string) bool {
	for _, d := range upstream.DefaultForward {
		if strings.EqualFold(d, canonical) {
			return true
		}
	}
	return false
}
