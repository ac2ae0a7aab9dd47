package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// neverForwardedTable lists every header no connection may forward, with why. The test
// below proves each is refused in every spelling a server could read as the same header.
var neverForwardedTable = []struct{ header, why string }{
	{"Connection", "hop-by-hop"},
	{"Proxy-Connection", "hop-by-hop"},
	{"Keep-Alive", "hop-by-hop"},
	{"TE", "hop-by-hop"},
	{"Trailer", "hop-by-hop"},
	{"Transfer-Encoding", "hop-by-hop"},
	{"Upgrade", "hop-by-hop"},
	{"Proxy-Authenticate", "hop-by-hop"},
	{"Proxy-Authorization", "hop-by-hop credential"},
	{"Authorization", "the agent's countersign key"},
	{"Cookie", "a credential"},
	{"Host", "the base URL decides the host"},
	{"Content-Length", "framing"},
	{"Content-Type", "the body's media type"},
	{"Accept-Encoding", "the transport negotiates"},
	{"Expect", "the transport's"},
	{"Idempotency-Key", "always sent scoped to the credential"},
	{"X-Idempotency-Key", "idempotency keys are countersign's"},
	{"Max-Forwards", "proxy hop control"},
	{"Via", "proxy hop information"},
	{"X-HTTP-Method-Override", "method override"},
	{"X-HTTP-Method", "method override"},
	{"X-Method-Override", "method override"},
	{"X-Original-Method", "method before a rewrite"},
	{"X-Original-URL", "URL override"},
	{"X-Rewrite-URL", "URL override"},
	{"X-Override-URL", "URL override"},
	{"X-Original-URI", "URI before a rewrite"},
	{"X-Envoy-Original-Path", "path before a rewrite"},
	{"X-Original-Host", "host override"},
	{"X-Host", "host override"},
	{"X-HTTP-Host-Override", "host override"},
	{"X-Middleware-Subrequest", "Next.js middleware bypass"},
	{"Forwarded", "client address"},
	{"X-Real-IP", "client address"},
	{"X-Client-IP", "client address"},
	{"Client-IP", "client address"},
	{"True-Client-IP", "client address"},
	{"CF-Connecting-IP", "client address"},
	{"Fastly-Client-IP", "client address"},
	{"X-Cluster-Client-IP", "client address"},
	{"X-Original-Forwarded-For", "client address"},
	{"X-Azure-ClientIP", "client address"},
	{"X-Azure-SocketIP", "client address"},
	{"X-Forwarded-For", "X-Forwarded-*"},
	{"X-Forwarded-Host", "X-Forwarded-*"},
	{"X-Forwarded-Proto", "X-Forwarded-*"},
	{"X-Forwarded-Anything", "X-Forwarded-*"},
	{"X-Envoy-Retry-On", "X-Envoy-*"},
	{"X-Amzn-Trace-Id", "X-Amzn-*"},
	{"Countersign-Confirmation", "Countersign-*"},
}

// cgiName is the name a CGI-style server (WSGI's environ, Rack's env, PHP's $_SERVER,
// Apache's CGI environment) files a request header under: HTTP_ and the name upper-cased
// with every character other than a letter or digit turned into "_".
func cgiName(header string) string {
	b := []byte(strings.ToUpper(header))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return "HTTP_" + string(b)
}

// spellings are the ways of writing header that a CGI-style server reads as header:
// as listed, lower and upper case, with "_" or "." for each "-", and mixed.
func spellings(header string) []string {
	out := []string{header, strings.ToLower(header), strings.ToUpper(header)}
	if strings.Contains(header, "-") {
		out = append(out,
			strings.ReplaceAll(header, "-", "_"),
			strings.ToUpper(strings.ReplaceAll(header, "-", "_")),
			strings.ReplaceAll(strings.ToLower(header), "-", "."),
			strings.Replace(header, "-", "_", 1), // X_HTTP-Method-Override
		)
		if i := strings.LastIndex(header, "-"); i > 0 {
			out = append(out, header[:i]+"_"+header[i+1:]) // X-Http-Method_Override
		}
	}
	return out
}

// TestNeverForwardedNames proves, for every header no connection may forward and every
// spelling a CGI-style server reads as it, that CheckForwardName refuses it and that a
// Request carrying it fails with ErrInvalidRequest without sending anything.
func TestNeverForwardedNames(t *testing.T) {
	var (
		mu   sync.Mutex
		hits int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	listed := map[string]bool{}
	for _, tt := range neverForwardedTable {
		listed[textproto.CanonicalMIMEHeaderKey(tt.header)] = true
		for _, spelling := range spellings(tt.header) {
			t.Run(spelling, func(t *testing.T) {
				if cgiName(spelling) != cgiName(tt.header) {
					t.Fatalf("test bug: %s is not read as %s", spelling, tt.header)
				}
				if err := CheckForwardName(spelling); err == nil {
					t.Fatalf("CheckForwardName(%q) = nil, want an error (%s)", spelling, tt.why)
				}
				_, err := (&Client{}).Do(context.Background(), Request{
					BaseURL: srv.URL, Method: "POST", Path: "/payments", Body: []byte(`{}`),
					Forward: map[string]string{"X-Request-Note": "fine", spelling: "DELETE"},
				})
				if !errors.Is(err, ErrInvalidRequest) {
					t.Fatalf("Do with %s forwarded: err = %v, want ErrInvalidRequest", spelling, err)
				}
			})
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the upstream received %d requests carrying a never-forwarded header", hits)
	}
	for name := range neverForward {
		if !listed[name] {
			t.Errorf("neverForward has %s, which this table does not test", name)
		}
	}
	for _, p := range neverForwardPrefixes {
		found := false
		for name := range listed {
			found = found || strings.HasPrefix(name, p.prefix)
		}
		if !found {
			t.Errorf("prefix %s is not tested", p.prefix)
		}
	}
}

// TestForwardNameIsOneNameToEveryServer: a name CheckForwardName allows is read by a
// CGI-style server as exactly that header, so no allowed name can reach an upstream as
// another one; names with "_" or other characters are refused with a reason.
func TestForwardNameIsOneNameToEveryServer(t *testing.T) {
	for _, name := range []string{"X-Tenant-Id", "x-dry-run", "Stripe-Account", "Prefer", "If-Match", "Accept", "Accept-Language", "X-Request-Note"} {
		if err := CheckForwardName(name); err != nil {
			t.Errorf("CheckForwardName(%q) = %v, want nil", name, err)
		}
		// The CGI name read back with "_" as "-" is the same header, in any case.
		back := strings.ReplaceAll(strings.TrimPrefix(cgiName(name), "HTTP_"), "_", "-")
		if !strings.EqualFold(back, name) {
			t.Errorf("%s reads back as %s", name, back)
		}
	}
	refused := map[string]string{
		"X_Tenant_Id": `"_"`, "X-Tenant_Id": `"_"`, "X.Tenant.Id": `"."`, "X-Tenant~Id": `"~"`, "X Tenant": `" "`,
		"X-Tenant:Id": `":"`, "X-Ténant": `"\xc3"`, "": "needs a name", "X-Tenant-Id\r\nX-Evil": `"\r"`,
	}
	for name, want := range refused {
		err := CheckForwardName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckForwardName(%q) = %v, want an error naming %s", name, err, want)
		}
	}
}

// TestDefaultForwardIsForwardable: the content negotiation defaults pass the check they
// are sent under.
func TestDefaultForwardIsForwardable(t *testing.T) {
	for _, name := range DefaultForward {
		if err := CheckForwardName(name); err != nil {
			t.Errorf("default %s: %v", name, err)
		}
	}
}
