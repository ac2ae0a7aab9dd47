package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestMCPAllowedOrigins: mcp.allowed_origins is read normalized, and a
// value that is not an origin stops the load with its path.
func TestMCPAllowedOrigins(t *testing.T) {
	withMCP := func(block string) map[string]string {
		files := baseFiles()
		sub(settingsFile, `"scripts":`, `"mcp": `+block+`, "scripts":`)(t, files)
		return files
	}
	cfg, err := Load(writeConfig(t, withMCP(`{"allowed_origins": ["HTTPS://App.Example.com:443/", "http://localhost:6274"]}`)), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://app.example.com", "http://localhost:6274"}; !slices.Equal(cfg.Settings.MCP.AllowedOrigins, want) {
		t.Errorf("allowed origins %q, want %q", cfg.Settings.MCP.AllowedOrigins, want)
	}
	cfg, err = Load(writeConfig(t, baseFiles()), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Settings.MCP.AllowedOrigins != nil {
		t.Errorf("without an mcp block: %q, want nil (loopback only)", cfg.Settings.MCP.AllowedOrigins)
	}

	for _, c := range []struct{ block, path, msg string }{
		{`{"allowed_origins": ["https://*.example.com"]}`, "mcp.allowed_origins[0]", "is not an origin"},
		{`{"allowed_origins": ["https://app.example.com/path"]}`, "mcp.allowed_origins[0]", "is not an origin"},
		{`{"allowed_origins": ["null"]}`, "mcp.allowed_origins[0]", "is not an origin"},
		{`{"allowed_origins": ["ftp://example.com"]}`, "mcp.allowed_origins[0]", "is not an origin"},
		{`{"allowed_origins": [5]}`, "mcp.allowed_origins[0]", "want a string"},
		{`{"allowed_origins": "https://app.example.com"}`, "mcp.allowed_origins", "want a JSON array"},
		{`{"origins": []}`, "mcp.origins", `unknown field "origins" (allowed: allowed_origins)`},
	} {
		_, err := Load(writeConfig(t, withMCP(c.block)), testEnv)
		var pe *Error
		if !errors.As(err, &pe) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: ~%q", c.block, err, c.path, c.msg)
		}
	}
}

func TestMCPOriginAllowed(t *testing.T) {
	loopback := MCP{}
	listed := MCP{AllowedOrigins: []string{"https://app.example.com"}}
	none := MCP{AllowedOrigins: []string{}}
	for _, c := range []struct {
		m      MCP
		origin string
		want   bool
	}{
		{loopback, "http://localhost:6274", true},
		{loopback, "http://127.0.0.1:8080", true},
		{loopback, "http://[::1]:3000", true},
		{loopback, "https://evil.example", false},
		{loopback, "http://localhost.evil.example", false},
		{loopback, "null", false},
		{loopback, "", false},
		{listed, "https://app.example.com", true},
		{listed, "https://APP.example.com:443", true},
		{listed, "http://app.example.com", false},
		{listed, "http://localhost:6274", false},
		{none, "http://localhost:6274", false},
	} {
		if got := c.m.OriginAllowed(c.origin); got != c.want {
			t.Errorf("%v allows %q: %v, want %v", c.m.AllowedOrigins, c.origin, got, c.want)
		}
	}
}
