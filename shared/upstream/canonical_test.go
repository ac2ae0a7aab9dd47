package upstream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/upstream"
)

// TestDoSendsOnlyCanonicalPaths: the path sent is the one routed, bound and
// shown; one that is not canonical (an operation stored before paths were
// canonical) is refused and nothing is sent.
func TestDoSendsOnlyCanonicalPaths(t *testing.T) {
	srv, got := recorder(t, nil)
	for _, p := range []string{"/contacts/%61ll", "/contacts/%c3%a9", "/contacts/a;b", "/contacts/a b", "/contacts/%5C"} {
		_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "DELETE", Path: p})
		if err == nil || !strings.Contains(err.Error(), "path") {
			t.Errorf("%s: %v, want a refusal", p, err)
		}
	}
	if n := len(got()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
	if _, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "DELETE", Path: "/contacts/%C3%A9"}); err != nil {
		t.Fatal(err)
	}
	if r := got(); len(r) != 1 || r[0].RawPath != "/contacts/%C3%A9" {
		t.Fatalf("upstream saw %+v, want /contacts/%%C3%%A9 as sent", r)
	}
}
