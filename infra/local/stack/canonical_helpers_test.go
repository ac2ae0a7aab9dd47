package stack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
)

// wsgiApp is an upstream that reads requests as Python web applications do:
// the standard library's WSGI server decodes PATH_INFO (%61 is a, %2F is /),
// routes ignore case (as ASP.NET's and many others do), and parameters are
// Flask's request.values, the query merged with a form body, with names
// read as PHP reads them (leading spaces trimmed, cut at NUL). Every
// request is recorded; GET /__log returns the record.
const wsgiApp = `
import json, sys
from urllib.parse import parse_qsl
from wsgiref.simple_server import make_server, WSGIRequestHandler

log = []

def name(k):
    return k.lstrip(' ').split('\x00', 1)[0]

def app(environ, start_response):
    path = environ.get('PATH_INFO', '')
    method = environ['REQUEST_METHOD']
    if path == '/__log':
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(log).encode()]
    values = {}
    for k, v in parse_qsl(environ.get('QUERY_STRING', ''), keep_blank_values=True):
        values[name(k)] = v
    n = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(n) if n else b''
    if environ.get('CONTENT_TYPE', '').startswith('application/x-www-form-urlencoded'):
        for k, v in parse_qsl(body.decode(), keep_blank_values=True):
            values[name(k)] = v
    parts = path.lower().strip('/').split('/')
    if method == 'DELETE' and parts == ['contacts', 'all']:
        route = 'delete all contacts'
    elif method == 'DELETE' and len(parts) == 2 and parts[0] == 'contacts':
        route = 'delete contact'
    elif method == 'PATCH' and len(parts) == 3 and parts[0] == 'contacts' and parts[2] == 'owner':
        route = 'change owner'
    elif method == 'PATCH' and len(parts) == 2 and parts[0] == 'contacts':
        route = 'update contact'
    elif parts == ['payments']:
        route = 'payments'
    elif parts[0] == 'files':
        route = 'file'
    else:
        route = None
    log.append({'method': method, 'path': path, 'route': route, 'values': values})
    if route is None:
        start_response('404 Not Found', [('Content-Type', 'application/json')])
        return [b'{"error": "not found"}']
    start_response('200 OK', [('Content-Type', 'application/json')])
    return [json.dumps({'route': route, 'values': values}).encode()]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

srv = make_server('127.0.0.1', 0, app, handler_class=Quiet)
print(srv.server_port, flush=True)
srv.serve_forever()
`

// wsgiRequest is one request the WSGI upstream recorded.
type wsgiRequest struct {
	Method string            `json:"method"`
	Path   string            `json:"path"` // PATH_INFO, decoded
	Route  *string           `json:"route"`
	Values map[string]string `json:"values"`
}

// wsgiUpstream is the running WSGI application.
type wsgiUpstream struct {
	URL string
}

// startWSGI starts the WSGI application on 127.0.0.1 and stops it at the
// end of the test. It needs python3 (the standard library alone),
// installed with apt-get when it is missing and this runs as root.
func startWSGI(t *testing.T) *wsgiUpstream {
	t.Helper()
	py := testenv.AptBinary(t, testenv.Python, "python3", "python3")
	script := filepath.Join(t.TempDir(), "app.py")
	if err := os.WriteFile(script, []byte(wsgiApp), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		port <- strings.TrimSpace(line)
	}()
	select {
	case p := <-port:
		if p == "" {
			t.Fatal("the WSGI application did not start")
		}
		return &wsgiUpstream{URL: "http://127.0.0.1:" + p}
	case <-time.After(10 * time.Second):
		t.Fatal("the WSGI application did not print its port within 10s")
	}
	return nil
}

// requests returns what the application has received so far.
func (w *wsgiUpstream) requests(t *testing.T) []wsgiRequest {
	t.Helper()
	resp, err := http.Get(w.URL + "/__log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log []wsgiRequest
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	return log
}

// none fails the test if the application has received anything since it
// had received n requests.
func (w *wsgiUpstream) none(t *testing.T, n int, what string) {
	t.Helper()
	if got := w.requests(t); len(got) > n {
		t.Fatalf("%s reached the upstream: %+v", what, got[n:])
	}
}

// wsgiPolicy is the connection "wsgi" in front of the application.
func wsgiPolicy(url string) string {
	return fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "DELETE", "path": "/contacts/all", "confirm": "never"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "PATCH",  "path": "/contacts/{id}"},
    {"method": "GET",    "path": "/payments",
     "escalate": [{"field": "query.amount", "above": 100, "escalate": "review"}]},
    {"method": "POST",   "path": "/payments", "confirm": true,
     "escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}]},
    {"method": "GET",    "path": "/files/{key}", "encoded_slash_params": ["key"]}
  ]
}`, url)
}

// newWSGIHarness is the usual harness with the connection "wsgi".
func newWSGIHarness(t *testing.T) (*harness, *wsgiUpstream) {
	t.Helper()
	w := startWSGI(t)
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/wsgi/policy.json": wsgiPolicy(w.URL)}})
	return h, w
}

// restRaw sends a REST call with its path and query as written:
// http.NewRequest keeps the escapes, so the stack gets these bytes.
func (h *harness) restRaw(method, rawPath, key, body, contentType string) result {
	h.t.Helper()
	var headers map[string]string
	if contentType != "" {
		headers = map[string]string{"Content-Type": contentType}
	}
	if body == "" {
		return h.do(method, rawPath, key, nil, headers)
	}
	return h.do(method, rawPath, key, strings.NewReader(body), headers)
}
