package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/countersign/countersign/shared/reqlog"
)

// Lambda serves h on API Gateway HTTP API (payload 2.0) events: the one
// place where events are converted. The event becomes the *http.Request
// it describes (rawPath and rawQueryString as API Gateway delivered them,
// the headers, the cookies as one Cookie header, the body decoded from
// base64, sourceIp as RemoteAddr, the request id in the context for the
// log lines), and what h writes becomes the event response: the status
// (200 when none is written), the headers as h spelt them (repeated values
// joined with ", "), each Set-Cookie in cookies, and the body as text, or
// in base64 when it is not UTF-8. A Lambda answers once, so the response
// is held until h returns; flushing it early sends nothing.
//
// It is aws-lambda-go's lambdaurl pattern for API Gateway's buffered
// responses (lambdaurl streams Function URL responses).
func Lambda(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		w := &eventWriter{header: http.Header{}}
		h.ServeHTTP(w, requestOf(ctx, &ev))
		return w.response(), nil
	}
}

// requestOf is the *http.Request an event describes.
func requestOf(ctx context.Context, ev *events.APIGatewayV2HTTPRequest) *http.Request {
	raw := ev.RawPath
	if raw == "" {
		raw = ev.RequestContext.HTTP.Path
	}
	u := &url.URL{Path: raw, RawPath: raw, RawQuery: ev.RawQueryString}
	if p, err := url.PathUnescape(raw); err == nil {
		u.Path = p
	}
	ctx = reqlog.With(ctx, ev.RequestContext.RequestID)
	ctx = context.WithValue(ctx, rawPathKey{}, raw)

	h := make(http.Header, len(ev.Headers)+1)
	host := ""
	for k, v := range ev.Headers {
		if strings.EqualFold(k, "Host") {
			host = v // as net/http: the host is r.Host, not a header
			continue
		}
		h.Add(k, v)
	}
	if len(ev.Cookies) > 0 {
		h.Add("Cookie", strings.Join(ev.Cookies, "; "))
	}
	proto := ev.RequestContext.HTTP.Protocol
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok {
		proto, major, minor = "HTTP/1.1", 1, 1
	}
	r := &http.Request{
		Method: ev.RequestContext.HTTP.Method, URL: u, Proto: proto, ProtoMajor: major, ProtoMinor: minor,
		Header: h, Host: host, RemoteAddr: ev.RequestContext.HTTP.SourceIP, RequestURI: u.RequestURI(),
		Body: http.NoBody,
	}
	switch {
	case ev.IsBase64Encoded:
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			r.Body, r.ContentLength = io.NopCloser(failingReader{fmt.Errorf("body is not valid base64: %w", err)}), -1
			break
		}
		if len(b) > 0 {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}
	case ev.Body != "":
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(ev.Body)), int64(len(ev.Body))
	}
	return r.WithContext(ctx)
}

// failingReader is a body that cannot be read.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// eventWriter holds the one response of an event: the headers as they
// were when the status was written, the status and the body.
type eventWriter struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func (w *eventWriter) Header() http.Header { return w.header }

// WriteHeader records the status; an informational one (1xx) is not the
// answer and is dropped, a second one is ignored.
func (w *eventWriter) WriteHeader(status int) {
	if w.sent != nil || status < 200 {
		return
	}
	w.status, w.sent = status, w.header.Clone()
}

func (w *eventWriter) Write(p []byte) (int, error) {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

// Flush has nothing to send early: the event's answer is the whole body.
func (w *eventWriter) Flush() {}

// response is the event response of what was written.
func (w *eventWriter) response() events.APIGatewayV2HTTPResponse {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: make(map[string]string, len(w.sent))}
	for k, vs := range w.sent {
		switch {
		case len(vs) == 0:
		case k == "Set-Cookie":
			resp.Cookies = append(resp.Cookies, vs...)
		default:
			resp.Headers[k] = strings.Join(vs, ", ")
		}
	}
	b := w.body.Bytes()
	if utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}
