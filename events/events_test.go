// Package events_test checks that the sample events in this folder, used by `sam local
// invoke` and the handler tests, are API Gateway v2 HTTP events (payload format 2.0).
package events_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestSampleEvents(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no sample events found")
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var e events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			req := e.RequestContext.HTTP
			if e.Version != "2.0" {
				t.Errorf("version = %q, want 2.0", e.Version)
			}
			if e.RouteKey == "" || e.RequestContext.RequestID == "" {
				t.Errorf("routeKey %q, requestContext.requestId %q: both must be set", e.RouteKey, e.RequestContext.RequestID)
			}
			if req.Method == "" || req.Path == "" || req.SourceIP == "" {
				t.Errorf("requestContext.http = %+v: method, path and sourceIp must be set", req)
			}
			if !strings.HasPrefix(e.RawPath, "/") || e.RawPath != req.Path {
				t.Errorf("rawPath %q, requestContext.http.path %q: want the same path", e.RawPath, req.Path)
			}
			for k := range e.Headers {
				if k != strings.ToLower(k) {
					t.Errorf("header %q: API Gateway sends header names in lower case", k)
				}
			}
			if e.IsBase64Encoded {
				t.Error("isBase64Encoded: the samples carry plain bodies")
			}
			if e.Body != "" && strings.HasPrefix(e.Headers["content-type"], "application/json") && !json.Valid([]byte(e.Body)) {
				t.Errorf("body is not valid JSON: %s", e.Body)
			}
		})
	}
}
