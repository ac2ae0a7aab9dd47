package upstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/countersign/countersign/shared/upstream"
)

// TestIfMatch: Request.IfMatch goes out as If-Match; a value that is not
// a valid header value sends nothing.
func TestIfMatch(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("If-Match"))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := &upstream.Client{}
	if _, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "DELETE", Path: "/contacts/12", IfMatch: `"v7"`}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "DELETE", Path: "/contacts/12", IfMatch: "bad\nvalue"}); err == nil {
		t.Error("a bad If-Match value was sent")
	}
	if len(got) != 1 || got[0] != `"v7"` {
		t.Errorf("If-Match received %q, want one \"v7\"", got)
	}
}
