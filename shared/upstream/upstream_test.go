package upstream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/upstream"
)

// seen is what the test upstream received.
type seen struct {
	Method, Path, RawPath, RawQuery, Body, Host string
	Header                                      http.Header
}

// recorder starts an httptest server on 127.0.0.1 that records each request and answers
// with respond.
func recorder(tb testing.TB, respond http.HandlerFunc) (*httptest.Server, func() []seen) {
	tb.Helper()
	var (
		mu  sync.Mutex
		got []seen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, string(b), r.Host, r.Header.Clone()})
		mu.Unlock()
		if respond != nil {
			respond(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	tb.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

func TestDoSendsTheCall(t *testing.T) {
	srv, got := recorder(t, nil)
	c := &upstream.Client{}
	resp, err := c.Do(context.Background(), upstream.Request{
		BaseURL:        srv.URL,
		Headers:        map[string]string{"X-Demo-Client": "countersign", "Authorization": "Bearer upstream-secret"},
		Method:         "PATCH",
		Path:           "/contacts/12",
		Query:          url.Values{"force": {"true"}, "tag": {"a b", "c"}},
		Body:           []byte(`{"name":"Ada"}`),
		IdempotencyKey: "idem-1",
		Forward: map[string]string{
			"X-Demo-Client":  "agent-supplied",
			"X-Request-Note": "kept",
			"Accept":         "application/json",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
		t.Fatalf("response = %d %s", resp.Status, resp.Body)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	checks := []struct{ name, got, want string }{
		{"method", r.Method, "PATCH"},
		{"path", r.Path, "/contacts/12"},
		{"query", r.RawQuery, "force=true&tag=a+b&tag=c"},
		{"body", r.Body, `{"name":"Ada"}`},
		{"Content-Type", r.Header.Get("Content-Type"), "application/json"},
		{"Idempotency-Key", r.Header.Get("Idempotency-Key"), "idem-1"},
		{"configured header wins", strings.Join(r.Header.Values("X-Demo-Client"), ","), "countersign"},
		{"configured Authorization", strings.Join(r.Header.Values("Authorization"), ","), "Bearer upstream-secret"},
		{"forwarded header", r.Header.Get("X-Request-Note"), "kept"},
		{"forwarded Accept", r.Header.Get("Accept"), "application/json"},
		{"Content-Length", r.Header.Get("Content-Length"), "14"},
		{"Accept-Encoding", r.Header.Get("Accept-Encoding"), "gzip"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestDoRefusesANeverForwardedHeader: the agent's Authorization (its countersign key) in
// Forward fails the call before anything is sent; the caller forwards by allow-list, so
// this is a bug caught, never a header dropped in silence.
func TestDoRefusesANeverForwardedHeader(t *testing.T) {
	srv, got := recorder(t, nil)
	_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{
		BaseURL: srv.URL, Method: "GET", Path: "/contacts",
		Forward: map[string]string{"Authorization": "Bearer cs_demo_ask"},
	})
	if !errors.Is(err, upstream.ErrInvalidRequest) || !strings.Contains(err.Error(), "Authorization") {
		t.Fatalf("err = %v, want ErrInvalidRequest naming Authorization", err)
	}
	if n := len(got()); n != 0 {
		t.Fatalf("the upstream received %d requests", n)
	}
}

func TestDoRequestShape(t *testing.T) {
	tests := []struct {
		name                         string
		base                         string // appended to the server URL
		req                          upstream.Request
		wantPath, wantRaw, wantQuery string
		wantBody, wantCT             string
	}{
		{name: "base path prefix", base: "/api/v2",
			req: upstream.Request{Method: "GET", Path: "/contacts/12"}, wantPath: "/api/v2/contacts/12", wantRaw: "/api/v2/contacts/12"},
		{name: "base path prefix with trailing slash", base: "/api/v2/",
			req: upstream.Request{Method: "GET", Path: "/contacts/12"}, wantPath: "/api/v2/contacts/12", wantRaw: "/api/v2/contacts/12"},
		{name: "base trailing slash only", base: "/",
			req: upstream.Request{Method: "GET", Path: "/contacts"}, wantPath: "/contacts", wantRaw: "/contacts"},
		{name: "escaped slash stays one segment",
			req: upstream.Request{Method: "GET", Path: "/files/a%2Fb"}, wantPath: "/files/a/b", wantRaw: "/files/a%2Fb"},
		{name: "escaped base prefix kept", base: "/my%20api",
			req: upstream.Request{Method: "GET", Path: "/x"}, wantPath: "/my api/x", wantRaw: "/my%20api/x"},
		{name: "question mark in path is escaped, not a query",
			req: upstream.Request{Method: "GET", Path: "/contacts/12%3Fadmin=1"}, wantPath: "/contacts/12?admin=1", wantRaw: "/contacts/12%3Fadmin=1"},
		{name: "raw query sent as is",
			req:      upstream.Request{Method: "GET", Path: "/contacts", RawQuery: "b=2&a=1&a=%20", Query: url.Values{"ignored": {"x"}}},
			wantPath: "/contacts", wantRaw: "/contacts", wantQuery: "b=2&a=1&a=%20"},
		{name: "custom content type",
			req:      upstream.Request{Method: "POST", Path: "/upload", Body: []byte("a,b"), ContentType: "text/csv"},
			wantPath: "/upload", wantRaw: "/upload", wantBody: "a,b", wantCT: "text/csv"},
		{name: "no body, no content type",
			req: upstream.Request{Method: "DELETE", Path: "/contacts/1"}, wantPath: "/contacts/1", wantRaw: "/contacts/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := recorder(t, nil)
			tt.req.BaseURL = srv.URL + tt.base
			if _, err := (&upstream.Client{}).Do(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			r := got()[0]
			if r.Path != tt.wantPath || r.RawPath != tt.wantRaw || r.RawQuery != tt.wantQuery {
				t.Errorf("got path %q raw %q query %q, want %q %q %q", r.Path, r.RawPath, r.RawQuery, tt.wantPath, tt.wantRaw, tt.wantQuery)
			}
			if r.Body != tt.wantBody || r.Header.Get("Content-Type") != tt.wantCT {
				t.Errorf("got body %q type %q, want %q %q", r.Body, r.Header.Get("Content-Type"), tt.wantBody, tt.wantCT)
			}
		})
	}
}

func TestDoInvalidRequest(t *testing.T) {
	srv, got := recorder(t, nil)
	tests := []struct {
		name string
		req  upstream.Request
	}{
		{"no method", upstream.Request{BaseURL: srv.URL, Path: "/x"}},
		{"bad method", upstream.Request{BaseURL: srv.URL, Method: "GE T", Path: "/x"}},
		{"relative path", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "x"}},
		{"dot dot", upstream.Request{BaseURL: srv.URL + "/api", Method: "GET", Path: "/contacts/../../admin"}},
		{"encoded dot dot", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/%2e%2E"}},
		{"dot dot behind escaped slash", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/..%2Fadmin"}},
		{"single dot", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/./12"}},
		{"bad escape", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts/%zz"}},
		{"no scheme", upstream.Request{BaseURL: "127.0.0.1:8081", Method: "GET", Path: "/x"}},
		{"ftp", upstream.Request{BaseURL: "ftp://127.0.0.1", Method: "GET", Path: "/x"}},
		{"base with query", upstream.Request{BaseURL: srv.URL + "?a=1", Method: "GET", Path: "/x"}},
		{"configured header CRLF", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x", Headers: map[string]string{"X-Key": "a\r\nX-Evil: 1"}}},
		{"configured header bad name", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x", Headers: map[string]string{"X Key": "a"}}},
		{"forwarded header CRLF", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x", Forward: map[string]string{"X-Tenant-Id": "a\r\nX-Evil: 1"}}},
		{"forwarded header with _", upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x", Forward: map[string]string{"X_HTTP_METHOD_OVERRIDE": "DELETE"}}},
		{"idempotency key CRLF", upstream.Request{BaseURL: srv.URL, Method: "POST", Path: "/x", IdempotencyKey: "a\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&upstream.Client{}).Do(context.Background(), tt.req)
			if !errors.Is(err, upstream.ErrInvalidRequest) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
		})
	}
	if n := len(got()); n != 0 {
		t.Fatalf("upstream saw %d requests, want 0", n)
	}
}

func TestDoConfiguredSecretNotInError(t *testing.T) {
	_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{
		BaseURL: "http://127.0.0.1:1", Method: "GET", Path: "/x",
		Headers: map[string]string{"Authorization": "Bearer s3cret\n"},
	})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v, want an error that does not show the value", err)
	}
}

func TestDoTimeoutIsUnreachable(t *testing.T) {
	release := make(chan struct{})
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	start := time.Now()
	_, err := (&upstream.Client{Timeout: 50 * time.Millisecond}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/slow"})
	if !errors.Is(err, upstream.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnreachable wrapping DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestDoSlowBodyIsUnreachable(t *testing.T) {
	release := make(chan struct{})
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, err := (&upstream.Client{Timeout: 50 * time.Millisecond}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/slow"})
	if !errors.Is(err, upstream.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestDoCancelledContextIsUnreachable(t *testing.T) {
	srv, _ := recorder(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&upstream.Client{}).Do(ctx, upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/x"})
	if !errors.Is(err, upstream.ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnreachable wrapping Canceled", err)
	}
}

func TestDoRefusedIsUnreachable(t *testing.T) {
	// Take a free port and close it so nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: "http://" + addr, Method: "DELETE", Path: "/contacts/12"})
	if !errors.Is(err, upstream.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), "DELETE http://"+addr+"/contacts/12") {
		t.Errorf("err = %v, want it to name the call", err)
	}
}

func TestDoBodyCap(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		chunked bool
		wantErr bool
	}{
		{"at the cap", 1024, false, false},
		{"over the cap with Content-Length", 1025, false, true},
		{"over the cap chunked", 4096, true, true},
		{"at the cap chunked", 1024, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
				body := strings.Repeat("x", tt.size)
				if tt.chunked {
					io.WriteString(w, body[:1])
					w.(http.Flusher).Flush()
					io.WriteString(w, body[1:])
					return
				}
				w.Header().Set("Content-Length", strconv.Itoa(tt.size))
				io.WriteString(w, body)
			})
			resp, err := (&upstream.Client{MaxBody: 1024}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/big"})
			if tt.wantErr {
				if !errors.Is(err, upstream.ErrResponseTooLarge) {
					t.Fatalf("err = %v, want ErrResponseTooLarge", err)
				}
				return
			}
			if err != nil || len(resp.Body) != tt.size {
				t.Fatalf("got %v, %d bytes", err, len(resp.Body))
			}
		})
	}
}

func TestDoDefaultBodyCap(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", upstream.DefaultMaxBody+1))
	})
	_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/big"})
	if !errors.Is(err, upstream.ErrResponseTooLarge) {
		t.Fatalf("err = %v, want ErrResponseTooLarge", err)
	}
}

func TestDoErrorStatusIsAResponse(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"title":"conflict"}`)
	})
	resp, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "POST", Path: "/x", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusConflict {
		t.Fatalf("status = %d", resp.Status)
	}
	if v, ok := resp.JSONBody(); !ok || v.(map[string]any)["title"] != "conflict" {
		t.Fatalf("JSONBody = %v, %v", v, ok)
	}
}

func TestDoDoesNotFollowRedirects(t *testing.T) {
	var hits sync.Map
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusTemporaryRedirect)
		}
	})
	resp, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "POST", Path: "/from", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "/to" {
		t.Fatalf("got %d %q", resp.Status, resp.Header.Get("Location"))
	}
	if _, ok := hits.Load("/to"); ok {
		t.Fatal("redirect was followed")
	}
}

func TestDoHostHeader(t *testing.T) {
	srv, got := recorder(t, nil)
	_, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{
		BaseURL: srv.URL, Method: "GET", Path: "/x",
		Headers: map[string]string{"Host": "crm.internal"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if h := got()[0].Host; h != "crm.internal" {
		t.Fatalf("Host = %q", h)
	}
}

func TestJSONBody(t *testing.T) {
	tests := []struct {
		name, ct, body string
		ok             bool
		want           string // re-encoded
	}{
		{"object", "application/json", `{"id": 12}`, true, `{"id":12}`},
		{"charset", "application/json; charset=utf-8", `[1,2]`, true, `[1,2]`},
		{"plus json", "application/vnd.api+json", `{"a":"b"}`, true, `{"a":"b"}`},
		{"big number kept exact", "application/json", `{"id":12345678901234567890}`, true, `{"id":12345678901234567890}`},
		{"text", "text/plain", `{"id":12}`, false, ""},
		{"no content type", "", `{"id":12}`, false, ""},
		{"broken", "application/json", `{"id":`, false, ""},
		{"trailing data", "application/json", `{} {}`, false, ""},
		{"empty", "application/json", ``, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &upstream.Response{Status: 200, Header: http.Header{}, Body: []byte(tt.body)}
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			v, ok := r.JSONBody()
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			b, _ := json.Marshal(v)
			if string(b) != tt.want {
				t.Fatalf("re-encoded %s, want %s", b, tt.want)
			}
		})
	}
}

// TestRawJSON: RawJSON accepts what JSONBody accepts (but for invalid
// UTF-8, which JSONBody repairs), gives the same value, and keeps the
// upstream's key order and literals, compacted.
func TestRawJSON(t *testing.T) {
	tests := []struct {
		name, ct, body string
		ok             bool
		want           string
	}{
		{"object", "application/json", `{"id": 12}`, true, `{"id":12}`},
		{"order kept", "application/json", "{\n  \"z\": 1,\n  \"a\": [true, null]\n}\n", true, `{"z":1,"a":[true,null]}`},
		{"charset", "application/json; charset=utf-8", `[1,2]`, true, `[1,2]`},
		{"charset without space", "application/json;charset=UTF-8", `[1,2]`, true, `[1,2]`},
		{"plus json", "application/vnd.api+json", `{"a":"b"}`, true, `{"a":"b"}`},
		{"literals kept", "application/json", `{"n":1.50,"s":"\u00e9<"}`, true, `{"n":1.50,"s":"\u00e9<"}`},
		{"text", "text/plain", `{"id":12}`, false, ""},
		{"no content type", "", `{"id":12}`, false, ""},
		{"broken", "application/json", `{"id":`, false, ""},
		{"trailing data", "application/json", `{} {}`, false, ""},
		{"empty", "application/json", ``, false, ""},
		{"blank", "application/json", "  \n", false, ""},
		{"invalid UTF-8", "application/json", "\"\xff\"", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &upstream.Response{Status: 200, Header: http.Header{}, Body: []byte(tt.body)}
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			raw, ok := r.RawJSON()
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if string(raw) != tt.want {
				t.Fatalf("RawJSON = %s, want %s", raw, tt.want)
			}
			parsed, ok := r.JSONBody()
			var again any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&again); !ok || err != nil || !reflect.DeepEqual(again, parsed) {
				t.Fatalf("RawJSON's value %v (%v) differs from JSONBody's %v (%v)", again, err, parsed, ok)
			}
		})
	}
}

func TestClientConcurrentUse(t *testing.T) {
	srv, got := recorder(t, nil)
	c := &upstream.Client{}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), upstream.Request{BaseURL: srv.URL, Method: "GET", Path: "/contacts"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(got()); n != 20 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

// resetAfterRead is an upstream on 127.0.0.1 that answers GETs on a
// kept-alive connection and, for any other method, reads the whole request
// and then resets the connection without answering: the upstream may have
// acted, and the client cannot know. It counts the writes it received.
func resetAfterRead(tb testing.TB) (base string, writes func() []seen) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []seen
		wg  sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					if req.Method == http.MethodGet {
						io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					mu.Lock()
					got = append(got, seen{Method: req.Method, Path: req.URL.Path, Body: string(b), Header: req.Header})
					mu.Unlock()
					conn.(*net.TCPConn).SetLinger(0) // close with RST
					return
				}
			}()
		}
	}()
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String(), func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// TestDoNeverResendsAWrite: Go's transport re-sends a request on its own
// when a reused connection breaks after the request was written, if the
// request counts as idempotent, and a Header map entry "Idempotency-Key" or
// "X-Idempotency-Key" makes it count. countersign sends a redeemed operation
// once and records what came back: the upstream must get it once, even when
// the connection is reset after it was sent, and the key must still arrive.
func TestDoNeverResendsAWrite(t *testing.T) {
	tests := []struct {
		name string
		r    upstream.Request
	}{
		{"DELETE with a key", upstream.Request{Method: "DELETE", Path: "/contacts/12", IdempotencyKey: "cf_x:0"}},
		{"POST with a body and a key", upstream.Request{Method: "POST", Path: "/payments", Body: []byte(`{"amount":5}`), IdempotencyKey: "cf_y:0"}},
		{"PATCH with a configured X-Idempotency-Key", upstream.Request{Method: "PATCH", Path: "/contacts/3", Body: []byte(`{}`),
			Headers: map[string]string{"X-Idempotency-Key": "agent-key"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, writes := resetAfterRead(t)
			c := &upstream.Client{HTTP: &http.Client{Transport: &http.Transport{}}}
			// A read first, so that the write goes on a kept-alive connection.
			if resp, err := c.Do(context.Background(), upstream.Request{BaseURL: base, Method: "GET", Path: "/warm"}); err != nil || resp.Status != 200 {
				t.Fatalf("warm-up: %v", err)
			}
			r := tt.r
			r.BaseURL = base
			_, err := c.Do(context.Background(), r)
			if !errors.Is(err, upstream.ErrUnreachable) {
				t.Errorf("err = %v, want ErrUnreachable", err)
			}
			got := writes()
			if len(got) != 1 {
				t.Fatalf("the upstream received the %s %d times, want once", r.Method, len(got))
			}
			if r.IdempotencyKey != "" && got[0].Header.Get("Idempotency-Key") != r.IdempotencyKey {
				t.Errorf("Idempotency-Key arrived as %q, want %q", got[0].Header.Get("Idempotency-Key"), r.IdempotencyKey)
			}
			if v := r.Headers["X-Idempotency-Key"]; v != "" && got[0].Header.Get("X-Idempotency-Key") != v {
				t.Errorf("X-Idempotency-Key arrived as %q, want %q", got[0].Header.Get("X-Idempotency-Key"), v)
			}
		})
	}
}

// TestDoBaseURLUserinfoIsBasicAuth: the default client goes to its
// transport directly, except for a base URL with user information, which
// is still sent as Basic credentials as http.Client sends it.
func TestDoBaseURLUserinfoIsBasicAuth(t *testing.T) {
	got := make(chan string, 1)
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		got <- user + ":" + pass
	})
	base := strings.Replace(srv.URL, "http://", "http://api:s3cret@", 1)
	if _, err := (&upstream.Client{}).Do(context.Background(), upstream.Request{BaseURL: base, Method: "GET", Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if auth := <-got; auth != "api:s3cret" {
		t.Errorf("credentials %q, want api:s3cret", auth)
	}
}

// TestDoTimeoutOnTheTransport: a call http.Transport sends (here through
// http.Client, for the base URL's credentials) ends at the client's
// timeout as a direct one does.
func TestDoTimeoutOnTheTransport(t *testing.T) {
	release := make(chan struct{})
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	base := strings.Replace(srv.URL, "http://", "http://api:s3cret@", 1)
	_, err := (&upstream.Client{Timeout: 50 * time.Millisecond}).Do(context.Background(), upstream.Request{BaseURL: base, Method: "GET", Path: "/slow"})
	if !errors.Is(err, upstream.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnreachable wrapping DeadlineExceeded", err)
	}
}
