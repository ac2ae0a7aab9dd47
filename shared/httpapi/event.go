package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/fault"
)

// Request and Response are API Gateway HTTP API (payload 2.0) events: the
// Lambdas receive them from API Gateway, the local stack builds them from
// net/http requests, so both run the same handler code.
type (
	Request  = events.APIGatewayV2HTTPRequest
	Response = events.APIGatewayV2HTTPResponse
)

// Handler handles one API Gateway v2 event.
type Handler interface {
	Handle(ctx context.Context, req Request) (Response, error)
}

// MaxBody is the largest request body accepted (docs/api.md: 1 MiB).
const MaxBody = 1 << 20

// header returns a request header (API Gateway lower-cases header names).
func header(req *Request, name string) string {
	if v, ok := req.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// method returns the request's HTTP method.
func method(req *Request) string { return strings.ToUpper(req.RequestContext.HTTP.Method) }

// body returns the decoded request body.
func body(req *Request) ([]byte, error) {
	if !req.IsBase64Encoded {
		return []byte(req.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, fmt.Errorf("body is not valid base64: %w", err)
	}
	return b, nil
}

// bodyLen is the decoded length of the request body, without decoding it.
func bodyLen(req *Request) int {
	if req.IsBase64Encoded {
		return base64.StdEncoding.DecodedLen(len(req.Body))
	}
	return len(req.Body)
}

// rawResponse builds a response with a body that may be binary.
func rawResponse(status int, headers map[string]string, b []byte) Response {
	r := Response{StatusCode: status, Headers: headers}
	if utf8.Valid(b) {
		r.Body = string(b)
	} else {
		r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return r
}

// encodeBuffers are reused by jsonResponse; one grown past 64 KiB is
// dropped rather than kept.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// jsonResponse encodes v as the JSON body of a response.
func jsonResponse(status int, v any) Response {
	buf := encodeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			encodeBuffers.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Response{StatusCode: http.StatusInternalServerError, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"status":"error","code":"internal","reason":"response could not be encoded"}` + "\n"}
	}
	return Response{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, Body: buf.String()}
}

// BodyTimeout is how long ServeHTTP waits, by default, for a request's
// body once its headers are read: a body that has not arrived by then is
// answered 408 and its connection closed.
const BodyTimeout = 30 * time.Second

// Preauthenticator is a Handler that answers or authenticates a request
// from its method, path and headers alone, before its body is read (the
// gateway: a missing or unknown Bearer key is 401 whatever the body).
// Preauthenticate gets the event without its body; it returns a response
// to send without reading the body, or the context to handle the request
// in (carrying what it learnt, e.g. the credential).
type Preauthenticator interface {
	Preauthenticate(ctx context.Context, req *Request) (context.Context, *Response)
}

// Server adapts an event Handler to net/http for the local stack: it
// translates the request into the API Gateway v2 event that API Gateway
// would send and writes the handler's response back. The body is read
// after the handler's Preauthenticate (when it has one), within
// BodyTimeout, into a buffer that grows as bytes arrive.
type Server struct {
	Handler Handler
	// BodyTimeout bounds the wait for the body (0: BodyTimeout).
	BodyTimeout time.Duration
}

// ServeHTTP serves r with the default body timeout.
func ServeHTTP(h Handler, w http.ResponseWriter, r *http.Request) {
	Server{Handler: h}.ServeHTTP(w, r)
}

// ServeHTTP serves one request.
func (s Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	timeout := s.BodyTimeout
	if timeout <= 0 {
		timeout = BodyTimeout
	}
	// The deadline covers the body only (the server's ReadHeaderTimeout
	// covers the headers); it is lifted once the body is in, so a long
	// poll or a stream is not cut. A writer that cannot set it (a test's
	// recorder) has no connection to hold.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	req := eventHead(r)
	ctx := r.Context()
	if p, ok := s.Handler.(Preauthenticator); ok {
		var early *Response
		if ctx, early = p.Preauthenticate(ctx, &req); early != nil {
			writeUnread(w, r, *early)
			return
		}
	}
	if r.ContentLength > MaxBody {
		writeUnread(w, r, codeError(fault.PayloadTooLarge, "the request body is over 1 MiB"))
		return
	}
	b, err := readBody(r)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeUnread(w, r, jsonResponse(http.StatusRequestTimeout, errorBody{Status: "error", Code: string(fault.InvalidRequest),
			Reason: fmt.Sprintf("the request body did not arrive within %s", timeout)}))
		return
	case err != nil:
		writeUnread(w, r, codeError(fault.InvalidRequest, err.Error()))
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	setBody(&req, b)
	resp, err := s.Handler.Handle(ctx, req)
	if err != nil {
		WriteHTTP(w, codeError(fault.Internal, "internal error"))
		return
	}
	WriteHTTP(w, resp)
}

// writeUnread answers a request whose body was not (wholly) read, and
// closes its connection: the rest of the body is never waited for.
func writeUnread(w http.ResponseWriter, r *http.Request, resp Response) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	WriteHTTP(w, resp)
}

// EventFromHTTP builds the API Gateway v2 event for a net/http request. The
// body is limited to MaxBody (plus one byte, so an oversized body is seen as
// such by the handler).
func EventFromHTTP(r *http.Request) (Request, error) {
	b, err := readBody(r)
	if err != nil {
		return Request{}, err
	}
	req := eventHead(r)
	setBody(&req, b)
	return req, nil
}

// readBody reads at most MaxBody+1 bytes of r's body.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := callbody.ReadLimited(r.Body, r.ContentLength, MaxBody)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

// setBody puts b in req as API Gateway does: text as it is, anything else
// in base64.
func setBody(req *Request, b []byte) {
	if utf8.Valid(b) {
		req.Body, req.IsBase64Encoded = string(b), false
	} else {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
}

// eventHead is the event of r without its body.
func eventHead(r *http.Request) Request {
	headers := make(map[string]string, len(r.Header)+1)
	for k, vs := range r.Header {
		headers[lowerName(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	return Request{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: newRequestID(),
			Stage:     "$default",
			Time:      requestTime(now),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
}

// WriteHTTP writes an API Gateway v2 response to a net/http response.
func WriteHTTP(w http.ResponseWriter, resp Response) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	var b []byte
	if resp.IsBase64Encoded {
		var err error
		if b, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			http.Error(w, "bad response encoding", http.StatusInternalServerError)
			return
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if resp.IsBase64Encoded {
		_, _ = w.Write(b)
		return
	}
	_, _ = io.WriteString(w, resp.Body)
}

// requestIDs are 16 hex digits: 8 chosen at random when the process starts
// and a counter, so that no request pays for reading random bytes. They
// only tie a request's log lines together.
var (
	requestIDPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestIDs atomic.Uint32
)

func newRequestID() string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], requestIDs.Add(1))
	return requestIDPrefix + hex.EncodeToString(b[:])
}

// stamp is the API Gateway form of one second.
type stamp struct {
	unix int64
	text string
}

var lastStamp atomic.Pointer[stamp]

// requestTime is now in API Gateway's requestContext.time form, formatted
// once a second.
func requestTime(now time.Time) string {
	sec := now.Unix()
	if s := lastStamp.Load(); s != nil && s.unix == sec {
		return s.text
	}
	text := now.UTC().Format("02/Jan/2006:15:04:05 -0700")
	lastStamp.Store(&stamp{unix: sec, text: text})
	return text
}
