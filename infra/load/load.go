package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/countersign/countersign/shared/notify"
)

// kind is one sort of call in the mix.
type kind int

const (
	auto kind = iota
	confirmCall
	denied
	review
	kinds
)

var kindNames = [kinds]string{"auto (GET, runs at once)", "confirm (call, approve, redeem)", "denied (never tier)", "review (queued)"}

// kindOf spreads the kinds over the call numbers: 40% auto, 30% confirm,
// 15% denied, 15% review.
func kindOf(i int) kind {
	switch m := i % 20; {
	case m < 8:
		return auto
	case m < 14:
		return confirmCall
	case m < 17:
		return denied
	}
	return review
}

const webhookSecret = "whsec_load_test"

// rig is the gateway process with its upstream and webhook receiver.
type rig struct {
	o                  Options
	dir, dataDir, base string
	up                 *upstream
	hooks              *hooks
	servers            []*http.Server
	cmd                *exec.Cmd
	stderr             *gcTrace
	client             *http.Client
	steps              *steps
}

func newRig(ctx context.Context, o Options, dir string) (r *rig, err error) {
	r = &rig{o: o, dir: dir, dataDir: filepath.Join(dir, "data"), up: &upstream{keys: map[string]int{}}, hooks: &hooks{waiting: map[string]chan string{}}, steps: &steps{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	upURL, err := r.serve(r.up)
	if err != nil {
		return nil, err
	}
	hookURL, err := r.serve(r.hooks)
	if err != nil {
		return nil, err
	}
	configDir := filepath.Join(dir, "config")
	if err := writeConfig(configDir, upURL, hookURL, o.Agents); err != nil {
		return nil, err
	}
	bin := o.Bin
	if bin == "" {
		if bin, err = build(ctx, dir); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r.base = "http://" + addr
	r.cmd = exec.Command(bin, "--config", configDir, "--data", r.dataDir, "--addr", addr, "--demo-upstream=", "--log-level", "warn")
	// The runtime's GC trace gives the live heap without a debug route.
	r.cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	r.stderr = &gcTrace{}
	r.cmd.Stderr = r.stderr
	r.cmd.Stdout = io.Discard
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	r.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 4 * o.Agents, MaxIdleConnsPerHost: 2 * o.Agents}}
	if err := r.waitHealthy(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rig) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	r.servers = append(r.servers, s)
	go func() { _ = s.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

func (r *rig) waitHealthy(ctx context.Context) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		if resp, err := r.client.Get(r.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("the local stack did not answer /healthz within 30 s:\n%s", r.stderr.tail())
}

// stop sends SIGTERM and waits for exit status 0.
func (r *rig) stop() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		r.cmd = nil
		return err
	case <-time.After(30 * time.Second):
		return errors.New("still running 30 s after SIGTERM")
	}
}

func (r *rig) close() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
	for _, s := range r.servers {
		_ = s.Close()
	}
}

// drive runs the calls in two halves and samples the process's memory
// before, between and after them.
func (r *rig) drive(ctx context.Context) (*report, error) {
	rep := &report{o: r.o, steps: r.steps, loadavg: "n/a"}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.loadavg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	rep.memory = append(rep.memory, r.sample("before the first call"))
	half := r.o.Calls / 2
	var took time.Duration
	for _, span := range [][2]int{{0, half}, {half, r.o.Calls}} {
		start := time.Now()
		r.run(ctx, span[0], span[1], rep)
		took += time.Since(start)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timed out after %d calls", rep.done.Load())
		}
		// Let background work (webhook deliveries, finished workflows) settle.
		time.Sleep(time.Second)
		rep.memory = append(rep.memory, r.sample(fmt.Sprintf("after %d calls", span[1])))
	}
	rep.took = took
	r.check(rep)
	return rep, nil
}

// run has the agents make calls [from, to): agent a makes the calls whose
// number is a modulo the agents, with its own credential.
func (r *rig) run(ctx context.Context, from, to int, rep *report) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for a := range r.o.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := agentKey(a)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				k := kindOf(i)
				start := time.Now()
				err := r.call(ctx, key, i, k)
				rep.record(k, time.Since(start), err, i)
			}
		}()
	}
	wg.Wait()
}

