package upstream_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/upstream"
)

// countingServer starts a test upstream answering with h (nil: {"ok":true}),
// and counts the connections it accepts and the requests it serves.
func countingServer(tb testing.TB, h http.HandlerFunc) (srv *httptest.Server, conns, reqs *atomic.Int32) {
	tb.Helper()
	conns, reqs = new(atomic.Int32), new(atomic.Int32)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		io.Copy(io.Discard, r.Body)
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv, conns, reqs
}

// rawUpstream accepts connections on 127.0.0.1 and hands each to serve.
func rawUpstream(tb testing.TB, serve func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close() // the client's pooled connections stay open
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// The default client keeps one connection for calls one after another,
// reads and writes alike, and the upstream sees each call once.
func TestDirectReusesTheConnection(t *testing.T) {
	srv, conns, reqs := countingServer(t, nil)
	c := &upstream.Client{}
	for i := range 20 {
		m, body := "GET", []byte(nil)
		if i%2 == 1 {
			m, body = "POST", []byte(`{"n":1}`)
		}
		resp, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: m, Path: "/contacts/12", Body: body})
		if err != nil || resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
			t.Fatalf("call %d: %v %+v", i, err, resp)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections, want 1", n)
	}
	if n := reqs.Load(); n != 20 {
		t.Errorf("the upstream saw %d requests, want 20", n)
	}
}

// The upstream closing idle connections loses no call: a GET goes on a new
// connection, once.
func TestDirectUpstreamClosedIdleConnections(t *testing.T) {
	srv, got := recorder(t, nil)
	c := &upstream.Client{}
	for i := range 5 {
		resp, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x"})
		if err != nil || resp.Status != 200 {
			t.Fatalf("call %d: %v", i, err)
		}
		srv.CloseClientConnections()
	}
	if n := len(got()); n != 5 {
		t.Errorf("the upstream saw %d requests, want 5", n)
	}
}

// A write whose connection breaks after it was sent is not sent again:
// the upstream may have acted on it.
func TestDirectNeverResendsAWrite(t *testing.T) {
	var posts atomic.Int32
	base := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if req.Method == "POST" {
				posts.Add(1)
				return // closed without an answer
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
		}
	})
	c := &upstream.Client{}
	// A first call leaves a pooled connection, which the POST reuses.
	if _, err := c.Do(context.Background(), upstream.Request{BaseURL: base, Method: "GET", Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Do(context.Background(), upstream.Request{BaseURL: base, Method: "POST", Path: "/x", Body: []byte(`{}`)})
	if !errors.Is(err, upstream.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("the upstream received the POST %d times, want 1", n)
	}
}

// What goes on the wire is what http.Transport sends: the same request
// line, headers (Accept-Encoding: gzip included) and body; a gzip answer
// comes back decoded, and 1xx answers are skipped.
func TestDirectSendsWhatTheTransportSends(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []*http.Request
		rest []string
	)
	base := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			mu.Lock()
			reqs, rest = append(reqs, req), append(rest, string(b))
			mu.Unlock()
			var zb strings.Builder
			zw := gzip.NewWriter(&zb)
			io.WriteString(zw, `{"name":"Ada"}`)
			zw.Close()
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: "+
				itoa(zb.Len())+"\r\n\r\n"+zb.String())
		}
	})
	call := upstream.Request{BaseURL: base, Method: "PUT", Path: "/contacts/12", RawQuery: "a=1",
		Body: []byte(`{"name":"Ada"}`), IdempotencyKey: "k1", IfMatch: `"v1"`,
		Headers: map[string]string{"Authorization": "Bearer s"}, Forward: map[string]string{"Accept": "application/json"}}
	clients := []*upstream.Client{{}, {HTTP: &http.Client{Transport: upstream.NewTransport()}}}
	for _, c := range clients {
		resp, err := c.Do(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 200 || string(resp.Body) != `{"name":"Ada"}` || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Length") != "" {
			t.Fatalf("response = %d %v %s", resp.Status, resp.Header, resp.Body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("the upstream saw %d requests, want 2", len(reqs))
	}
	d, s := reqs[0], reqs[1]
	if d.Method != s.Method || d.RequestURI != s.RequestURI || d.Proto != s.Proto || d.Host != s.Host || rest[0] != rest[1] ||
		d.ContentLength != s.ContentLength || !slices.Equal(d.TransferEncoding, s.TransferEncoding) {
		t.Errorf("direct sent %s %s %s host %s %q, the transport %s %s %s host %s %q",
			d.Method, d.RequestURI, d.Proto, d.Host, rest[0], s.Method, s.RequestURI, s.Proto, s.Host, rest[1])
	}
	if len(d.Header) != len(s.Header) {
		t.Errorf("direct sent headers %v, the transport %v", d.Header, s.Header)
	}
	for k, v := range s.Header {
		if !slices.Equal(d.Header[k], v) {
			t.Errorf("header %s: direct sent %q, the transport %q", k, d.Header[k], v)
		}
	}
	if d.Header.Get("Accept-Encoding") != "gzip" {
		t.Errorf("Accept-Encoding = %q, want gzip", d.Header.Get("Accept-Encoding"))
	}
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// A call cancelled while the upstream thinks (the agent went away) ends
// with the context's error, and the next call gets a connection that works.
func TestDirectCancelledWhileWaiting(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	})
	c := &upstream.Client{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err := c.Do(ctx, upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/slow"})
	if !errors.Is(err, upstream.ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnreachable wrapping Canceled", err)
	}
	resp, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/fast"})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("the next call: %v", err)
	}
}

// An answer the client stops reading (over MaxBody) closes its connection
// rather than pooling it mid-body.
func TestDirectTooLargeClosesTheConnection(t *testing.T) {
	srv, conns, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 64<<10))
			return
		}
		io.WriteString(w, "ok")
	})
	c := &upstream.Client{MaxBody: 1 << 10}
	if _, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/big"}); !errors.Is(err, upstream.ErrResponseTooLarge) {
		t.Fatalf("err = %v, want ErrResponseTooLarge", err)
	}
	resp, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/small"})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("the next call: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("the upstream accepted %d connections, want 2 (the first closed)", n)
	}
}

