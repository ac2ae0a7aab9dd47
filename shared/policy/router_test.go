package policy

import (
	"strings"
	"testing"
)

func routerPolicy(tb testing.TB) *Set {
	tb.Helper()
	eps := []*Endpoint{}
	for _, e := range []struct{ m, p string }{
		{"GET", "/"},
		{"GET", "/contacts"},
		{"GET", "/contacts/"},
		{"GET", "/contacts/{id}"},
		{"GET", "/contacts/search"},
		{"GET", "/contacts/search/recent"},
		{"GET", "/contacts/{id}/notes/{note}"},
		{"GET", "/orgs/{org}/repos/{repo}/issues/{n}"},
		{"DELETE", "/contacts/{cid}"},
	} {
		eps = append(eps, &Endpoint{Method: e.m, Path: e.p})
	}
	p, err := NewPolicy([]*Connection{{Name: "crm", Endpoints: eps}})
	if err != nil {
		tb.Fatalf("NewPolicy: %v", err)
	}
	return p
}

func TestResolve(t *testing.T) {
	p := routerPolicy(t)
	tests := []struct {
		name     string
		conn     string
		method   string
		path     string
		template string // "" means no match
		params   map[string]string
	}{
		{name: "literal beats parameter", method: "GET", path: "/contacts/search", template: "/contacts/search"},
		{name: "parameter when no literal matches", method: "GET", path: "/contacts/12", template: "/contacts/{id}", params: map[string]string{"id": "12"}},
		{name: "backtracks to the parameter when the literal branch dead-ends", method: "GET", path: "/contacts/search/notes/3",
			template: "/contacts/{id}/notes/{note}", params: map[string]string{"id": "search", "note": "3"}},
		{name: "literal deeper path", method: "GET", path: "/contacts/search/recent", template: "/contacts/search/recent"},
		{name: "params extraction, three params", method: "GET", path: "/orgs/acme/repos/gw/issues/42",
			template: "/orgs/{org}/repos/{repo}/issues/{n}", params: map[string]string{"org": "acme", "repo": "gw", "n": "42"}},
		{name: "param names come from the matched method's template", method: "DELETE", path: "/contacts/9",
			template: "/contacts/{cid}", params: map[string]string{"cid": "9"}},
		{name: "root", method: "GET", path: "/", template: "/"},
		{name: "no trailing slash", method: "GET", path: "/contacts", template: "/contacts"},
		{name: "trailing slash is not ignored (literal template with slash)", method: "GET", path: "/contacts/", template: "/contacts/"},
		{name: "trailing slash is not ignored (no match)", method: "GET", path: "/contacts/12/", template: ""},
		{name: "an empty segment never matches a parameter", method: "DELETE", path: "/contacts/", template: ""},
		{name: "an empty segment in the middle never matches a parameter", method: "GET", path: "/contacts//notes/1", template: ""},
		{name: "no match: unknown path", method: "GET", path: "/nowhere", template: ""},
		{name: "no match: too long", method: "GET", path: "/contacts/1/notes/2/x", template: ""},
		{name: "no match: too short", method: "GET", path: "/orgs/acme/repos/gw", template: ""},
		{name: "no match: method without endpoints", method: "PUT", path: "/contacts/1", template: ""},
		{name: "no match: lowercase method", method: "get", path: "/contacts/1", template: ""},
		{name: "no match: path without leading slash", method: "GET", path: "contacts/1", template: ""},
		{name: "no match: empty path", method: "GET", path: "", template: ""},
		{name: "no match: unknown connection", conn: "erp", method: "GET", path: "/contacts/1", template: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := tt.conn
			if conn == "" {
				conn = "crm"
			}
			m, ok := p.Resolve(conn, tt.method, tt.path)
			if tt.template == "" {
				if ok {
					t.Fatalf("matched %s %s, want no match", m.Endpoint.Method, m.Endpoint.Path)
				}
				if conn == "crm" && m.Connection == nil {
					t.Errorf("no match on a known connection should still carry the connection")
				}
				return
			}
			if !ok {
				t.Fatalf("no match, want %s", tt.template)
			}
			if m.Endpoint.Path != tt.template {
				t.Fatalf("matched %s, want %s", m.Endpoint.Path, tt.template)
			}
			if m.Params.Len() != len(tt.params) {
				t.Fatalf("%d params, want %d", m.Params.Len(), len(tt.params))
			}
			for k, v := range tt.params {
				if got, _ := m.Params.Get(k); got != v {
					t.Errorf("param %s = %q, want %q", k, got, v)
				}
			}
			got := m.Params.Map()
			if len(got) != len(tt.params) {
				t.Errorf("Map() = %v", got)
			}
		})
	}
}

