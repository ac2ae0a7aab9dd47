package config

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/countersign/countersign/shared/policy"
)

// pendingShow is an endpoint's show read as written, waiting for the
// connection's endpoints to be loaded so it can be resolved.
type pendingShow struct {
	s     *src
	p     string // e.g. endpoints[2].show
	ep    *policy.Endpoint
	show  *policy.Show
	shape string
}

// show reads an endpoint's "show": {"path": "/contacts/{id}", "recheck":
// true}. Its template's parameters must be the endpoint's own (the read
// is made with the call's values).
func (s *src) show(p string, raw json.RawMessage, params []string, tmplOK bool) (pendingShow, bool) {
	sh := &policy.Show{Recheck: true}
	var doc struct {
		Path    *string `json:"path"`
		Recheck *bool   `json:"recheck"`
	}
	good := s.decode(p, raw, &doc)
	if doc.Recheck != nil {
		sh.Recheck = *doc.Recheck
	}
	if doc.Path == nil {
		if good {
			s.errf(field(p, "path"), "missing: the path of an auto-tier GET of this connection, such as /contacts/{id}")
		}
		return pendingShow{}, false
	}
	tmpl, showParams, shape, ok := s.template(field(p, "path"), *doc.Path)
	if !ok {
		return pendingShow{}, false
	}
	if tmplOK {
		for _, name := range showParams {
			if !slices.Contains(params, name) {
				have := "it has none"
				if len(params) > 0 {
					have = "its parameters: " + strings.Join(params, ", ")
				}
				s.errf(field(p, "path"), "{%s} is not a parameter of the endpoint's path (%s): the read is made with the call's own values", name, have)
				good = false
			}
		}
	}
	sh.Path = tmpl
	return pendingShow{s: s, p: p, show: sh, shape: shape}, good
}

// resolveShows checks that each show read names an auto-tier GET of the
// connection: a read is made without asking anyone, so it must be one an
// agent could make without asking anyone.
func (cl *connLoad) resolveShows(eps []*policy.Endpoint) {
	for _, ps := range cl.shows {
		var found *policy.Endpoint
		for _, ep := range eps {
			if ep.Method != "GET" {
				continue
			}
			if _, shape, err := policy.ParseTemplate(ep.Path); err == nil && shape == ps.shape {
				found = ep
				break
			}
		}
		switch {
		case found == nil:
			ps.s.errf(field(ps.p, "path"), "%q matches no GET endpoint of connection %q: list it (with no confirm, so it runs at once) to show it", ps.show.Path, cl.name)
			ps.ep.Show = nil
		case found.Tier != policy.Auto || found.OperatorOnly || len(found.Escalate) > 0:
			ps.s.errf(field(ps.p, "path"), "%q is GET %s, which is not auto tier (%s): a show read runs without asking anyone, so it must be a GET that runs at once, with no escalate rules",
				ps.show.Path, found.Path, found.Rule)
			ps.ep.Show = nil
		}
	}
}