// call makes call i of kind k and checks its answer.
func (r *rig) call(ctx context.Context, key string, i int, k kind) error {
	switch k {
	case auto:
		st, body, err := r.post(ctx, key, map[string]any{"connection": "crm", "method": "GET", "path": fmt.Sprintf("/contacts/%d", i), "intent": "read"})
		return expect(st, body, err, http.StatusOK, "executed", "")
	case denied:
		st, body, err := r.post(ctx, key, map[string]any{"connection": "crm", "method": "DELETE", "path": fmt.Sprintf("/accounts/%d", i), "intent": "write"})
		return expect(st, body, err, http.StatusForbidden, "denied", "blocked")
	case review:
		st, body, err := r.post(ctx, key, map[string]any{"connection": "crm", "method": "POST", "path": fmt.Sprintf("/accounts/%d/close", i), "intent": "write",
			"body": map[string]any{"reason": "load test"}})
		return expect(st, body, err, http.StatusForbidden, "denied", "review_required")
	}
	call := map[string]any{"connection": "crm", "method": "DELETE", "path": fmt.Sprintf("/contacts/%d", i), "intent": "write"}
	start := time.Now()
	st, body, err := r.post(ctx, key, call)
	if err := expect(st, body, err, http.StatusAccepted, "confirmation_required", ""); err != nil {
		return err
	}
	conf, _ := body["confirmation"].(map[string]any)
	id, _ := conf["id"].(string)
	t := time.Now()
	r.steps.add(stepPaused, t.Sub(start))
	link, err := r.hooks.wait(ctx, id, 20*time.Second)
	if err != nil {
		return err
	}
	r.steps.add(stepLink, time.Since(t))
	t = time.Now()
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	form := u.Query()
	form.Set("decision", "approve")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+u.Path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	st, body, err = r.do(req)
	if err := expect(st, body, err, http.StatusOK, "approved", ""); err != nil {
		return fmt.Errorf("approve %s: %w", id, err)
	}
	r.steps.add(stepApprove, time.Since(t))
	t = time.Now()
	call["intent"], call["confirmation_id"] = "confirmed_write", id
	st, body, err = r.post(ctx, key, call)
	if err := expect(st, body, err, http.StatusOK, "executed", ""); err != nil {
		return fmt.Errorf("redeem %s: %w", id, err)
	}
	if resp, _ := body["response"].(map[string]any); resp["status"] != float64(http.StatusNoContent) {
		return fmt.Errorf("redeem %s: the upstream answered %v, want 204", id, resp["status"])
	}
	r.steps.add(stepRedeem, time.Since(t))
	r.up.redeemed(id)
	return nil
}

// The steps of a confirm call, timed on their own.
const (
	stepPaused  = iota // the call until its 202
	stepLink           // the 202 until the webhook brings the link
	stepApprove        // the approve POST
	stepRedeem         // the redemption, the upstream call included
	nSteps
)

var stepNames = [nSteps]string{"call → 202", "202 → link by webhook", "approve POST", "redeem (upstream once)"}

// steps times the steps of the confirm calls.
type steps struct {
	mu  sync.Mutex
	lat [nSteps][]time.Duration
}

func (s *steps) add(step int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[step] = append(s.lat[step], d)
}

func expect(status int, body map[string]any, err error, want int, wantStatus, wantCode string) error {
	switch {
	case err != nil:
		return err
	case status != want || body["status"] != wantStatus || wantCode != "" && body["code"] != wantCode:
		return fmt.Errorf("answered %d %v %v (%v), want %d %s %s", status, body["status"], body["code"], body["reason"], want, wantStatus, wantCode)
	}
	return nil
}

func (r *rig) post(ctx context.Context, key string, call map[string]any) (int, map[string]any, error) {
	b, _ := json.Marshal(call)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/calls", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return r.do(req)
}

func (r *rig) do(req *http.Request) (int, map[string]any, error) {
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, nil
}

// check compares what the upstream received with what the agents were
// told ran.
func (r *rig) check(rep *report) {
	want := [kinds]int{}
	for i := range r.o.Calls {
		want[kindOf(i)]++
	}
	for k := range kinds {
		if got := rep.ok[k] + rep.errs[k]; got != want[k] {
			rep.fail("%s: %d calls accounted for, want %d", kindNames[k], got, want[k])
		}
		if rep.errs[k] > 0 {
			rep.fail("%s: %d calls got an unexpected answer, e.g. %s", kindNames[k], rep.errs[k], rep.firstErr[k])
		}
	}
	u := r.up
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reads != rep.ok[auto] {
		rep.fail("the upstream got %d reads, want %d", u.reads, rep.ok[auto])
	}
	if u.accounts != 0 {
		rep.fail("the upstream got %d calls on /accounts, which are denied or held for review", u.accounts)
	}
	if len(u.keys) != rep.ok[confirmCall] || len(u.told) != rep.ok[confirmCall] {
		rep.fail("the upstream got %d confirmed deletes (%d told executed), want %d", len(u.keys), len(u.told), rep.ok[confirmCall])
	}
	for key, n := range u.keys {
		id, _, _ := strings.Cut(key, ":")
		switch {
		case n != 1:
			rep.fail("the upstream got %s %d times", key, n)
		case !u.told[id]:
			rep.fail("the upstream got %s, which no agent was told ran", key)
		}
	}
	if n := r.hooks.bad.Load(); n > 0 {
		rep.fail("%d webhook deliveries had a bad signature", n)
	}
	mem := rep.memory
	if len(mem) == 3 && mem[1].anon > 0 {
		if grew := mem[2].anon - mem[1].anon; grew > r.o.MaxGrowth {
			rep.fail("the gateway's anonymous memory grew by %s from %s to %s (limit %s)", mib(grew), mem[1].point, mem[2].point, mib(r.o.MaxGrowth))
		}
	}
}

