package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

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

// MaxBody is the largest request body accepted (API.md: 1 MiB).
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

// jsonResponse encodes v as the JSON body of a response.
func jsonResponse(status int, v any) Response {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Response{StatusCode: http.StatusInternalServerError, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"status":"error","code":"internal","reason":"response could not be encoded"}` + "\n"}
	}
	return Response{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, Body: buf.String()}
}

// ServeHTTP adapts an event Handler to net/http for the local stack: it
// translates the request into the API Gateway v2 event that API Gateway
// would send and writes the handler's response back.
func ServeHTTP(h Handler, w http.ResponseWriter, r *http.Request) {
	req, err := EventFromHTTP(r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			WriteHTTP(w, codeError(fault.PayloadTooLarge, "the request body is over 1 MiB"))
			return
		}
		WriteHTTP(w, codeError(fault.InvalidRequest, err.Error()))
		return
	}
	resp, err := h.Handle(r.Context(), req)
	if err != nil {
		WriteHTTP(w, codeError(fault.Internal, "internal error"))
		return
	}
	WriteHTTP(w, resp)
}

// EventFromHTTP builds the API Gateway v2 event for a net/http request. The
// body is limited to MaxBody (plus one byte, so an oversized body is seen as
// such by the handler).
func EventFromHTTP(r *http.Request) (Request, error) {
	var b []byte
	if r.Body != nil {
		var err error
		b, err = io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		if err != nil {
			return Request{}, fmt.Errorf("read body: %w", err)
		}
	}
	headers := make(map[string]string, len(r.Header))
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	req := Request{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: newRequestID(),
			Stage:     "$default",
			Time:      time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(b) {
		req.Body = string(b)
	} else {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return req, nil
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
	b := []byte(resp.Body)
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
	_, _ = w.Write(b)
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
