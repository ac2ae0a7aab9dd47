package upstream

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// TestStrippedHeadersNeverReachTheUpstream lists every header an agent may not
// forward and proves, against a recording upstream, that none arrives: in its
// canonical spelling, in lower case and in upper case, while an ordinary header sent
// with it does arrive.
func TestStrippedHeadersNeverReachTheUpstream(t *testing.T) {
	transportSets := map[string]bool{"Host": true, "Content-Length": true, "Accept-Encoding": true}
	tests := []struct {
		header string
		why    string
	}{
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
		{"Host", "the base URL decides the host"},
		{"Content-Length", "framing"},
		{"Accept-Encoding", "the transport negotiates"},
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
		{"X-Forwarded-Port", "X-Forwarded-*"},
		{"X-Forwarded-Prefix", "X-Forwarded-*"},
		{"X-Forwarded-Path", "X-Forwarded-*"},
		{"X-Forwarded-Uri", "X-Forwarded-*"},
		{"X-Forwarded-Method", "X-Forwarded-*"},
		{"X-Forwarded-Server", "X-Forwarded-*"},
		{"X-Forwarded-Ssl", "X-Forwarded-*"},
		{"X-Forwarded-Anything", "X-Forwarded-*"},
		{"X-Envoy-Retry-On", "X-Envoy-*"},
		{"X-Envoy-Upstream-Rq-Timeout-Ms", "X-Envoy-*"},
		{"X-Amzn-Trace-Id", "X-Amzn-*"},
		{"Countersign-Confirmation", "Countersign-*"},
		{"X-Named-In-Connection", "named in Connection: hop-by-hop"},
	}
	var (
		mu  sync.Mutex
		got []http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := r.Header.Clone()
		h.Set("Host", r.Host) // net/http moves Host out of the header map
		mu.Lock()
		got = append(got, h)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	listed := map[string]bool{}
	for _, tt := range tests {
		listed[textproto.CanonicalMIMEHeaderKey(tt.header)] = true
		for _, spelling := range []string{tt.header, strings.ToLower(tt.header), strings.ToUpper(tt.header)} {
			t.Run(spelling, func(t *testing.T) {
				value := "DELETE"
				if tt.header == "Host" {
					value = "evil.example"
				}
				fwd := http.Header{spelling: {value}, "X-Request-Note": {"kept"}}
				if tt.header == "X-Named-In-Connection" {
					fwd["connection"] = []string{"keep-alive, " + strings.ToLower(tt.header)}
				}
				if _, err := (&Client{}).Do(context.Background(), Request{
					BaseURL: srv.URL, Method: "POST", Path: "/payments", Body: []byte(`{}`), Forward: fwd,
				}); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				h := got[len(got)-1]
				mu.Unlock()
				if h.Get("X-Request-Note") != "kept" {
					t.Fatal("the ordinary header did not arrive: the test proves nothing")
				}
				for k, vs := range h {
					if !strings.EqualFold(k, tt.header) {
						continue
					}
					// The transport sets some of these itself; the agent's value
					// must never be the one that arrives, and the others must not
					// arrive at all.
					if transportSets[textproto.CanonicalMIMEHeaderKey(k)] {
						for _, v := range vs {
							if v == value {
								t.Errorf("%s: the agent's value reached the upstream (%s)", spelling, tt.why)
							}
						}
						continue
					}
					t.Errorf("%s reached the upstream: %s: %q (%s)", spelling, k, vs, tt.why)
				}
			})
		}
	}
	for name := range strippedHeaders {
		if !listed[name] {
			t.Errorf("strippedHeaders has %s, which this table does not test", name)
		}
	}
	for _, p := range strippedPrefixes {
		found := false
		for name := range listed {
			found = found || strings.HasPrefix(name, p)
		}
		if !found {
			t.Errorf("prefix %s is not tested", p)
		}
	}
}
