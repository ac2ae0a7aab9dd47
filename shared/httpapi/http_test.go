package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/reqlog"
)

// TestRequestAsAPIGatewayGivesIt: a surface reads a request as API Gateway
// would give it: repeated headers joined with commas (common and other
// names, lower-cased for the pipeline, with the host), the body whole
// (declared length or not) and cut at MaxBody+1, a request id unique in
// the process.
func TestRequestAsAPIGatewayGivesIt(t *testing.T) {
	big := strings.Repeat("x", MaxBody+10)
	tests := []struct {
		name     string
		body     io.Reader
		length   int64 // -1: not declared (chunked)
		wantBody string
	}{
		{"no body", nil, 0, ""},
		{"declared", strings.NewReader(`{"a":1}`), 7, `{"a":1}`},
		{"not declared", strings.NewReader(`{"a":1}`), -1, `{"a":1}`},
		{"over the limit", strings.NewReader(big), -1, big[:MaxBody+1]},
		{"over the limit, declared", strings.NewReader(big), int64(len(big)), big[:MaxBody+1]},
		{"empty, declared", strings.NewReader(""), 0, ""},
	}
	ids := map[string]bool{}
	idRe := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/calls?x=1", tt.body)
			r.ContentLength = tt.length
			if tt.body == nil {
				r.Body = http.NoBody
			}
			r.Header.Set("Authorization", "Bearer k")
			r.Header.Set("X-Custom-Thing", "v")
			r.Header.Add("Accept", "a")
			r.Header.Add("Accept", "b")
			b, ok := bodyFront{}.read(httptest.NewRecorder(), r)
			if !ok || string(b) != tt.wantBody {
				t.Errorf("body %d bytes (%v), want %d", len(b), ok, len(tt.wantBody))
			}
			want := map[string]string{"authorization": "Bearer k", "x-custom-thing": "v", "accept": "a,b", "host": "example.com"}
			if diff := cmp.Diff(want, agentHeaders(r)); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if header(r, "Accept") != "a,b" || header(r, "host") != "example.com" || bearerKey(r) != "k" {
				t.Errorf("Accept %q, Host %q, key %q", header(r, "Accept"), header(r, "host"), bearerKey(r))
			}
			id := reqlog.ID(withRequestID(r))
			if !idRe.MatchString(id) || ids[id] {
				t.Errorf("request id %q: not 16 hex digits, or seen before", id)
			}
			ids[id] = true
			if requestPath(r) != "/v1/calls" || r.URL.RawQuery != "x=1" {
				t.Errorf("path %q query %q", requestPath(r), r.URL.RawQuery)
			}
		})
	}
	// A reply body is written whole, text or binary.
	w := httptest.NewRecorder()
	rawReply(http.StatusOK, map[string]string{"Content-Type": "application/octet-stream"}, []byte{0xff, 0, 1}).send(w)
	if !bytes.Equal(w.Body.Bytes(), []byte{0xff, 0, 1}) {
		t.Errorf("binary body written as %v", w.Body.Bytes())
	}
}

