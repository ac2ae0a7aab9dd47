package mcpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/reqlog"
)

var _ httpapi.Handler = (*Handler)(nil)

// Handle serves one API Gateway v2 event: it rebuilds the *http.Request the
// event describes, runs ServeHTTP into a buffered response, and returns
// that response. The answer is one JSON body (or an empty 202 for a
// notification): the handler is stateless and never streams.
func (h *Handler) Handle(ctx context.Context, ev httpapi.Request) (httpapi.Response, error) {
	ctx = reqlog.With(ctx, ev.RequestContext.RequestID)
	rec := newBuffered()
	r, err := requestOf(ctx, &ev)
	if err != nil {
		writeRPCError(rec, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()})
		return responseOf(rec), nil
	}
	h.ServeHTTP(rec, r)
	return responseOf(rec), nil
}

// requestOf is the *http.Request an event describes.
func requestOf(ctx context.Context, ev *httpapi.Request) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, fmt.Errorf("body is not valid base64: %w", err)
		}
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	u := &url.URL{Path: path, RawQuery: ev.RawQueryString}
	if unescaped, err := url.PathUnescape(path); err == nil {
		u.Path, u.RawPath = unescaped, path
	}
	r, err := http.NewRequestWithContext(ctx, strings.ToUpper(ev.RequestContext.HTTP.Method), u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	for k, v := range ev.Headers {
		// API Gateway joins repeated headers with commas.
		r.Header.Set(k, v)
	}
	for _, c := range ev.Cookies {
		r.Header.Add("Cookie", c)
	}
	r.Host = ev.Headers["host"]
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	r.Proto = ev.RequestContext.HTTP.Protocol
	return r, nil
}

// buffered is the one response the handler writes for an event: the
// headers as they were when the status was written, the status and the
// body, held until the handler returns (a Lambda answers once).
type buffered struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func newBuffered() *buffered { return &buffered{header: http.Header{}} }

func (b *buffered) Header() http.Header { return b.header }

func (b *buffered) WriteHeader(status int) {
	if b.sent != nil {
		return
	}
	b.status, b.sent = status, b.header.Clone()
}

func (b *buffered) Write(p []byte) (int, error) {
	if b.sent == nil {
		b.WriteHeader(http.StatusOK)
	}
	return b.body.Write(p)
}

// Flush has nothing to send early: the event's answer is the whole body.
func (b *buffered) Flush() {}

// responseOf is the event response of a buffered one.
func responseOf(rec *buffered) httpapi.Response {
	if rec.sent == nil {
		rec.WriteHeader(http.StatusOK)
	}
	resp := httpapi.Response{StatusCode: rec.status, Headers: map[string]string{}}
	for k, vs := range rec.sent {
		if len(vs) > 0 {
			resp.Headers[k] = strings.Join(vs, ", ")
		}
	}
	b := rec.body.Bytes()
	if utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}