// upstream is the recording upstream: GET /contacts/{id} answers a small
// contact, DELETE /contacts/{id} 204; it counts what it gets.
type upstream struct {
	mu       sync.Mutex
	reads    int
	accounts int
	keys     map[string]int // Idempotency-Key of each DELETE → times received
	told     map[string]bool
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/accounts"):
		u.accounts++
	case r.Method == http.MethodGet:
		u.reads++
	case r.Method == http.MethodDelete:
		u.keys[r.Header.Get("Idempotency-Key")]++
	}
	u.mu.Unlock()
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	id := strings.TrimPrefix(r.URL.Path, "/contacts/")
	fmt.Fprintf(w, `{"id":%q,"name":"Contact %s","email":"contact%s@example.com"}`, id, id, id)
}

// redeemed records that an agent was told its confirmation id ran.
func (u *upstream) redeemed(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.told == nil {
		u.told = map[string]bool{}
	}
	u.told[id] = true
}

// hooks is the approvers' webhook: it checks each signature and hands the
// approval link of each requested event to the agent waiting for it.
type hooks struct {
	mu      sync.Mutex
	waiting map[string]chan string
	bad     atomic.Int64
	events  atomic.Int64
}

func (h *hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if err := notify.VerifySignature(r.Header.Get("Countersign-Signature"), b, webhookSecret, time.Now(), time.Minute); err != nil {
		h.bad.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	h.events.Add(1)
	var ev notify.Event
	if json.Unmarshal(b, &ev) == nil && ev.Type == notify.TypeRequested && len(ev.Links) > 0 {
		select {
		case h.ch(ev.Confirmation.ID) <- ev.Links[0].URL:
		default: // a repeated delivery
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *hooks) ch(id string) chan string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.waiting[id]
	if !ok {
		c = make(chan string, 1)
		h.waiting[id] = c
	}
	return c
}

// wait returns the approval link sent for id.
func (h *hooks) wait(ctx context.Context, id string, d time.Duration) (string, error) {
	defer func() {
		h.mu.Lock()
		delete(h.waiting, id)
		h.mu.Unlock()
	}()
	select {
	case l := <-h.ch(id):
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("no approval link for %s within %s", id, d)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// gcTrace keeps the process's standard error: the live heap of the last
// garbage collection (GODEBUG=gctrace=1), and the last lines for errors.
type gcTrace struct {
	mu      sync.Mutex
	partial []byte
	live    int64 // MB, -1 until the first collection
	seen    bool
	last    []string
}

// gcLine matches "gc 12 @1.2s 3%: ... ms cpu, 4->5->2 MB, 8 MB goal, ...":
// heap at the start of the collection, at its end, and live after it.
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

func (g *gcTrace) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.partial = append(g.partial, p...)
	for {
		i := bytes.IndexByte(g.partial, '\n')
		if i < 0 {
			break
		}
		line := string(g.partial[:i])
		g.partial = g.partial[i+1:]
		if m := gcLine.FindStringSubmatch(line); m != nil {
			g.live, _ = strconv.ParseInt(m[3], 10, 64)
			g.seen = true
			continue
		}
		g.last = append(g.last, line)
		if len(g.last) > 20 {
			g.last = g.last[1:]
		}
	}
	return len(p), nil
}

func (g *gcTrace) liveMB() (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live, g.seen
}

func (g *gcTrace) tail() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.last, "\n")
}

// memory is one sample of the gateway process's memory.
type memory struct {
	point           string
	rss, anon, file int64 // bytes; 0 where /proc has none
	heapMB          int64
	heapSeen        bool
	db              int64
}

// sample reads the process's memory from /proc/<pid>/status (Linux).
func (r *rig) sample(point string) memory {
	m := memory{point: point}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid)); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 3 || f[2] != "kB" {
				continue
			}
			n, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				m.rss = n << 10
			case "RssAnon:":
				m.anon = n << 10
			case "RssFile:":
				m.file = n << 10
			}
		}
	}
	m.heapMB, m.heapSeen = r.stderr.liveMB()
	if fi, err := os.Stat(filepath.Join(r.dataDir, "countersign.db")); err == nil {
		m.db = fi.Size()
	}
	return m
}

