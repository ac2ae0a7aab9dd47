package upstream

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// directTransport sends a plain-HTTP request on the goroutine that calls
// it: it writes the request and reads the answer on a kept-alive
// connection of its own, and hands the connection back to its pool when
// the body has been read to the end.
//
// Why: http.Transport runs a reader and a writer goroutine per connection
// and passes every request and answer between them and the caller (the
// request to the writer, the answer from the reader, the body's end to
// the reader and back): four goroutine wake-ups a call, each of which may
// wake a thread. On loopback, one call at a time, those hand-offs were a
// large part of what the gateway added to a call (docs/performance.md).
//
// It sends what http.Transport would send: the same request line and
// headers (Request.Write is the transport's own writer), with
// Accept-Encoding: gzip added and a gzip answer decoded as the transport
// does it. What it does not do it leaves to fallback, the transport the
// default client uses: https (TLS, HTTP/2), a request a proxy from the
// environment would carry, a request with Expect or a body over
// maxDirectBody, a host that is not ASCII, a header the transport would
// refuse (it refuses it, sending nothing), and platforms where a pooled
// connection cannot be checked.
//
// A request is sent once, as with http.Transport: a pooled connection is
// checked before it is used (the upstream may have closed it while idle),
// and only a request without a body whose method is GET, HEAD, OPTIONS or
// TRACE is sent again, on a new connection, when a pooled connection fails
// before any answer. A write is never sent twice.
type directTransport struct {
	fallback *http.Transport
	dialer   net.Dialer
	// maxIdle and maxIdlePerHost bound the pool; idleTimeout closes a
	// connection idle that long instead of using it.
	maxIdle, maxIdlePerHost int
	idleTimeout             time.Duration
	// maxHeader bounds an answer's head (the status line and headers).
	maxHeader int64

	mu    sync.Mutex
	idle  map[string][]*directConn // host:port → the most recent last
	nIdle int
}

// directConn is one connection with its buffers.
type directConn struct {
	nc     net.Conn
	raw    syscall.RawConn // to check it before reuse; nil: never reused
	lr     limitedConn     // what br reads
	br     *bufio.Reader
	bw     *bufio.Writer
	key    string
	idleAt time.Time
}

// limitedConn reads from a connection at most left bytes, then fails: an
// answer's headers are bounded as http.Transport bounds them
// (MaxResponseHeaderBytes); its body is bounded by its reader.
type limitedConn struct {
	nc   net.Conn
	left int64
}

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errHeadersTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.nc.Read(p)
	l.left -= int64(n)
	return n, err
}

var errHeadersTooLarge = errors.New("the upstream's response headers are too large")

// noLimit is limitedConn's left while a body is read.
const noLimit = 1<<63 - 1

// newDirectTransport returns a directTransport that leaves to fallback what
// it does not send itself, with fallback's pool bounds and idle timeout.
func newDirectTransport(fallback *http.Transport) *directTransport {
	idle := fallback.IdleConnTimeout
	if idle <= 0 {
		idle = 90 * time.Second
	}
	return &directTransport{
		fallback:       fallback,
		dialer:         net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:        max(fallback.MaxIdleConns, 1),
		maxIdlePerHost: max(fallback.MaxIdleConnsPerHost, 1),
		idleTimeout:    idle,
		maxHeader:      cmp.Or(fallback.MaxResponseHeaderBytes, 10<<20), // http.Transport's default
		idle:           make(map[string][]*directConn),
	}
}

// direct reports whether t sends req itself, and to which host:port.
func (t *directTransport) direct(req *http.Request) (string, bool) {
	u := req.URL
	if !canCheckConns || u.Scheme != "http" || u.Host == "" || len(req.Header["Expect"]) > 0 {
		return "", false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.ContentLength < 0 || req.ContentLength > maxDirectBody) {
		return "", false
	}
	host := u.Hostname()
	for i := range len(host) {
		if host[i] >= 0x80 {
			return "", false // IDNA: the transport's own conversion
		}
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			if !validHeader(k, v) {
				return "", false // the transport refuses it, in its words
			}
		}
	}
	if t.fallback.Proxy != nil {
		if p, err := t.fallback.Proxy(req); err != nil || p != nil {
			return "", false
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port), true
}

// RoundTrip sends req and returns the answer; its body must be read to
// the end (or closed) for the connection to be used again. It sets
// Accept-Encoding on req's headers when the transport would have added it.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key, ok := t.direct(req)
	if !ok {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gz := !t.fallback.DisableCompression && req.Header.Get("Accept-Encoding") == "" &&
		req.Header.Get("Range") == "" && req.Method != http.MethodHead
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	for attempt := 0; ; attempt++ {
		c := t.get(key)
		reused := c != nil
		if c == nil {
			var err error
			if c, err = t.dial(ctx, key); err != nil {
				return nil, contextErr(ctx, err)
			}
		}
		resp, err := t.send(ctx, c, req, gz)
		if err == nil {
			return resp, nil
		}
		if reused && attempt == 0 && resendable(req) && ctx.Err() == nil && closedBeforeAnswer(err) {
			continue // the pooled connection was gone; a new one
		}
		return nil, err
	}
}

