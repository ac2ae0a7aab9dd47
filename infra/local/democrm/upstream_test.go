package democrm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/countersign/countersign/infra/local/democrm"
	"github.com/countersign/countersign/shared/upstream"
)

// TestThroughUpstreamClient drives the demo CRM the way the gateway does: with
// shared/upstream and the crm connection's configured header.
func TestThroughUpstreamClient(t *testing.T) {
	s := democrm.New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := &upstream.Client{}
	call := upstream.Request{
		BaseURL:        srv.URL,
		Headers:        map[string]string{"X-Demo-Client": "countersign"},
		Method:         "DELETE",
		Path:           "/contacts/12",
		IdempotencyKey: "cf_1",
	}
	for range 2 {
		resp, err := c.Do(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusNoContent {
			t.Fatalf("status = %d, want 204 both times", resp.Status)
		}
	}
	if _, ok := s.Contact(12); ok {
		t.Fatal("contact 12 not deleted")
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Replayed || !reqs[1].Replayed {
		t.Fatalf("recorded %+v, want the call then its replay", reqs)
	}
	r := reqs[0]
	if r.Header.Get("X-Demo-Client") != "countersign" || r.IdempotencyKey != "cf_1" || r.Header.Get("Authorization") != "" {
		t.Fatalf("headers = %v", r.Header)
	}

	resp, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/1"})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := resp.JSONBody()
	if !ok || v.(map[string]any)["name"] != "Ada Lovelace" {
		t.Fatalf("JSONBody = %v, %v", v, ok)
	}
}
