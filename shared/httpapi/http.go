package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/reqlog"
)

// MaxBody is the largest request body accepted (docs/api.md: 1 MiB).
const MaxBody = 1 << 20

// BodyTimeout is how long a surface waits, by default, for a request's
// body once its headers are read: a body that has not arrived by then is
// answered 408 and its connection closed.
const BodyTimeout = 30 * time.Second

// A reply is an answer built before it is sent: the agents' routes keep
// it for idempotent replays and turn it into an event stream, and every
// route sends it with send.
type reply struct {
	status int
	// header keeps the names as the surface spells them (all canonical);
	// Set-Cookie values go out one per cookie.
	header http.Header
	body   []byte
}

// send writes the reply.
func (rp reply) send(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range rp.header {
		h[k] = vs
	}
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if len(rp.body) > 0 {
		_, _ = w.Write(rp.body)
	}
}

// set sets one header value, keeping the name as spelt.
func (rp reply) set(name, value string) { rp.header[name] = []string{value} }

// rawReply is a reply with the given headers (one value each) and body.
func rawReply(status int, headers map[string]string, b []byte) reply {
	rp := reply{status: status, header: make(http.Header, len(headers)+1), body: b}
	for k, v := range headers {
		rp.header[k] = []string{v}
	}
	return rp
}

// encodeBuffers are reused by jsonReply; one grown past 64 KiB is
// dropped rather than kept.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// jsonReply encodes v as the JSON body of a reply.
func jsonReply(status int, v any) reply {
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
		return reply{status: http.StatusInternalServerError, header: http.Header{"Content-Type": {"application/json"}},
			body: []byte(`{"status":"error","code":"internal","reason":"response could not be encoded"}` + "\n")}
	}
	return reply{status: status, header: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}},
		body: bytes.Clone(buf.Bytes())}
}

// header returns a request header, its values joined with commas as API
// Gateway joins a repeated header (so a repeated Authorization is one
// value no key matches, on every listener); Host is the request's host.
func header(r *http.Request, name string) string {
	if strings.EqualFold(name, "Host") {
		return r.Host
	}
	vs := r.Header.Values(name)
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs, ",")
}

// method returns the request's method in upper case.
func method(r *http.Request) string { return strings.ToUpper(r.Method) }

// rawPathKey holds, in a request's context, the path exactly as API
// Gateway delivered it (Lambda, lambda.go).
type rawPathKey struct{}

// requestPath is the request's path as the client sent it, escapes
// included: API Gateway's rawPath at the Lambda edge, the escaped path of
// the request line on net/http. The routes and the canonical-request
// checks read these bytes, never a decoded path.
func requestPath(r *http.Request) string {
	if p, ok := r.Context().Value(rawPathKey{}).(string); ok {
		return p
	}
	return r.URL.EscapedPath()
}

// clientIP is the address the request came from (API Gateway's sourceIp,
// or the connection's peer without its port).
func clientIP(r *http.Request) string {
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return ip
	}
	return r.RemoteAddr
}

// bearerKey is the key of an Authorization: Bearer header, or "".
func bearerKey(r *http.Request) string {
	scheme, key, ok := strings.Cut(header(r, "Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return key
}

// withRequestID returns r's context carrying its request id: API
// Gateway's (the Lambda edge puts it there), or a new one, so that every
// log line of the request names it.
func withRequestID(r *http.Request) context.Context {
	ctx := r.Context()
	if reqlog.ID(ctx) != "" {
		return ctx
	}
	return reqlog.With(ctx, newRequestID())
}

// bodyFront reads request bodies the same way for every surface: a body
// declared over MaxBody is refused before a byte is read; the rest is
// read within a deadline into a buffer that grows as bytes arrive.
type bodyFront struct {
	// timeout bounds the wait for the body (0: BodyTimeout).
	timeout time.Duration
}

// tooLarge answers a body declared over MaxBody, unread; it reports
// whether it answered.
func tooLarge(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength <= MaxBody {
		return false
	}
	writeUnread(w, r, codeError(fault.PayloadTooLarge, "the request body is over 1 MiB"))
	return true
}

// read reads at most MaxBody+1 bytes of r's body (one more, so an
// oversized body is seen as such by the route). The deadline covers the
// body only (the server's ReadHeaderTimeout covers the headers); it is
// lifted once the body is in, so a long poll or a stream is not cut. A
// writer that cannot set it (the Lambda edge's, a test's recorder) has no
// connection to hold. When the body cannot be read, read has answered and
// returns false.
func (f bodyFront) read(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	timeout := f.timeout
	if timeout <= 0 {
		timeout = BodyTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	b, err := callbody.ReadLimited(r.Body, r.ContentLength, MaxBody)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeUnread(w, r, jsonReply(http.StatusRequestTimeout, errorBody{Status: "error", Code: string(fault.InvalidRequest),
			Reason: fmt.Sprintf("the request body did not arrive within %s", timeout)}))
		return nil, false
	case err != nil:
		writeUnread(w, r, codeError(fault.InvalidRequest, fmt.Sprintf("read body: %v", err)))
		return nil, false
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, true
}

// writeUnread answers a request whose body was not (wholly) read, and
// closes its connection: the rest of the body is never waited for.
func writeUnread(w http.ResponseWriter, r *http.Request, rp reply) {
	closeUnread(w, r)
	rp.send(w)
}

// closeUnread marks the answer of a request whose body is left unread to
// close its connection, and ends the wait for the rest of the body now,
// where there is a connection (a writer that can set a read deadline; the
// Lambda edge's has none).
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 && http.NewResponseController(w).SetReadDeadline(time.Now()) == nil {
		w.Header().Set("Connection", "close")
	}
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