func TestResolveDoesNotAllocate(t *testing.T) {
	p := routerPolicy(t)
	n := testing.AllocsPerRun(100, func() {
		if _, ok := p.Resolve("crm", "GET", "/orgs/acme/repos/gw/issues/42"); !ok {
			t.Fatal("no match")
		}
	})
	if n != 0 {
		t.Errorf("Resolve allocates %v times, want 0", n)
	}
}

func TestConnections(t *testing.T) {
	p := testPolicy(t)
	var names []string
	for _, c := range p.Connections() {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "billing,crm" {
		t.Errorf("Connections() = %v, want sorted billing,crm", names)
	}
	if p.Connection("crm") == nil || p.Connection("nope") != nil {
		t.Errorf("Connection lookup is wrong")
	}
}

func TestNewPolicyErrors(t *testing.T) {
	ep := func(m, p string) *Endpoint { return &Endpoint{Method: m, Path: p} }
	tests := []struct {
		name  string
		conns []*Connection
		want  []string // substrings of the error
	}{
		{name: "template not starting with /",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/ok"), ep("GET", "contacts")}}},
			want:  []string{`"crm"`, "endpoints[1]", `"contacts"`, `must start with "/"`}},
		{name: "segment neither literal nor whole {name}",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts/x{id}")}}},
			want:  []string{"endpoints[0]", `"/contacts/x{id}"`, "neither a literal nor a whole {name}"}},
		{name: "segment with a suffix after the parameter",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts/{id}.json")}}},
			want:  []string{"neither a literal nor a whole {name}"}},
		{name: "invalid parameter name",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts/{1id}")}}},
			want:  []string{`parameter name "1id" is not valid`}},
		{name: "empty parameter name",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts/{}")}}},
			want:  []string{`parameter name "" is not valid`}},
		{name: "empty segment in the middle",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts//notes")}}},
			want:  []string{"empty segment"}},
		{name: "query in the template",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts?x=1")}}},
			want:  []string{"query"}},
		{name: "repeated parameter names",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/a/{id}/b/{id}")}}},
			want:  []string{"{id} is repeated"}},
		{name: "more than 8 parameters",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}")}}},
			want:  []string{"more than 8 parameters"}},
		{name: "lowercase method",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("get", "/a")}}},
			want:  []string{"endpoints[0] get", "method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"}},
		{name: "unknown method",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("FETCH", "/a")}}},
			want:  []string{"method must be one of"}},
		{name: "duplicate endpoints with differently named parameters",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "/contacts/{id}"), ep("GET", "/contacts/{cid}")}}},
			want:  []string{"endpoints[1]", `"/contacts/{cid}"`, "duplicate endpoint", "GET /contacts/{id}"}},
		{name: "exact duplicate endpoints",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("DELETE", "/a"), ep("DELETE", "/a")}}},
			want:  []string{"duplicate endpoint"}},
		{name: "threshold on a path parameter the template lacks",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{{Method: "DELETE", Path: "/a/{id}", Escalate: []Threshold{
				{Field: "path.n", Source: SourcePath, Path: []string{"n"}, Above: 1, Escalate: Review}}}}}},
			want: []string{"escalate[0]", `path field "n" is not a parameter`}},
		{name: "threshold escalating to confirm",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{{Method: "POST", Path: "/a", Escalate: []Threshold{
				{Field: "body.n", Source: SourceBody, Path: []string{"n"}, Above: 1, Escalate: Confirm}}}}}},
			want: []string{"escalate must be review or never"}},
		{name: "connection listed twice",
			conns: []*Connection{{Name: "crm"}, {Name: "crm"}},
			want:  []string{`connection "crm" is listed twice`}},
		{name: "all problems are reported",
			conns: []*Connection{{Name: "crm", Endpoints: []*Endpoint{ep("GET", "a"), ep("get", "/b")}}},
			want:  []string{"endpoints[0]", "endpoints[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPolicy(tt.conns)
			if err == nil {
				t.Fatalf("NewPolicy succeeded (%v), want an error", p)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseTemplate(t *testing.T) {
	params, shape, err := ParseTemplate("/orgs/{org}/repos/{repo}/")
	if err != nil || strings.Join(params, ",") != "org,repo" || shape != "/orgs/{}/repos/{}/" {
		t.Fatalf("ParseTemplate = %v %q %v", params, shape, err)
	}
}
