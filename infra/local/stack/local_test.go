package stack

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLinkBase: links follow --addr when settings.public_url is a loopback
// address on another port, and say so; any other public_url is kept.
func TestLinkBase(t *testing.T) {
	listen := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
	tests := []struct {
		name, public, override, want string
		note                         bool
	}{
		{"same port", "http://127.0.0.1:9000", "", "http://127.0.0.1:9000", false},
		{"loopback on another port", "http://127.0.0.1:8080", "", "http://127.0.0.1:9000", true},
		{"localhost on another port", "http://localhost:8080", "", "http://localhost:9000", true},
		{"ipv6 loopback", "http://[::1]:8080", "", "http://[::1]:9000", true},
		{"a public address is kept", "https://gw.example.com", "", "https://gw.example.com", false},
		{"a tunnel on loopback's name is not guessed", "https://127.0.0.1.nip.io:8080", "", "https://127.0.0.1.nip.io:8080", false},
		{"override wins", "http://127.0.0.1:8080", "http://127.0.0.1:1", "http://127.0.0.1:1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := linkBase(tt.public, listen, tt.override)
			if got != tt.want || (note != "") != tt.note {
				t.Errorf("linkBase = %q, note %q; want %q, note %v", got, note, tt.want, tt.note)
			}
		})
	}
}

// TestDefaultConfigElsewhere runs the shipped configuration with the
// gateway and the demo CRM on other ports than the defaults: the console
// link uses the gateway's real port, and the gateway calls the demo where it
// actually listens (a demo CRM left on 127.0.0.1:8081 by another process
// must never receive the call).
func TestDefaultConfigElsewhere(t *testing.T) {
	var console syncBuffer
	s, err := Start(context.Background(), Options{ConfigDir: "../../config", Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		DemoUpstream: "127.0.0.1:0", Stdout: &console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	banner := s.Banner()
	if !strings.Contains(banner, "approval links point to "+s.URL) || !strings.Contains(banner, "connection crm calls the demo upstream at "+s.DemoURL) {
		t.Errorf("banner does not say where links and the demo are:\n%s", banner)
	}
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer cs_demo_ask")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := do("GET", "/v1/rest/crm/contacts/12", ""); st != 200 || !strings.Contains(body, "McCarthy") {
		t.Fatalf("GET through the gateway: %d %s", st, body)
	}
	if n := len(s.Demo.Requests()); n != 1 {
		t.Errorf("the demo on %s saw %d requests, want 1", s.DemoURL, n)
	}
	if st, body := do("POST", "/v1/calls", `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`); st != 202 {
		t.Fatalf("pause: %d %s", st, body)
	}
	link := regexp.MustCompile(`http://\S+/approve/\S+`)
	deadline := time.Now().Add(10 * time.Second)
	for !link.MatchString(console.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := link.FindString(console.String()); !strings.HasPrefix(got, s.URL+"/approve/") {
		t.Errorf("console link %q, want it on %s", got, s.URL)
	}
}

// TestPathsRefusedAsSent: dot segments and empty segments are refused with
// 400, as sent, never cleaned into another path or redirected.
func TestPathsRefusedAsSent(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, p := range []string{"/v1/rest/crm/contacts/../accounts/2", "/v1/rest/crm/contacts/%2e%2e/accounts/2",
		"/v1/rest/crm//accounts/2", "/v1/rest/crm/contacts//12", "/v1/rest/crm/./contacts/12"} {
		for _, m := range []string{"GET", "DELETE"} {
			r := h.do(m, p, "cs_test_run", nil, nil)
			if r.status != 400 || r.str("code") != "invalid_request" {
				t.Errorf("%s %s: %d %s, want 400 invalid_request", m, p, r.status, r.body)
			}
		}
	}
	r := h.call("cs_test_run", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts//12", "intent": "read"})
	expect(t, r, 400, "invalid_request")
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestApprovedShowsRedemptionDeadline: once approved, the status and the
// page give the redemption deadline; after it, the page says the agent did
// not run it in time, and the status reads expired.
func TestApprovedShowsRedemptionDeadline(t *testing.T) {
	h := newHarness(t, harnessOptions{redeemSeconds: 2})
	id, link := h.pause("cs_test_ask", deleteContact12)
	pending := h.do("GET", "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, h.post(link, "approve", nil, "application/json"), 200, "")
	approved := h.do("GET", "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	redeemBy := approved.str("redeem_by")
	if approved.str("status") != "approved" || redeemBy == "" || approved.str("expires_at") != redeemBy || redeemBy == pending.str("expires_at") {
		t.Errorf("approved status %s: want expires_at = redeem_by, not the old %s", approved.body, pending.str("expires_at"))
	}
	page := h.do("GET", link, "", nil, nil)
	if !strings.Contains(string(page.body), "the agent can run it until") {
		t.Errorf("the page after approval does not give the deadline:\n%s", page.body)
	}
	time.Sleep(2100 * time.Millisecond)
	page = h.do("GET", link, "", nil, nil)
	if !strings.Contains(string(page.body), "did not run it in time") {
		t.Errorf("the page after the window still waits:\n%s", page.body)
	}
	if st := h.statusOf("cs_test_ask", id); st != "expired" {
		t.Errorf("status %s, want expired", st)
	}
}

// TestLimitsOverHTTP: over a per-credential limit the agent gets 429
// rate_limited with Retry-After; a body too large to hold for a person is
// 413; neither reaches the upstream or leaves anything pending.
func TestLimitsOverHTTP(t *testing.T) {
	h := newHarness(t, harnessOptions{limits: `{"calls_per_minute": 3, "pending_confirmations": 1, "stored_body_bytes": 64}`})
	expect(t, h.call("cs_test_ask", deleteContact12), 202, "")
	r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "DELETE", "path": "/contacts/13", "intent": "write"})
	expect(t, r, 429, "rate_limited")
	if ra := r.header.Get("Retry-After"); ra != "600" {
		t.Errorf("Retry-After %q, want 600", ra)
	}
	big := map[string]any{"connection": "crm", "method": "POST", "path": "/payments", "intent": "write",
		"body": map[string]any{"amount": 5, "memo": strings.Repeat("x", 100)}}
	expect(t, h.call("cs_test_ask", big), 413, "payload_too_large")
	// The per-minute allowance (3) is spent by now.
	r = h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/12", "intent": "read"})
	expect(t, r, 429, "rate_limited")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}
