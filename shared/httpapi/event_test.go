package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEventFromHTTP: the event carries the request as API Gateway would
// send it: lower-case header names (common and other), the body whole
// (declared length or not) and cut at MaxBody+1, a request id unique in
// the process, and the time in API Gateway's form.
func TestEventFromHTTP(t *testing.T) {
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
			before := time.Now()
			ev, err := EventFromHTTP(r)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Body != tt.wantBody || ev.IsBase64Encoded {
				t.Errorf("body %d bytes (base64 %v), want %d", len(ev.Body), ev.IsBase64Encoded, len(tt.wantBody))
			}
			for k, want := range map[string]string{"authorization": "Bearer k", "x-custom-thing": "v", "accept": "a,b", "host": "example.com"} {
				if ev.Headers[k] != want {
					t.Errorf("header %s = %q, want %q (all: %v)", k, ev.Headers[k], want, ev.Headers)
				}
			}
			if len(ev.Headers) != 4 {
				t.Errorf("headers %v, want 4", ev.Headers)
			}
			id := ev.RequestContext.RequestID
			if !idRe.MatchString(id) || ids[id] {
				t.Errorf("request id %q: not 16 hex digits, or seen before", id)
			}
			ids[id] = true
			at := time.UnixMilli(ev.RequestContext.TimeEpoch)
			if at.Before(before.Truncate(time.Millisecond)) || ev.RequestContext.Time != at.UTC().Format("02/Jan/2006:15:04:05 -0700") {
				t.Errorf("time %q, epoch %d", ev.RequestContext.Time, ev.RequestContext.TimeEpoch)
			}
			if ev.RawPath != "/v1/calls" || ev.RawQueryString != "x=1" {
				t.Errorf("path %q query %q", ev.RawPath, ev.RawQueryString)
			}
		})
	}
	// A response body is written whole, text or base64.
	w := httptest.NewRecorder()
	WriteHTTP(w, rawResponse(http.StatusOK, map[string]string{"Content-Type": "application/octet-stream"}, []byte{0xff, 0, 1}))
	if !bytes.Equal(w.Body.Bytes(), []byte{0xff, 0, 1}) {
		t.Errorf("binary body written as %v", w.Body.Bytes())
	}
}
