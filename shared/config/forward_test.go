package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withForward puts a forward_headers list into the crm policy.
func withForward(list string) edit {
	return sub(crmFile, `"base_url"`, `"forward_headers": `+list+`, "base_url"`)
}

func TestLoadForwardHeaders(t *testing.T) {
	files := baseFiles()
	withForward(`["X-Tenant-Id", "x-dry-run", "Stripe-Account", "Prefer", "If-Match"]`)(t, files)
	cfg, err := Load(writeConfig(t, files), testEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{"X-Tenant-Id", "X-Dry-Run", "Stripe-Account", "Prefer", "If-Match"}
	if got := cfg.Connections["crm"].ForwardHeaders; !slices.Equal(got, want) {
		t.Errorf("ForwardHeaders = %q, want %q (canonical, in order)", got, want)
	}
	if got := cfg.Connections["billing"].ForwardHeaders; got != nil {
		t.Errorf("billing forwards %q without forward_headers, want nothing beyond the defaults", got)
	}
}

// TestLoadForwardHeadersErrors: each name no connection may forward is a load error
// naming the file, the JSON path and why.
func TestLoadForwardHeadersErrors(t *testing.T) {
	tests := []struct {
		list, path, msg string
	}{
		{`["X_HTTP_METHOD_OVERRIDE"]`, "forward_headers[0]", `"X_HTTP_METHOD_OVERRIDE" has "_": CGI-style servers`},
		{`["X-Tenant-Id", "X_Tenant_Id"]`, "forward_headers[1]", `has "_"`},
		{`["X-Http_method-Override"]`, "forward_headers[0]", `has "_"`},
		{`["X.Tenant"]`, "forward_headers[0]", `has "."`},
		{`["X Tenant"]`, "forward_headers[0]", `has " "`},
		{`[""]`, "forward_headers[0]", "a header needs a name"},
		{`["Connection"]`, "forward_headers[0]", "is never forwarded: hop-by-hop"},
		{`["transfer-encoding"]`, "forward_headers[0]", "is never forwarded: hop-by-hop"},
		{`["Host"]`, "forward_headers[0]", "base_url decides the host"},
		{`["Authorization"]`, "forward_headers[0]", "a credential"},
		{`["Proxy-Authorization"]`, "forward_headers[0]", "credential"},
		{`["Cookie"]`, "forward_headers[0]", "a credential"},
		{`["Countersign-Confirmation"]`, "forward_headers[0]", "Countersign-*"},
		{`["X-Forwarded-For"]`, "forward_headers[0]", "X-Forwarded-*"},
		{`["Forwarded"]`, "forward_headers[0]", "client address"},
		{`["X-HTTP-Method-Override"]`, "forward_headers[0]", "method override"},
		{`["X-Method-Override"]`, "forward_headers[0]", "method override"},
		{`["X-Original-URL"]`, "forward_headers[0]", "URL override"},
		{`["Idempotency-Key"]`, "forward_headers[0]", "<credential>:<key>"},
		{`["Content-Type"]`, "forward_headers[0]", "the body's media type"},
		{`["Accept-Encoding"]`, "forward_headers[0]", "decodes the answer"},
		{`["Accept"]`, "forward_headers[0]", "always forwarded (content negotiation"},
		{`["X-Tenant-Id", "x-tenant-id"]`, "forward_headers[1]", "listed twice"},
		{`[12]`, "forward_headers[0]", "want a string"},
		{`"X-Tenant-Id"`, "forward_headers", "want a JSON array"},
		{`[` + strings.Repeat(`"X-A",`, MaxForwardHeaders) + `"X-B"]`, "forward_headers", fmt.Sprintf("at most %d headers", MaxForwardHeaders)},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			files := baseFiles()
			withForward(tt.list)(t, files)
			dir := writeConfig(t, files)
			cfg, err := Load(dir, testEnv)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want an error", cfg.Connections["crm"].ForwardHeaders)
			}
			file := filepath.Join(dir, filepath.FromSlash(crmFile))
			var found bool
			for _, e := range unwrap(err) {
				var pe *Error
				if errors.As(e, &pe) && pe.File == file && pe.Path == tt.path && strings.Contains(pe.Msg, tt.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no *Error{File: %q, Path: %q, Msg: ~%q} in:\n%s", file, tt.path, tt.msg, err)
			}
		})
	}
}
