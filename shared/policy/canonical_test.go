package policy

import (
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

func TestCanonicalPath(t *testing.T) {
	tests := []struct {
		in, want string
		slash    bool
		err      string // a part of the error; "" means none
	}{
		{in: "/contacts/12", want: "/contacts/12"},
		{in: "/", want: "/"},
		{in: "/contacts/", want: "/contacts/"},
		{in: "/contacts/%61ll", want: "/contacts/all"},
		{in: "/contacts/%41%4c%4C", want: "/contacts/ALL"},
		{in: "/%7Euser/a%2Db%2E%5fc", want: "/~user/a-b._c"},
		{in: "/a/%c3%a9", want: "/a/%C3%A9"},
		{in: "/a/é", want: "/a/%C3%A9"},
		{in: "/a/b c", want: "/a/b%20c"},
		{in: "/a/%21x", want: "/a/%21x"},
		{in: "/a/!$&'()*+,=:@", want: "/a/!$&'()*+,=:@"},
		{in: "/a/[x]\"<>^`{|}", want: "/a/%5Bx%5D%22%3C%3E%5E%60%7B%7C%7D"},
		{in: "/a/%25", want: "/a/%25"},
		{in: "/files/a%2fb", want: "/files/a%2Fb", slash: true},
		{in: "/files/a%2F..%2Fb", err: "dot segment"},
		{in: "/contacts/all;x", err: `"all;x" holds a ;`},
		{in: "/contacts/%2561ll", err: "percent-encoded escape"},
		{in: "/contacts/12%252Fowner", err: "percent-encoded escape"},
		{in: "/contacts/12%25%32%46owner", err: "percent-encoded escape"},
		{in: "/contacts/100%25", want: "/contacts/100%25"},
		{in: "/contacts/100%25off", want: "/contacts/100%25off"},
		{in: "/contacts/all%3Bx", err: "holds a ;"},
		{in: `/contacts/a\b`, err: "backslash"},
		{in: "/contacts/a%5cb", err: "backslash"},
		{in: "/contacts/a%00", err: "control character"},
		{in: "/contacts/a\x00", err: "control character"},
		{in: "/contacts/a%0D%0A", err: "control character"},
		{in: "/contacts/a%7F", err: "control character"},
		{in: "/contacts/%FF", err: "not valid UTF-8"},
		{in: "/contacts/%C3", err: "not valid UTF-8"},
		{in: "/contacts/%zz", err: "malformed percent-escape"},
		{in: "/contacts/%4", err: "malformed percent-escape"},
		{in: "/contacts/%", err: "malformed percent-escape"},
		{in: "/contacts/%2e%2E", err: "dot segment"},
		{in: "/contacts/..", err: "dot segment"},
		{in: "/contacts/./x", err: "dot segment"},
		{in: "contacts", err: "must start with /"},
	}
	for _, tt := range tests {
		got, slash, err := CanonicalPath(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CanonicalPath(%q) = %q, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || slash != tt.slash {
			t.Errorf("CanonicalPath(%q) = %q, %v, %v; want %q, %v", tt.in, got, slash, err, tt.want, tt.slash)
		}
		if again, _, err := CanonicalPath(got); err != nil || again != got {
			t.Errorf("CanonicalPath(%q) = %q, %v: the canonical form is not stable", got, again, err)
		}
	}
}

func TestCanonicalPathDoesNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		if _, _, err := CanonicalPath("/v1/resource4/12345/items/a-b_c~d"); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations for a canonical path, want 0", n)
	}
}

// FuzzCanonicalPath: whatever CanonicalPath accepts is stable, names the
// same bytes once decoded, and holds none of what it refuses.
func FuzzCanonicalPath(f *testing.F) {
	for _, s := range []string{"/contacts/%61ll", "/a/%c3%a9", "/files/a%2Fb", "/a;b", "/a/%2e%2e", "/a/b c/%zz", "/%FF", "/a\\b", "/x/%7e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, slash, err := CanonicalPath(p)
		if err != nil {
			return
		}
		if again, s2, err := CanonicalPath(c); err != nil || again != c || s2 != slash {
			t.Fatalf("CanonicalPath(%q) = %q, but again %q, %v", p, c, again, err)
		}
		dp, err1 := url.PathUnescape(p)
		dc, err2 := url.PathUnescape(c)
		if err1 != nil || err2 != nil || dp != dc {
			t.Fatalf("%q decodes to %q, its canonical form %q to %q", p, dp, c, dc)
		}
		if strings.ContainsAny(c, ";\\") || strings.Contains(strings.ToUpper(c), "%3B") || strings.Contains(strings.ToUpper(c), "%5C") {
			t.Fatalf("canonical %q holds a refused character", c)
		}
		if strings.Contains(c, "%2F") != slash {
			t.Fatalf("canonical %q: slash %v", c, slash)
		}
	})
}

