package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/shared/notify"
)

// The targets of docs/design.md for the confirmed path.
const (
	minHandshakes     = 250  // per second at c=20
	minPauses         = 2000 // pause creation alone, per second at c=20 from one credential
	maxPausesPerBlock = 9000 // a pause block's credential stays under its 10,000 pending
	maxApproveToCall  = 10 * time.Millisecond
	// From one credential (-hs-one-credential): at c=20 at least
	// minOneCredential a second with p99 at most maxP99OneCredential, and
	// at c=1 a p50 of at most maxP50Alone.
	minOneCredential    = 800
	maxP99OneCredential = 50 * time.Millisecond
	maxP50Alone         = 4 * time.Millisecond
	hsConcurrency       = 20
	webhookSecretHop    = "whsec_bench_hop_receiver"
	handshakeDeadline   = 20 * time.Second // one handshake that takes longer is a failure
)

type hsOptions struct {
	rounds                 int
	block                  time.Duration
	cpuProfile, memProfile string
	// oneCredential makes every agent of a block call with the same
	// credential, as one busy agent fanning out would (a credential per
	// block: see hsEnv.oneKey); otherwise each has its own.
	oneCredential bool
	// pauses adds a block of pause creation alone (the call → 202, with
	// nothing approved) at c=20 from one credential to each round.
	pauses bool
}

// hsCell is what one concurrency measured over its blocks.
type hsCell struct {
	n               int
	elapsed         time.Duration
	total, toCall   []time.Duration // whole handshake; approve POST → upstream call
	writes, commits uint64
	cpu             time.Duration // this process's CPU time
	perBlockRate    []float64
}

type hsResult struct {
	opts  hsOptions
	cells map[int]*hsCell
	loads []string
	conns int64 // connections the stack opened to the upstream and the receiver
	// pauses is the pause blocks' cell (hsResult.opts.pauses): total holds
	// each pause's latency, toCall nothing.
	pauses *hsCell
}

// hsEnv is the running stack with its webhook receiver and upstream.
type hsEnv struct {
	stack    *stack.Stack
	client   *http.Client
	links    *linkBox
	upstream *callLog
	one      bool // every agent of a block calls with oneKey
	// oneKey is the credential of the block under way when one is set:
	// each block takes the next of hsOneKeys, so that no credential
	// reaches its 10,000 pending_confirmations (the setting's most; a
	// confirmation counts for its whole timeout, decided or not), which
	// a quiet machine's blocks passed within one run of cs_bench_00.
	oneKey string
	blocks int
}

// hsOneKeys is how many credentials the one-credential blocks take in
// turn (cs_bench_one_00...): more than a run's blocks at the defaults.
const hsOneKeys = 16

// linkBox hands each confirmation's approval link to the worker waiting for it.
type linkBox struct {
	mu    sync.Mutex
	boxes map[string]chan string
}

func (b *linkBox) box(id string) chan string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.boxes[id]
	if !ok {
		c = make(chan string, 1)
		b.boxes[id] = c
	}
	return c
}

func (b *linkBox) forget(id string) {
	b.mu.Lock()
	delete(b.boxes, id)
	b.mu.Unlock()
}