// TestLambdaRequest: the edge adapter hands the handler the request the
// event describes: the raw path and query exactly as API Gateway delivered
// them (also bytes net/http would escape again), the method, the headers,
// the host, the cookies as one Cookie header, the body (decoded from
// base64), the source address and the request id.
func TestLambdaRequest(t *testing.T) {
	tests := []struct {
		name          string
		rawPath, path string
		query         string
		body          string
		base64        bool
		wantBody      string
	}{
		{"plain", "/v1/rest/crm/contacts/12", "/v1/rest/crm/contacts/12", "a=1&a=2", `{"a":1}`, false, `{"a":1}`},
		{"escapes kept", "/v1/rest/crm/a%2fb/%61ll", "/v1/rest/crm/a/b/all", "q=%2F%zz", "", false, ""},
		{"bytes net/http would escape", "/v1/rest/crm/a{b}|c", "/v1/rest/crm/a{b}|c", "x=a b", "", false, ""},
		{"base64 body", "/v1/calls", "/v1/calls", "", base64.StdEncoding.EncodeToString([]byte{0xff, 0, 1}), true, "\xff\x00\x01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := events.APIGatewayV2HTTPRequest{
				RawPath: tt.rawPath, RawQueryString: tt.query, Body: tt.body, IsBase64Encoded: tt.base64,
				Cookies: []string{"a=1", "cs_operator=tok"},
				Headers: map[string]string{"host": "gw.example", "authorization": "Bearer k", "accept": "a,b", "x-forwarded-proto": "https"},
				RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-7",
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: tt.path, SourceIP: "203.0.113.9", Protocol: "HTTP/1.1"}},
			}
			var got struct {
				path, query, method, host, remote, id, cookie, accept, body string
				length                                                      int64
			}
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got.path, got.query, got.method, got.host, got.remote = requestPath(r), r.URL.RawQuery, r.Method, r.Host, clientIP(r)
				got.id, got.cookie, got.accept, got.body, got.length = reqlog.ID(r.Context()), cookieValue(r, "cs_operator"), header(r, "Accept"), string(b), r.ContentLength
			})
			if _, err := Lambda(h)(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got.path != tt.rawPath || got.query != tt.query || got.method != "POST" || got.host != "gw.example" || got.remote != "203.0.113.9" ||
				got.id != "req-7" || got.cookie != "tok" || got.accept != "a,b" || got.body != tt.wantBody || got.length != int64(len(tt.wantBody)) {
				t.Errorf("the handler saw %+v", got)
			}
		})
	}
	t.Run("bad base64 is a body that cannot be read", func(t *testing.T) {
		ev := events.APIGatewayV2HTTPRequest{RawPath: "/v1/calls", Body: "%%%", IsBase64Encoded: true}
		var err error
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, err = io.ReadAll(r.Body) })
		_, _ = Lambda(h)(context.Background(), ev)
		if err == nil || !strings.Contains(err.Error(), "base64") {
			t.Errorf("read: %v", err)
		}
	})
}

// TestLambdaResponse: what the handler writes becomes the event response:
// the status (200 when none), the headers as spelt (repeated values joined
// with ", ", as they were when the status was written), every Set-Cookie
// in cookies, and the body as text or base64.
func TestLambdaResponse(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    events.APIGatewayV2HTTPResponse
	}{
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {},
			events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{}}},
		{"a JSON reply", func(w http.ResponseWriter, r *http.Request) {
			rp := jsonReply(http.StatusAccepted, map[string]int{"a": 1})
			rp.set("Location", "/v1/confirmations/cf_1")
			rp.send(w)
		}, events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: "{\"a\":1}\n",
			Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Location": "/v1/confirmations/cf_1"}}},
		{"spellings, repeats and cookies", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["X-XSS-Protection"] = []string{"0"}
			w.Header().Add("Vary", "Accept")
			w.Header().Add("Vary", "Origin")
			w.Header().Add("Set-Cookie", "a=1; Path=/")
			w.Header().Add("Set-Cookie", "b=2")
			w.WriteHeader(http.StatusContinue) // interim: not the answer
			w.WriteHeader(http.StatusForbidden)
			w.Header().Set("X-Late", "not sent")
			w.WriteHeader(http.StatusOK) // a second status is ignored
			_, _ = io.WriteString(w, "no")
		}, events.APIGatewayV2HTTPResponse{StatusCode: 403, Body: "no", Cookies: []string{"a=1; Path=/", "b=2"},
			Headers: map[string]string{"X-XSS-Protection": "0", "Vary": "Accept, Origin"}}},
		{"binary body", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte{0xff, 0, 1})
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{}, Body: "/wAB", IsBase64Encoded: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Lambda(tt.handler)(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: "/"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
