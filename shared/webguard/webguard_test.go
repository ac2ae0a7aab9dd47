package webguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestForeignHost(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	tests := []struct {
		name    string
		local   net.Addr
		host    string
		public  string
		foreign bool
	}{
		{"loopback address", loopback, "127.0.0.1:8080", "", false},
		{"localhost", loopback, "localhost:8080", "", false},
		{"a .localhost name", loopback, "app.localhost:8080", "", false},
		{"IPv6 loopback", loopback, "[::1]:8080", "", false},
		{"the public_url's host", loopback, "countersign.example.com", "https://countersign.example.com", false},
		{"the public_url's host, another case", loopback, "CounterSign.Example.com:443", "https://countersign.example.com", false},
		{"a rebinding name", loopback, "rebound.attacker.example:8080", "https://countersign.example.com", true},
		{"a name ending in the public host", loopback, "evilcountersign.example.com", "https://countersign.example.com", true},
		{"no Host", loopback, "", "", true},
		{"a public listener (API Gateway) is not judged here", public, "anything.example", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = tt.host
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
			if got := ForeignHost(r, tt.public); (got != "") != tt.foreign {
				t.Errorf("ForeignHost = %q, want foreign %v", got, tt.foreign)
			}
		})
	}
}

func TestCrossSite(t *testing.T) {
	tests := []struct {
		name          string
		origin, fetch string
		cross         bool
	}{
		{"no headers (curl)", "", "", false},
		{"same origin", "http://127.0.0.1:8080", "same-origin", false},
		{"typed into the bar", "", "none", false},
		{"another origin", "https://evil.example", "", true},
		{"same-site but another origin", "", "same-site", true},
		{"cross-site fetch metadata", "", "cross-site", true},
		{"an origin on another port", "http://127.0.0.1:9999", "", true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/approve/x", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.fetch != "" {
			r.Header.Set("Sec-Fetch-Site", tt.fetch)
		}
		if got := CrossSite(r); got != tt.cross {
			t.Errorf("%s: CrossSite = %v, want %v", tt.name, got, tt.cross)
		}
	}
}

func TestToken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok := Token(key, "approve", "session-a", now.Add(time.Minute))
	tests := []struct {
		name             string
		key              []byte
		purpose, binding string
		token            string
		at               time.Time
		ok               bool
	}{
		{"its own browser", key, "approve", "session-a", tok, now, true},
		{"another browser", key, "approve", "session-b", tok, now, false},
		{"another form", key, "operator", "session-a", tok, now, false},
		{"expired", key, "approve", "session-a", tok, now.Add(2 * time.Minute), false},
		{"another key", []byte("fedcba9876543210fedcba9876543210"), "approve", "session-a", tok, now, false},
		{"no binding", key, "approve", "", Token(key, "approve", "", now.Add(time.Minute)), now, false},
		{"garbage", key, "approve", "session-a", "x.y", now, false},
		{"empty", key, "approve", "session-a", "", now, false},
	}
	for _, tt := range tests {
		if got := TokenOK(tt.key, tt.purpose, tt.binding, tt.token, tt.at); got != tt.ok {
			t.Errorf("%s: TokenOK = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