// send writes req on c and reads the answer's head; on an error c is closed.
func (t *directTransport) send(ctx context.Context, c *directConn, req *http.Request, gz bool) (*http.Response, error) {
	deadline, _ := ctx.Deadline() // zero: none
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.nc.Close()
		return nil, err
	}
	// A cancelled call (the agent went away) stops the reads and writes.
	stop := watch(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.nc.Close()
		return nil, contextErr(ctx, err)
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	c.lr.left = t.maxHeader
	for n := 0; ; n++ {
		var err error
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return fail(err)
		}
		// 1xx answers come before the answer (101 is the answer).
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xx {
			return fail(errors.New("too many 1xx informational responses"))
		}
	}
	c.lr.left = noLimit
	body := &directBody{t: t, c: c, ctx: ctx, body: resp.Body, stop: stop,
		reuse: !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols}
	resp.Body = body
	if gz && body.body != http.NoBody && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		// As http.Transport: decoded, without the headers of the encoded form.
		resp.Body = &gzipBody{body: body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	return resp, nil
}

// maxDirectBody is the largest request body sent directly. The request
// is written whole before the answer is read; a body this small goes into
// the socket's send buffer at once, so an upstream that answers early (a
// 413) without reading it is heard, as http.Transport, which writes and
// reads at the same time, hears it. A larger body goes to the transport.
const maxDirectBody = 8 << 10

// max1xx bounds the informational answers before the answer, as
// http.Transport does.
const max1xx = 5

var aLongTimeAgo = time.Unix(1, 0)

// resendable says whether req may be sent again after a pooled connection
// failed: no body, and a method that changes nothing (RFC 9110 9.2.1).
func resendable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// closedBeforeAnswer says whether err is the upstream's closing of a
// connection before any of its answer.
func closedBeforeAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// contextErr is ctx's error when the call failed because ctx ended (its
// deadline is the connection's), else err.
func contextErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			return context.DeadlineExceeded
		}
	}
	return err
}

// dial opens a connection to key (host:port).
func (t *directTransport) dial(ctx context.Context, key string) (*directConn, error) {
	nc, err := t.dialer.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	c := &directConn{nc: nc, key: key, lr: limitedConn{nc: nc, left: noLimit}, bw: bufio.NewWriterSize(nc, 4<<10)}
	c.br = bufio.NewReaderSize(&c.lr, 4<<10)
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	return c, nil
}

// get takes the most recently used connection to key that is still open,
// or nil.
func (t *directTransport) get(key string) *directConn {
	for {
		t.mu.Lock()
		cs := t.idle[key]
		if len(cs) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		if cs = cs[:len(cs)-1]; len(cs) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = cs
		}
		t.nIdle--
		t.mu.Unlock()
		if time.Since(c.idleAt) < t.idleTimeout && connOpen(c.raw) {
			return c
		}
		c.nc.Close()
	}
}

// put pools c, or closes it when the pool is full.
func (t *directTransport) put(c *directConn) {
	if c.raw == nil || c.br.Buffered() > 0 || c.nc.SetDeadline(time.Time{}) != nil {
		c.nc.Close()
		return
	}
	c.idleAt = time.Now()
	t.mu.Lock()
	cs := t.idle[c.key]
	if t.nIdle >= t.maxIdle || len(cs) >= t.maxIdlePerHost {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	t.idle[c.key] = append(cs, c)
	t.nIdle++
	t.mu.Unlock()
}

// directBody is an answer's body: at its end the connection goes back to
// the pool; closed before, or after an error, the connection is closed.
type directBody struct {
	t     *directTransport
	c     *directConn
	ctx   context.Context
	body  io.ReadCloser
	stop  func() bool
	reuse bool

	mu   sync.Mutex
	done bool
	err  error // what Read returns once done
}

func (b *directBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, b.err
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true, io.EOF)
	case err != nil:
		err = contextErr(b.ctx, err)
		b.finish(false, err)
	}
	return n, err
}

func (b *directBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.finish(false, errBodyClosed)
	}
	return nil
}

var errBodyClosed = errors.New("http: read on closed response body")

// finish ends the body: the connection is pooled when the body was read
// to its end on a connection that may be kept and the call was not
// cancelled meanwhile; else it is closed.
func (b *directBody) finish(end bool, err error) {
	b.done, b.err = true, err
	stopped := b.stop() // false: ctx ended and the deadline was moved
	if end && stopped && b.reuse {
		b.t.put(b.c)
		return
	}
	b.c.nc.Close()
}

// gzipBody decodes a gzip answer on its first read, as http.Transport's
// gzipReader does.
type gzipBody struct {
	body *directBody
	zr   *gzip.Reader
	err  error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.zr == nil {
		if g.err == nil {
			g.zr, g.err = gzip.NewReader(g.body)
		}
		if g.err != nil {
			return 0, g.err
		}
	}
	return g.zr.Read(p)
}

func (g *gzipBody) Close() error { return g.body.Close() }