// report collects the outcome of every call.
type report struct {
	o        Options
	mu       sync.Mutex
	lat      [kinds][]time.Duration
	ok       [kinds]int
	errs     [kinds]int
	firstErr [kinds]string
	done     atomic.Int64
	took     time.Duration
	memory   []memory
	failures []string
	steps    *steps
	loadavg  string
}

func (rep *report) record(k kind, d time.Duration, err error, i int) {
	rep.done.Add(1)
	rep.mu.Lock()
	defer rep.mu.Unlock()
	rep.lat[k] = append(rep.lat[k], d)
	if err != nil {
		rep.errs[k]++
		if rep.firstErr[k] == "" {
			rep.firstErr[k] = fmt.Sprintf("call %d: %v", i, err)
		}
		return
	}
	rep.ok[k]++
}

func (rep *report) fail(format string, args ...any) {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	rep.failures = append(rep.failures, fmt.Sprintf(format, args...))
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "countersign load: %d calls from %d agents (one credential each) against the local stack on loopback, %s, %d CPUs, load average %s at the start\n\n",
		rep.o.Calls, rep.o.Agents, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), rep.loadavg)
	fmt.Fprintln(w, "| kind | calls | errors | p50 | p99 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	var all []time.Duration
	total := 0
	for k := range kinds {
		all = append(all, rep.lat[k]...)
		total += rep.ok[k] + rep.errs[k]
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s |\n", kindNames[k], rep.ok[k]+rep.errs[k], rep.errs[k], ms(percentile(rep.lat[k], 0.5)), ms(percentile(rep.lat[k], 0.99)))
	}
	fmt.Fprintf(w, "| all | %d | %d | %s | %s |\n\n", total, total-sum(rep.ok[:]), ms(percentile(all, 0.5)), ms(percentile(all, 0.99)))
	fmt.Fprintln(w, "| confirm call, step by step | p50 | p99 |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	for i, name := range stepNames {
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, ms(percentile(rep.steps.lat[i], 0.5)), ms(percentile(rep.steps.lat[i], 0.99)))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "throughput: %.0f calls/s (%d calls in %s; a confirm call is a call, an approval and a redemption)\n\n",
		float64(total)/rep.took.Seconds(), total, rep.took.Round(time.Millisecond))
	fmt.Fprintln(w, "| gateway process | RSS | anonymous | file-backed | Go live heap | store file |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, m := range rep.memory {
		heap := "n/a"
		if m.heapSeen {
			heap = fmt.Sprintf("%d MB", m.heapMB)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", m.point, mib(m.rss), mib(m.anon), mib(m.file), heap, mib(m.db))
	}
	fmt.Fprintln(w)
	if len(rep.failures) == 0 {
		fmt.Fprintln(w, "ok: every call got its expected answer, the upstream got exactly the calls that ran (each confirmed one once), and the process did not grow from the middle to the end")
		return
	}
	for _, f := range rep.failures {
		fmt.Fprintln(w, "FAIL:", f)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func agentKey(a int) string { return fmt.Sprintf("cs_load_agent_%02d", a) }

func writeConfig(dir, upstreamURL, hookURL string, agents int) error {
	var creds []map[string]any
	for a := range agents {
		creds = append(creds, map[string]any{"id": fmt.Sprintf("agent-%02d", a), "key": agentKey(a), "choice": "ask_person"})
	}
	credJSON, _ := json.MarshalIndent(creds, "", "  ")
	files := map[string]string{
		// Limits are per credential: a load agent makes up to a few hundred
		// confirmations and review items, far more than an agent should.
		"settings.json": fmt.Sprintf(`{
  "workspace": {"name": "Load Test"},
  "public_url": "http://127.0.0.1:1",
  "approvers": {"console": false, "webhooks": [{"name": "ops", "url": %q, "format": "json", "secret": %q}]},
  "limits": {"calls_per_minute": 1000000, "pending_confirmations": 10000, "pending_reviews": 100000}
}`, hookURL, webhookSecret),
		"credentials.json": string(credJSON),
		"connections/crm/policy.json": fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"},
    {"method": "DELETE", "path": "/accounts/{id}", "confirm": "never"}
  ]
}`, upstreamURL),
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// build builds ./infra/local into dir.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "countersign-local")
	// The go on PATH, the one make load's go run is.
	gobin := "go"
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, "./infra/local")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./infra/local: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