// A kept-alive call, with the test upstream's own work in the same process,
// allocates no more than this: 53 when measured (59 before the call's
// context made its timer only when something waits on it, callctx.go),
// 74 on http.Transport.
func TestDirectAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":12,"name":"Ada"}`)
	}))
	t.Cleanup(srv.Close)
	c := &upstream.Client{}
	call := upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/12"}
	if _, err := c.Do(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	const bound = 56
	n := testing.AllocsPerRun(200, func() {
		if _, err := c.Do(context.Background(), call); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations a call", n)
	if n > bound {
		t.Errorf("%.0f allocations a call, want at most %d", n, bound)
	}
}

// An answer whose headers never end is refused at the transport's bound,
// not read into memory without one.
func TestDirectBoundsTheHeaders(t *testing.T) {
	base := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for range 11 << 10 { // 11 MiB of headers
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: base, Method: "GET", Path: "/x"})
	if !errors.Is(err, upstream.ErrUnreachable) || !strings.Contains(err.Error(), "headers are too large") {
		t.Fatalf("err = %v, want ErrUnreachable for headers over the bound", err)
	}
}

// A header the transport refuses (a control character in a value that
// came with the agent's request) is refused here too, and nothing is sent.
func TestDirectRefusesWhatTheTransportRefuses(t *testing.T) {
	srv, conns, reqs := countingServer(t, nil)
	clients := []*upstream.Client{{}, {HTTP: &http.Client{Transport: upstream.NewTransport()}}}
	for i, c := range clients {
		_, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "POST", Path: "/x", Body: []byte(`{}`), ContentType: "application/json\r\nX-Injected: 1"})
		if err == nil || !strings.Contains(err.Error(), "invalid header field value") {
			t.Errorf("client %d: err = %v, want the transport's refusal", i, err)
		}
	}
	if n, m := conns.Load(), reqs.Load(); n != 0 || m != 0 {
		t.Errorf("the upstream accepted %d connections and %d requests, want none", n, m)
	}
}

// An upstream that refuses a large body before reading it is heard: its
// answer comes back, as http.Transport returns it (a body over the direct
// path's size goes through the transport, which writes and reads at once).
func TestDirectEarlyAnswerToALargeBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "too large", http.StatusRequestEntityTooLarge) // the body unread
	}))
	t.Cleanup(srv.Close)
	for _, size := range []int{100, 4 << 20} {
		resp, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "POST", Path: "/x",
			Body: []byte(`"` + strings.Repeat("a", size) + `"`)})
		if err != nil || resp.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("a %d-byte body: %v %+v, want the upstream's 413", size, err, resp)
		}
	}
}
