// Package events_test checks that the sample events in this folder, used by `sam local
// invoke` and the handler tests, are API Gateway v2 HTTP events (payload format 2.0), and
// that each reaches a handler through the Lambda edge adapter as the request it describes.
package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/httpapi"
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

// TestSampleEventsThroughTheEdge: each sample event, invoked as the Lambda
// runtime invokes a function (JSON in, JSON out) through the edge adapter,
// reaches the handler as the request it describes: the method, the raw
// path and query, the headers and the body.
func TestSampleEventsThroughTheEdge(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var e events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			var saw string
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				saw = fmt.Sprintf("%s %s?%s %s %s %s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Host, b)
				w.WriteHeader(http.StatusTeapot)
			})
			out, err := lambda.NewHandler(httpapi.Lambda(h)).Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			var resp events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != http.StatusTeapot {
				t.Fatalf("response %s: %v", out, err)
			}
			want := fmt.Sprintf("%s %s?%s %s %s %s", e.RequestContext.HTTP.Method, e.RawPath, e.RawQueryString, e.Headers["authorization"], e.Headers["host"], e.Body)
			if saw != want {
				t.Errorf("the handler saw %q, want %q", saw, want)
			}
		})
	}
}