func (b *linkBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev notify.Event
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if ev.Type == notify.TypeRequested && len(ev.Links) > 0 {
		select {
		case b.box(ev.Confirmation.ID) <- ev.Links[0].URL:
		default:
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// callLog is the upstream: it notes when each Idempotency-Key arrived,
// and how often.
type callLog struct {
	mu    sync.Mutex
	first map[string]time.Time
	count map[string]int
}

func (l *callLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	key := r.Header.Get("Idempotency-Key")
	l.mu.Lock()
	if l.count[key] == 0 {
		l.first[key] = now
	}
	l.count[key]++
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (l *callLog) take(key string) (time.Time, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, n := l.first[key], l.count[key]
	delete(l.first, key)
	delete(l.count, key)
	return t, n
}

// newConns counts the connections the stack opened to the upstream and
// the webhook receiver.
var newConns atomic.Int64

// runHandshakes starts the stack and runs interleaved blocks at c=1 and 20.
func runHandshakes(ctx context.Context, o hsOptions) (*hsResult, error) {
	dir, err := os.MkdirTemp("", "countersign-handshake-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := &hsEnv{
		one:      o.oneCredential,
		links:    &linkBox{boxes: map[string]chan string{}},
		upstream: &callLog{first: map[string]time.Time{}, count: map[string]int{}},
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, DisableCompression: true},
			Timeout: handshakeDeadline},
	}
	var servers []*http.Server
	defer func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}()
	serveLocal := func(h http.Handler) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				newConns.Add(1)
			}
		}}
		servers = append(servers, s)
		go func() { _ = s.Serve(ln) }()
		return "http://" + ln.Addr().String(), nil
	}
	upURL, err := serveLocal(env.upstream)
	if err != nil {
		return nil, err
	}
	hookURL, err := serveLocal(env.links)
	if err != nil {
		return nil, err
	}
	configDir := filepath.Join(dir, "config")
	if err := writeHandshakeConfig(configDir, upURL, hookURL); err != nil {
		return nil, err
	}
	// Logs as the local binary writes them (JSON, info), thrown away.
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	env.stack, err = stack.Start(ctx, stack.Options{ConfigDir: configDir, Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"),
		Stdout: io.Discard, Logger: logger})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = env.stack.Close(cctx)
	}()

	res := &hsResult{opts: o, cells: map[int]*hsCell{}}
	for _, c := range []int{1, hsConcurrency} {
		res.cells[c] = &hsCell{}
		if _, err := env.block(ctx, c, o.block/4); err != nil { // warm-up
			return nil, fmt.Errorf("warm-up at c=%d: %w", c, err)
		}
	}
	// Each pause block calls with a credential of its own, so that no
	// credential reaches its 10,000 pending confirmations (the limit's
	// most): the paused calls stay pending. The handshake blocks have
	// credentials of their own (hsOneKeys).
	pauseKey := 0
	nextPauseKey := func() string { pauseKey++; return fmt.Sprintf("cs_bench_%02d", 1+(pauseKey-1)%(hsConcurrency-1)) }
	if o.pauses {
		res.pauses = &hsCell{}
		if _, err := env.pauseBlock(ctx, hsConcurrency, o.block/4, nextPauseKey()); err != nil {
			return nil, fmt.Errorf("pause warm-up: %w", err)
		}
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if o.memProfile != "" {
		defer func() {
			if f, err := os.Create(o.memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	for round := range o.rounds {
		cs := []int{1, hsConcurrency}
		if round%2 == 1 {
			cs = []int{hsConcurrency, 1}
		}
		for _, c := range cs {
			res.loads = append(res.loads, loadavg())
			b, err := env.block(ctx, c, o.block)
			if err != nil {
				return nil, fmt.Errorf("handshakes at c=%d: %w", c, err)
			}
			res.cells[c].add(b)
		}
		if o.pauses {
			res.loads = append(res.loads, loadavg())
			b, err := env.pauseBlock(ctx, hsConcurrency, o.block, nextPauseKey())
			if err != nil {
				return nil, fmt.Errorf("pauses at c=%d: %w", hsConcurrency, err)
			}
			res.pauses.add(b)
		}
	}
	res.loads = append(res.loads, loadavg())
	res.conns = newConns.Load()
	return res, nil
}

func writeHandshakeConfig(dir, upstreamURL, hookURL string) error {
	var creds []string
	for i := range hsConcurrency {
		creds = append(creds, fmt.Sprintf(`{"id": "bench-%02d", "key": "cs_bench_%02d", "choice": "ask_person"}`, i, i))
	}
	for i := range hsOneKeys {
		creds = append(creds, fmt.Sprintf(`{"id": "bench-one-%02d", "key": "cs_bench_one_%02d", "choice": "ask_person"}`, i, i))
	}
	files := map[string]string{
		"settings.json": fmt.Sprintf(`{
  "workspace": {"name": "handshake"},
  "public_url": "http://127.0.0.1:1",
  "approvers": {"console": false, "webhooks": [{"name": "bench", "url": %q, "format": "json", "secret": %q}]},
  "limits": {"calls_per_minute": 1000000, "pending_confirmations": 10000}
}`, hookURL, webhookSecretHop),
		"credentials.json": "[\n  " + strings.Join(creds, ",\n  ") + "\n]",
		"connections/crm/policy.json": fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET", "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}
  ]
}`, upstreamURL),
	}
	return writeFiles(dir, files)
}

// add pools a block into the cell.
func (cl *hsCell) add(b hsBlock) {
	cl.n += b.n
	cl.elapsed += b.elapsed
	cl.total = append(cl.total, b.total...)
	cl.toCall = append(cl.toCall, b.toCall...)
	cl.writes += b.writes
	cl.commits += b.commits
	cl.cpu += b.cpu
	cl.perBlockRate = append(cl.perBlockRate, float64(b.n)/b.elapsed.Seconds())
}

type hsBlock struct {
	n               int
	elapsed         time.Duration
	total, toCall   []time.Duration
	writes, commits uint64
	cpu             time.Duration
}

// block runs c workers, each doing whole handshakes until d has passed,
// then waits for the stack's writes to settle and counts them.
func (e *hsEnv) block(ctx context.Context, c int, d time.Duration) (hsBlock, error) {
	e.oneKey = fmt.Sprintf("cs_bench_one_%02d", e.blocks%hsOneKeys)
	e.blocks++
	return e.measure(ctx, c, d, 2*time.Second, 20*time.Millisecond, func(w int, i int64) (time.Duration, time.Duration, error) {
		key := fmt.Sprintf("cs_bench_%02d", w)
		if e.one {
			key = e.oneKey
		}
		return e.handshake(key, 1+i%20)
	})
}

// pauseBlock runs c workers calling with one credential, key, each
// making confirmed calls that pause (202) and nothing more, until d has
// passed or the credential has maxPausesPerBlock pauses; then it waits
// for the stack's writes to settle (the notify tasks') and counts them.
func (e *hsEnv) pauseBlock(ctx context.Context, c int, d time.Duration, key string) (hsBlock, error) {
	return e.measure(ctx, c, d, 5*time.Second, 50*time.Millisecond, func(_ int, i int64) (time.Duration, time.Duration, error) {
		if i > maxPausesPerBlock {
			return 0, 0, errBlockFull
		}
		t0 := time.Now()
		call := fmt.Sprintf(`{"connection":"crm","method":"DELETE","path":"/contacts/%d","intent":"write"}`, 1+i%20)
		status, body, err := e.post(e.stack.URL+"/v1/calls", "application/json", key, call)
		if err == nil && status != http.StatusAccepted {
			err = fmt.Errorf("call: status %d: %s", status, body)
		}
		return time.Since(t0), 0, err
	})
}

// errBlockFull stops a worker without failing the block.
var errBlockFull = errors.New("the block's credential has its pauses")

// measure runs c workers until d has passed, each calling op (with its
// number and the block's running count) until op fails, and gathers what
// each operation took (toCall only where op gives one); then it waits up
// to settle, checking every step, for the store's counts to stop moving
// and counts the writes and commits of the block.
func (e *hsEnv) measure(ctx context.Context, c int, d, settle, step time.Duration, op func(w int, i int64) (total, toCall time.Duration, err error)) (hsBlock, error) {
	before := e.stack.StoreStats()
	cpu0 := selfCPU()
	var (
		mu    sync.Mutex
		out   hsBlock
		first error
		wg    sync.WaitGroup
		seq   atomic.Int64
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var total, toCall []time.Duration
			var err error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				var t, a time.Duration
				if t, a, err = op(w, seq.Add(1)); err != nil {
					break
				}
				total = append(total, t)
				if a > 0 {
					toCall = append(toCall, a)
				}
			}
			mu.Lock()
			out.total = append(out.total, total...)
			out.toCall = append(out.toCall, toCall...)
			if err != nil && !errors.Is(err, errBlockFull) && first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	out.cpu = selfCPU() - cpu0
	out.n = len(out.total)
	if first != nil {
		return out, first
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	// The workflow's last transitions may still be committing.
	after := e.stack.StoreStats()
	for until := time.Now().Add(settle); time.Now().Before(until); {
		time.Sleep(step)
		now := e.stack.StoreStats()
		if now == after {
			break
		}
		after = now
	}
	out.writes, out.commits = after.Writes-before.Writes, after.Commits-before.Commits
	return out, nil
}

// handshake runs one confirmed call: the call pauses (202), the webhook
// brings the link, the approver posts Approve, the agent redeems, and the
// upstream is called once. It returns the whole time and the time from
// the approve POST to the upstream call.
func (e *hsEnv) handshake(key string, contact int64) (total, toCall time.Duration, err error) {
	t0 := time.Now()
	call := fmt.Sprintf(`{"connection":"crm","method":"DELETE","path":"/contacts/%d","intent":"write"}`, contact)
	status, body, err := e.post(e.stack.URL+"/v1/calls", "application/json", key, call)
	if err != nil {
		return 0, 0, err
	}
	if status != http.StatusAccepted {
		return 0, 0, fmt.Errorf("call: status %d: %s", status, body)
	}
	var paused struct {
		Confirmation struct {
			ID string `json:"id"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal(body, &paused); err != nil || paused.Confirmation.ID == "" {
		return 0, 0, fmt.Errorf("call: no confirmation id in %s", body)
	}
	id := paused.Confirmation.ID
	var link string
	select {
	case link = <-e.links.box(id):
		e.links.forget(id)
	case <-time.After(handshakeDeadline):
		return 0, 0, fmt.Errorf("no webhook for %s within %s", id, handshakeDeadline)
	}
	u, err := url.Parse(link)
	if err != nil {
		return 0, 0, err
	}
	form := u.Query()
	form.Set("decision", "approve")
	tApprove := time.Now()
	status, body, err = e.postAccept(e.stack.URL+u.EscapedPath(), "application/x-www-form-urlencoded", "", form.Encode(), "application/json")
	if err != nil {
		return 0, 0, err
	}
	if status != http.StatusOK {
		return 0, 0, fmt.Errorf("approve %s: status %d: %s", id, status, body)
	}
	redeem := fmt.Sprintf(`{"connection":"crm","method":"DELETE","path":"/contacts/%d","intent":"confirmed_write","confirmation_id":%q}`, contact, id)
	status, body, err = e.post(e.stack.URL+"/v1/calls", "application/json", key, redeem)
	if err != nil {
		return 0, 0, err
	}
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"status":"executed"`)) {
		return 0, 0, fmt.Errorf("redeem %s: status %d: %s", id, status, body)
	}
	total = time.Since(t0)
	at, n := e.upstream.take(id + ":0")
	if n != 1 {
		return 0, 0, fmt.Errorf("the upstream saw %s %d times, want once", id, n)
	}
	return total, at.Sub(tApprove), nil
}

// selfCPU is the CPU time this process has used (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (e *hsEnv) post(u, contentType, key, body string) (int, []byte, error) {
	return e.postAccept(u, contentType, key, body, "")
}

func (e *hsEnv) postAccept(u, contentType, key, body, accept string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// write prints the handshake table and its targets; it reports whether
// every target was met.
func (r *hsResult) write(w io.Writer) bool {
	fmt.Fprintf(w, "### The confirmed path (local stack, every write durable)\n\n")
	who := "each agent with its own credential"
	if r.opts.oneCredential {
		who = "every agent of a block with one credential (a credential per block)"
	}
	fmt.Fprintf(w, "Call → 202 → webhook → approve POST → redeem → upstream once, %s; %d rounds of interleaved %s blocks; 1-minute load average %s.\n\n",
		who, r.opts.rounds, r.opts.block, loadRange(r.loads))
	fmt.Fprintln(w, "| c | handshakes/s | blocks | handshake p50 | p99 | approve POST → upstream p50 | p99 | durable writes / handshake | bbolt commits / handshake | CPU / handshake |")
	fmt.Fprintln(w, "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	ok := true
	var misses []string
	for _, c := range []int{1, hsConcurrency} {
		cl := r.cells[c]
		rate := float64(cl.n) / cl.elapsed.Seconds()
		var blocks []string
		for _, b := range cl.perBlockRate {
			blocks = append(blocks, fmt.Sprintf("%.0f", b))
		}
		toCall50 := percentile(cl.toCall, 50)
		fmt.Fprintf(w, "| %d | %.0f | %s | %s | %s | %s | %s | %.2f | %.2f | %s |\n", c, rate, strings.Join(blocks, ", "),
			ms(percentile(cl.total, 50)), ms(percentile(cl.total, 99)), ms(toCall50), ms(percentile(cl.toCall, 99)),
			float64(cl.writes)/float64(cl.n), float64(cl.commits)/float64(cl.n), ms(cl.cpu/time.Duration(cl.n)))
		if c == hsConcurrency && rate < minHandshakes {
			ok = false
			misses = append(misses, fmt.Sprintf("%.0f handshakes/s at c=%d (target ≥ %d)", rate, c, minHandshakes))
		}
		if r.opts.oneCredential && c == hsConcurrency && rate < minOneCredential {
			ok = false
			misses = append(misses, fmt.Sprintf("%.0f handshakes/s at c=%d from one credential (target ≥ %d)", rate, c, minOneCredential))
		}
		if p99 := percentile(cl.total, 99); r.opts.oneCredential && c == hsConcurrency && p99 > maxP99OneCredential {
			ok = false
			misses = append(misses, fmt.Sprintf("handshake p99 %s at c=%d from one credential (target ≤ %s)", ms(p99), c, ms(maxP99OneCredential)))
		}
		if p50 := percentile(cl.total, 50); c == 1 && p50 > maxP50Alone {
			ok = false
			misses = append(misses, fmt.Sprintf("handshake p50 %s at c=1 (target ≤ %s)", ms(p50), ms(maxP50Alone)))
		}
		if toCall50 >= maxApproveToCall {
			ok = false
			misses = append(misses, fmt.Sprintf("approve POST → upstream p50 %s at c=%d (target < %s)", ms(toCall50), c, ms(maxApproveToCall)))
		}
	}
	fmt.Fprintln(w)
	if p := r.pauses; p != nil {
		rate := float64(p.n) / p.elapsed.Seconds()
		var blocks []string
		for _, b := range p.perBlockRate {
			blocks = append(blocks, fmt.Sprintf("%.0f", b))
		}
		fmt.Fprintf(w, "Pause creation alone: call → 202 at c=%d, every agent of a block with one credential (a credential per block), nothing approved; interleaved with the rounds above. Writes, commits and CPU include the notify tasks that send each pause's webhook (settled after each block).\n\n", hsConcurrency)
		fmt.Fprintln(w, "| c | pauses/s | blocks | pause p50 | p99 | durable writes / pause | bbolt commits / pause | CPU / pause |")
		fmt.Fprintln(w, "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
		fmt.Fprintf(w, "| %d | %.0f | %s | %s | %s | %.2f | %.2f | %s |\n\n", hsConcurrency, rate, strings.Join(blocks, ", "),
			ms(percentile(p.total, 50)), ms(percentile(p.total, 99)), float64(p.writes)/float64(p.n), float64(p.commits)/float64(p.n), ms(p.cpu/time.Duration(p.n)))
		if rate < minPauses {
			ok = false
			misses = append(misses, fmt.Sprintf("%.0f pauses/s at c=%d from one credential (target ≥ %d)", rate, hsConcurrency, minPauses))
		}
	}
	fmt.Fprintf(w, "CPU / handshake is this process's: the stack and the harness's agents, receiver and upstream. The stack opened %d connections to the upstream and the receiver in all.\n\n", r.conns)
	if ok {
		one := ""
		if r.opts.oneCredential {
			one = fmt.Sprintf(" (≥ %d from one credential, p99 ≤ %s)", minOneCredential, ms(maxP99OneCredential))
		}
		fmt.Fprintf(w, "Targets (docs/design.md): ≥ %d handshakes/s at c=%d%s, p50 ≤ %s at c=1, approve POST → upstream call < %s p50: **met**.\n\n",
			minHandshakes, hsConcurrency, one, ms(maxP50Alone), ms(maxApproveToCall))
	} else {
		fmt.Fprintf(w, "Targets (docs/design.md): **missed**: %s.\n\n", strings.Join(misses, "; "))
	}
	return ok
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