func TestSegmentFold(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"all", "ALL", true},
		{"all", "All", true},
		{"all", "al", false},
		{"all", "alll", false},
		{"all", "%41LL", true},
		{"straße", "STRASSE", false},
		{"%C3%A9t%C3%A9", "%C3%89T%C3%89", true},
		{"kelvin", "\u212aelvin", true},
		{"a%2Fb", "A%2fB", true},
		{"search", "12345", false},
		{"%FF", "%FF", true},
		{"%FF", "%FE", false},
	} {
		if got := segmentFold(tt.a, tt.b); got != tt.want {
			t.Errorf("segmentFold(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// twinPolicy has literal siblings of a parameter at several tiers.
func twinPolicy(tb testing.TB) *Set {
	tb.Helper()
	eps := []*Endpoint{
		{Method: "DELETE", Path: "/contacts/all", Tier: Never},
		{Method: "DELETE", Path: "/contacts/{id}", Tier: Confirm},
		{Method: "DELETE", Path: "/contacts/archived", Tier: Auto},
		{Method: "GET", Path: "/contacts/{id}", Tier: Review},
		{Method: "GET", Path: "/contacts/export", Tier: Auto},
		{Method: "POST", Path: "/orgs/{org}/purge", Tier: Never},
		{Method: "POST", Path: "/orgs/{org}/{action}", Tier: Auto},
		{Method: "POST", Path: "/tools/secret", Tier: Auto, Hidden: true},
		{Method: "POST", Path: "/tools/{name}", Tier: Auto},
	}
	p, err := NewPolicy([]*Connection{{Name: "crm", Endpoints: eps}})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestResolveCaseTwin: a parameter value that names a literal sibling in
// another case or spelling is decided at the stricter of the two routes.
func TestResolveCaseTwin(t *testing.T) {
	p := twinPolicy(t)
	for _, tt := range []struct {
		method, path, template string
		param, value           string
	}{
		{"DELETE", "/contacts/ALL", "/contacts/all", "", ""},
		{"DELETE", "/contacts/aLl", "/contacts/all", "", ""},
		{"DELETE", "/contacts/all", "/contacts/all", "", ""},
		{"DELETE", "/contacts/12", "/contacts/{id}", "id", "12"},
		// The literal is less strict: the parameter route stays.
		{"DELETE", "/contacts/ARCHIVED", "/contacts/{id}", "id", "ARCHIVED"},
		{"GET", "/contacts/EXPORT", "/contacts/{id}", "id", "EXPORT"},
		// Deeper: the org parameter is kept when the literal wins.
		{"POST", "/orgs/acme/PURGE", "/orgs/{org}/purge", "org", "acme"},
		{"POST", "/orgs/acme/rename", "/orgs/{org}/{action}", "action", "rename"},
		// A hidden twin wins over any tier.
		{"POST", "/tools/SECRET", "/tools/secret", "", ""},
		// Spellings routers reduce to the literal: a format suffix
		// (Rails, Spring), trailing dots and spaces (IIS, Windows),
		// full-width forms (NFKC, IIS best fit).
		{"DELETE", "/contacts/all.json", "/contacts/all", "", ""},
		{"DELETE", "/contacts/ALL.xml", "/contacts/all", "", ""},
		{"DELETE", "/contacts/all.", "/contacts/all", "", ""},
		{"DELETE", "/contacts/all.%20.", "/contacts/all", "", ""},
		{"DELETE", "/contacts/all%20", "/contacts/all", "", ""},
		{"DELETE", "/contacts/%EF%BD%81%EF%BD%8C%EF%BD%8C", "/contacts/all", "", ""},
		{"DELETE", "/contacts/%EF%BC%A1LL", "/contacts/all", "", ""},
		{"DELETE", "/contacts/allx.json", "/contacts/{id}", "id", "allx.json"},
		{"DELETE", "/contacts/.all", "/contacts/{id}", "id", ".all"},
	} {
		m, ok := p.Resolve("crm", tt.method, tt.path)
		if !ok || m.Endpoint.Path != tt.template {
			t.Errorf("%s %s resolved to %v, want %s", tt.method, tt.path, m.Endpoint, tt.template)
			continue
		}
		if tt.param != "" {
			if v, _ := m.Params.Get(tt.param); v != tt.value {
				t.Errorf("%s %s: %s = %q, want %q", tt.method, tt.path, tt.param, v, tt.value)
			}
		}
	}
	d := Evaluate(p, Input{Call: &Call{Connection: "crm", Method: "DELETE", Path: "/contacts/ALL", Intent: IntentWrite},
		Credential: &Credential{Choice: countersign.RunWithoutAsking}})
	if d.Outcome != Deny || d.Code != CodeBlocked || d.Tier != Never {
		t.Errorf("DELETE /contacts/ALL: %s %s (%s), want blocked", d.Outcome, d.Code, d.Reason)
	}
	n := testing.AllocsPerRun(100, func() {
		if m, _ := p.Resolve("crm", "DELETE", "/contacts/all.json"); m.Endpoint == nil || m.Endpoint.Tier != Never {
			t.Fatal("no twin")
		}
		if m, _ := p.Resolve("crm", "DELETE", "/contacts/ALL"); m.Endpoint == nil || m.Endpoint.Tier != Never {
			t.Fatal("no twin")
		}
	})
	if n != 0 {
		t.Errorf("%v allocations resolving a twin, want 0", n)
	}
}

func TestTemplateLiteralsAreCanonical(t *testing.T) {
	for _, tt := range []struct{ path, err string }{
		{"/contacts/%61ll", `write "all"`},
		{"/a;b", "holds a ;"},
		{"/a%2Fb", "encoded slash"},
		{"/a b", `write "a%20b"`},
	} {
		if _, _, err := ParseTemplate(tt.path); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseTemplate(%q) = %v, want an error saying %q", tt.path, err, tt.err)
		}
	}
	if _, _, err := ParseTemplate("/v1/things:batch/%C3%A9/{id}"); err != nil {
		t.Errorf("a canonical template was refused: %v", err)
	}
	_, err := NewPolicy([]*Connection{{Name: "c", Endpoints: []*Endpoint{{Method: "GET", Path: "/f/{key}", SlashParams: []string{"name"}}}}})
	if err == nil || !strings.Contains(err.Error(), `"name" is not a parameter`) {
		t.Errorf("NewPolicy with an unknown slash parameter: %v", err)
	}
}

// TestBodyFieldReadsTheQuery: frameworks merge the query with the body,
// so a body threshold reads the query too, the worst value counting.
func TestBodyFieldReadsTheQuery(t *testing.T) {
	p, err := NewPolicy([]*Connection{{Name: "pay", Endpoints: []*Endpoint{{Method: "POST", Path: "/payments", Tier: Confirm,
		Escalate: []Threshold{{Field: "body.amount", Source: SourceBody, Path: []string{"amount"}, Above: 10000, Escalate: Review}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	cred := &Credential{Choice: countersign.RunWithoutAsking}
	for _, tt := range []struct {
		name  string
		query url.Values
		body  any
		form  url.Values
		code  Code
	}{
		{name: "query only", query: url.Values{"amount": {"99999"}}, code: CodeReviewRequired},
		{name: "query in another case", query: url.Values{"AMOUNT": {"99999"}}, code: CodeReviewRequired},
		{name: "query above, body below", query: url.Values{"amount": {"99999"}}, body: map[string]any{"amount": 5.0}, code: CodeReviewRequired},
		{name: "query below, form above", query: url.Values{"amount": {"5"}}, form: url.Values{"amount": {"99999"}}, code: CodeReviewRequired},
		{name: "query not a number", query: url.Values{"amount": {"lots"}}, code: CodeReviewRequired},
		{name: "both below", query: url.Values{"amount": {"5"}}, body: map[string]any{"amount": 6.0}},
		{name: "another name", query: url.Values{"amount_max": {"99999"}}},
	} {
		d := Evaluate(p, Input{Call: &Call{Connection: "pay", Method: "POST", Path: "/payments", Intent: IntentWrite, Query: tt.query, Body: tt.body, BodyForm: tt.form}, Credential: cred})
		if d.Code != tt.code {
			t.Errorf("%s: %s %s (%s), want %q", tt.name, d.Outcome, d.Code, d.Reason, tt.code)
		}
	}
}
