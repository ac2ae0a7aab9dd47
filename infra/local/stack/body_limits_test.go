package stack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawRequest opens a TCP connection to the stack and sends a request's
// head (and whatever part of its body is given), leaving the rest unsent.
func rawRequest(t *testing.T, h *harness, method, path, key string, declared int, sent string) net.Conn {
	t.Helper()
	u, _ := url.Parse(h.stack.URL)
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, u.Host, declared)
	if key != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", key)
	}
	b.WriteString("\r\n")
	b.WriteString(sent)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the response on c within wait: its status, or 0 when the
// server closed the connection without one.
func answer(c net.Conn, wait time.Duration) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Issue 15 finding 10: 100 sockets declaring a 1 MiB body without a key
// (or with an unknown one) are answered 401 at once, their bodies never
// read; 100 more with a real key, sending 10 bytes of their 1 MiB, hold a
// few KiB each while they wait (not the 1 MiB they declared), and are
// answered 408 when the body deadline passes.
func TestBodyDeclaredBodiesAreNotBufferedBeforeTheyArrive(t *testing.T) {
	h := newHarness(t, harnessOptions{bodyTimeout: 2 * time.Second})
	const sockets = 100
	before := heapInUse()

	start := time.Now()
	for i := range sockets {
		key := ""
		if i%2 == 1 {
			key = "cs_unknown_key"
		}
		c := rawRequest(t, h, "POST", "/v1/calls", key, 1<<20, "")
		status, err := answer(c, 5*time.Second)
		if err != nil || status != http.StatusUnauthorized {
			t.Fatalf("socket %d without a known key: status %d, %v; want 401 before any body byte", i, status, err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("100 unauthenticated sockets took %s to be answered", took)
	}

	waiting := make([]net.Conn, sockets)
	for i := range waiting {
		waiting[i] = rawRequest(t, h, "POST", "/v1/rest/crm/contacts", "cs_test_run", 1<<20, `{"name":"x`)
	}
	time.Sleep(500 * time.Millisecond) // every socket is in its body read
	grew := int64(heapInUse()) - int64(before)
	t.Logf("heap grew by %d KiB with %d sockets declaring 1 MiB and sending 10 bytes", grew/1024, sockets)
	if grew > 16<<20 {
		t.Fatalf("heap grew by %d MiB while %d sockets waited with 10 bytes of a declared 1 MiB", grew>>20, sockets)
	}
	for i, c := range waiting {
		status, err := answer(c, 10*time.Second)
		if err != nil || (status != http.StatusRequestTimeout && status != 0) {
			t.Fatalf("socket %d sending nothing more: status %d, %v; want 408 or a closed connection after the body deadline", i, status, err)
		}
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// Issue 15 finding 10: a body that trickles in (a byte every 200 ms) is
// cut at the body deadline: 408, and the connection closed.
func TestBodySlowBodiesAreClosedAtTheDeadline(t *testing.T) {
	h := newHarness(t, harnessOptions{bodyTimeout: time.Second})
	const sockets = 20
	conns := make([]net.Conn, sockets)
	for i := range conns {
		conns[i] = rawRequest(t, h, "POST", "/v1/rest/crm/contacts", "cs_test_run", 1000, "")
	}
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range conns {
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for range 1000 {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}
	for i, c := range conns {
		status, err := answer(c, 10*time.Second)
		if err != nil || (status != http.StatusRequestTimeout && status != 0) {
			t.Fatalf("slow socket %d: status %d, %v; want 408 or a closed connection", i, status, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("slow socket %d: the connection stayed open after the 408", i)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("slow bodies were cut after %s, want about the 1 s deadline", took)
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// A legitimate body just under 1 MiB still goes through, also when it
// arrives in pieces within the deadline; one declared over 1 MiB is 413
// before it is sent.
func TestBodyLargeLegitimateBodyStillWorks(t *testing.T) {
	h := newHarness(t, harnessOptions{bodyTimeout: 3 * time.Second})
	name := strings.Repeat("n", 1<<20-1024)
	body := `{"name":"` + name + `"}`
	r := h.do("POST", "/v1/rest/crm/contacts", "cs_test_run", strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	if r.status != http.StatusCreated || !bytes.Contains(r.body, []byte(name[:1000])) {
		t.Fatalf("a %d-byte body: status %d %.200s", len(body), r.status, r.body)
	}

	c := rawRequest(t, h, "POST", "/v1/rest/crm/contacts", "cs_test_run", len(body), "")
	for i := 0; i < len(body); i += len(body) / 4 {
		time.Sleep(200 * time.Millisecond)
		if _, err := io.WriteString(c, body[i:min(i+len(body)/4, len(body))]); err != nil {
			t.Fatal(err)
		}
	}
	if status, err := answer(c, 10*time.Second); err != nil || status != http.StatusCreated {
		t.Fatalf("a body sent in four pieces within the deadline: status %d, %v", status, err)
	}

	c = rawRequest(t, h, "POST", "/v1/rest/crm/contacts", "cs_test_run", 1<<20+1, "")
	if status, err := answer(c, 5*time.Second); err != nil || status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body declared over 1 MiB: status %d, %v; want 413 before it is sent", status, err)
	}
}

// What the headers decide is answered before any body byte: an unknown
// key on /mcp (in MCP's own words), a wrong method, an unknown route.
func TestBodyAnsweredFromTheHeaders(t *testing.T) {
	h := newHarness(t, harnessOptions{bodyTimeout: 30 * time.Second})
	for _, tc := range []struct {
		method, path, key string
		status            int
	}{
		{"POST", "/mcp", "", http.StatusUnauthorized},
		{"POST", "/mcp", "cs_unknown_key", http.StatusUnauthorized},
		{"PUT", "/v1/calls", "", http.StatusMethodNotAllowed},
		{"POST", "/v1/nowhere", "", http.StatusNotFound},
		{"POST", "/v1/rest/crm/contacts", "", http.StatusUnauthorized},
	} {
		c := rawRequest(t, h, tc.method, tc.path, tc.key, 1<<20, "")
		if status, err := answer(c, 5*time.Second); err != nil || status != tc.status {
			t.Errorf("%s %s with a declared 1 MiB body and no bytes: status %d, %v; want %d at once", tc.method, tc.path, status, err, tc.status)
		}
	}
}
