package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The targets of docs/design.md for the hop.
const (
	maxAddedRatio  = 1.1  // gateway's p50 added latency / the proxy's
	minThroughput  = 0.95 // gateway's throughput at c=20 / the proxy's
	hopConcurrency = 20
)

var concurrencies = []int{1, hopConcurrency}

// hopKey is the key of the hop's credential (run_without_asking; GET
// /contacts/{id} is auto anyway).
const hopKey = "cs_bench_hop"

type hopOptions struct {
	local  string
	rounds int
	block  time.Duration
	// compare, when set, is a second local binary (the build before a
	// change, or a variant) measured in the same rounds as the routes
	// "rest (B)" and "calls (B)"; the targets are judged on -local alone.
	compare string
}

// compareSuffix marks the routes through the -compare binary.
const compareSuffix = " (B)"

// route is one way of sending the same GET.
type route struct {
	name   string
	newReq func() (*http.Request, error)
	// ok checks a response body (the gateway must have executed the call).
	ok     func(status int, body []byte) bool
	client *http.Client
	// pid is the process the route goes through (the upstream's for
	// direct), whose CPU time each block counts.
	pid int
}

// cell is what one (route, concurrency) measured over all its blocks.
type cell struct {
	lat      []time.Duration
	n        int
	elapsed  time.Duration
	cpu      time.Duration // CPU time of the route's process
	errs     int
	perRound []time.Duration // p50 of each round's block
	perRate  []float64       // requests per second of each round's block
}

type hopResult struct {
	opts   hopOptions
	cells  map[string]map[int]*cell // route → concurrency
	loads  []string
	routes []string
}

// runHop starts the three processes, warms every route up, and runs the
// interleaved blocks.
func runHop(ctx context.Context, o hopOptions) (*hopResult, error) {
	dir, err := os.MkdirTemp("", "countersign-hop-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addrRe := regexp.MustCompile(`listening on (http://\S+)`)
	up, err := startChild(ctx, "upstream", filepath.Join(dir, "upstream.log"), addrRe, self, "-role", "upstream")
	if err != nil {
		return nil, err
	}
	defer up.stop()
	proxy, err := startChild(ctx, "proxy", filepath.Join(dir, "proxy.log"), addrRe, self, "-role", "proxy", "-target", up.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	configDir := filepath.Join(dir, "config")
	if err := writeHopConfig(configDir, up.URL); err != nil {
		return nil, err
	}
	gwLog := filepath.Join(dir, "gateway.log")
	gw, err := startChild(ctx, "gateway", gwLog, addrRe, o.local,
		"--config", configDir, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--demo-upstream=")
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	var gwB *child
	if o.compare != "" {
		gwB, err = startChild(ctx, "gateway B", filepath.Join(dir, "gateway-b.log"), addrRe, o.compare,
			"--config", configDir, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data-b"), "--demo-upstream=")
		if err != nil {
			return nil, err
		}
		defer gwB.stop()
	}

	routes := []*route{
		{name: "direct", newReq: getter(up.URL + "/contacts/12"), ok: is200, pid: up.cmd.Process.Pid},
		{name: "proxy", newReq: getter(proxy.URL + "/contacts/12"), ok: is200, pid: proxy.cmd.Process.Pid},
		{name: "rest", newReq: authed(getter(gw.URL + "/v1/rest/crm/contacts/12")), ok: is200, pid: gw.cmd.Process.Pid},
		{name: "calls", newReq: authed(poster(gw.URL+"/v1/calls", `{"connection":"crm","method":"GET","path":"/contacts/12","intent":"read"}`)),
			ok: func(status int, body []byte) bool {
				return status == http.StatusOK && bytes.Contains(body, []byte(`"status":"executed"`))
			}, pid: gw.cmd.Process.Pid},
	}
	if gwB != nil {
		for _, r := range routes[2:4] {
			b := *r
			b.name += compareSuffix
			b.pid = gwB.cmd.Process.Pid
			orig, host := r.newReq, strings.TrimPrefix(gwB.URL, "http://")
			b.newReq = func() (*http.Request, error) {
				req, err := orig()
				if err == nil {
					req.URL.Host, req.Host = host, host
				}
				return req, err
			}
			routes = append(routes, &b)
		}
	}
	for _, r := range routes {
		r.client = keepAliveClient()
	}
	res := &hopResult{opts: o, cells: map[string]map[int]*cell{}}
	for _, r := range routes {
		res.routes = append(res.routes, r.name)
		res.cells[r.name] = map[int]*cell{}
		for _, c := range concurrencies {
			res.cells[r.name][c] = &cell{}
		}
	}
	// Warm up: connections, the gateway's caches, the CPU frequency.
	for _, r := range routes {
		for _, c := range concurrencies {
			if _, err := runBlock(ctx, r, c, o.block/3); err != nil {
				return nil, fmt.Errorf("warm-up %s: %w; the gateway's log: %s", r.name, err, tail(gwLog))
			}
		}
	}
	for round := range o.rounds {
		res.loads = append(res.loads, loadavg())
		for i := range routes {
			// Rotate the order, and alternate the concurrencies, so no
			// route always runs right after another.
			r := routes[(i+round)%len(routes)]
			cs := concurrencies
			if round%2 == 1 {
				cs = []int{concurrencies[1], concurrencies[0]}
			}
			for _, c := range cs {
				b, err := runBlock(ctx, r, c, o.block)
				if err != nil {
					return nil, fmt.Errorf("%s at c=%d: %w; the gateway's log: %s", r.name, c, err, tail(gwLog))
				}
				cl := res.cells[r.name][c]
				cl.lat = append(cl.lat, b.lat...)
				cl.n += len(b.lat)
				cl.elapsed += b.elapsed
				cl.cpu += b.cpu
				cl.errs += b.errs
				cl.perRound = append(cl.perRound, percentile(b.lat, 50))
				cl.perRate = append(cl.perRate, float64(len(b.lat))/b.elapsed.Seconds())
			}
		}
	}
	res.loads = append(res.loads, loadavg())
	return res, nil
}

func writeHopConfig(dir, upstreamURL string) error {
	files := map[string]string{
		"settings.json": `{
  "workspace": {"name": "hop"},
  "public_url": "http://127.0.0.1:1",
  "approvers": {"console": false, "webhooks": []},
  "limits": {"calls_per_minute": 1000000, "pending_confirmations": 10000}
}`,
		"credentials.json": `[{"id": "hop", "key": "` + hopKey + `", "choice": "run_without_asking"}]`,
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

// writeFiles writes files (path below dir → content), making their folders.
func writeFiles(dir string, files map[string]string) error {
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

func getter(u string) func() (*http.Request, error) {
	return func() (*http.Request, error) { return http.NewRequest(http.MethodGet, u, nil) }
}

func poster(u, body string) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	}
}

func authed(next func() (*http.Request, error)) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := next()
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+hopKey)
		}
		return req, err
	}
}

func is200(status int, _ []byte) bool { return status == http.StatusOK }

// keepAliveClient keeps a connection per worker open between requests.
func keepAliveClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute,
		DisableCompression: true,
	}, Timeout: 30 * time.Second}
}

// blockResult is one block: every request's latency, over elapsed.
type blockResult struct {
	lat     []time.Duration
	elapsed time.Duration
	cpu     time.Duration
	errs    int
}

// maxErrors stops a block whose requests fail: the numbers would mean nothing.
const maxErrors = 10

// runBlock sends requests from c workers, each waiting for its answer
// before the next, until d has passed.
func runBlock(ctx context.Context, r *route, c int, d time.Duration) (blockResult, error) {
	var (
		mu    sync.Mutex
		all   []time.Duration
		errs  int
		first error
		wg    sync.WaitGroup
	)
	cpu0 := procCPU(r.pid)
	start := time.Now()
	deadline := start.Add(d)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			buf := make([]byte, 32<<10)
			bad := 0
			var err error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				var req *http.Request
				if req, err = r.newReq(); err != nil {
					break
				}
				t0 := time.Now()
				resp, derr := r.client.Do(req)
				if derr != nil {
					err, bad = derr, bad+1
				} else {
					n, _ := io.ReadFull(resp.Body, buf)
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if !r.ok(resp.StatusCode, buf[:n]) {
						err, bad = fmt.Errorf("status %d: %s", resp.StatusCode, buf[:min(n, 300)]), bad+1
					} else {
						lat = append(lat, time.Since(t0))
					}
				}
				if bad >= maxErrors {
					break
				}
			}
			mu.Lock()
			all = append(all, lat...)
			errs += bad
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := procCPU(r.pid) - cpu0
	if ctx.Err() != nil {
		return blockResult{}, ctx.Err()
	}
	if errs >= maxErrors || len(all) == 0 {
		return blockResult{}, fmt.Errorf("%d failed requests, the first: %v", errs, first)
	}
	return blockResult{lat: all, elapsed: elapsed, cpu: cpu, errs: errs}, nil
}

// procCPU is the CPU time (user and system) process pid has used, from
// /proc/<pid>/stat (in clock ticks of 10 ms; a block holds thousands of
// requests, and the table sums every block), or 0 where there is no /proc.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// percentile is the p-th percentile (nearest rank) of xs, which it sorts.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(float64(len(xs))*p/100+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// us formats a duration in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// write prints the hop's table and its targets; it reports whether every
// target was met.
//
// A route's ratios to the proxy pool every round (each route had the same
// time in every round, interleaved); the targets are judged on them. The
// ratios of each round alone are given too, their median and range, to
// show how far the machine's load moved them.
func (r *hopResult) write(w io.Writer) bool {
	fmt.Fprintf(w, "### The hop (loopback, each in its own process)\n\n")
	fmt.Fprintf(w, "GET /contacts/12 of the demo upstream; %d rounds of interleaved %s blocks per route and concurrency; 1-minute load average %s.\n\n",
		r.opts.rounds, r.opts.block, loadRange(r.loads))
	fmt.Fprintln(w, "| route | c | p50 | p99 | req/s | p50 added | added / proxy's (rounds: median, range) | req/s / proxy's (rounds: median, range) | CPU / req |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	ok := true
	var verdicts []string
	for _, c := range concurrencies {
		dcell, proxy := r.cells["direct"][c], r.cells["proxy"][c]
		direct := percentile(dcell.lat, 50)
		proxyAdded := percentile(proxy.lat, 50) - direct
		for _, name := range r.routes {
			cl := r.cells[name][c]
			p50, p99 := percentile(cl.lat, 50), percentile(cl.lat, 99)
			rate := float64(cl.n) / cl.elapsed.Seconds()
			added, ratio, tput := "", "", ""
			if name != "direct" {
				added = us(p50 - direct)
			}
			gatewayRoute := strings.TrimSuffix(name, compareSuffix)
			if gatewayRoute == "rest" || gatewayRoute == "calls" {
				var added, rates []float64
				for i := range cl.perRound {
					added = append(added, float64(cl.perRound[i]-dcell.perRound[i])/float64(proxy.perRound[i]-dcell.perRound[i]))
					rates = append(rates, cl.perRate[i]/proxy.perRate[i])
				}
				x := float64(p50-direct) / float64(proxyAdded)
				t := rate / (float64(proxy.n) / proxy.elapsed.Seconds())
				ratio = fmt.Sprintf("**%.2f×** (%.2f×, %.2f–%.2f)", x, medianOf(added), slices.Min(added), slices.Max(added))
				tput = fmt.Sprintf("**%.0f%%** (%.0f%%, %.0f–%.0f%%)", 100*t, 100*medianOf(rates), 100*slices.Min(rates), 100*slices.Max(rates))
				if name != gatewayRoute {
					// The -compare binary is shown, not judged.
				} else if x > maxAddedRatio {
					ok = false
					verdicts = append(verdicts, fmt.Sprintf("/v1/%s at c=%d: added latency %.2f× the proxy's (target ≤ %.1f×)", name, c, x, maxAddedRatio))
				}
				if name == gatewayRoute && c == hopConcurrency && t < minThroughput {
					ok = false
					verdicts = append(verdicts, fmt.Sprintf("/v1/%s at c=%d: throughput %.0f%% of the proxy's (target ≥ %.0f%%)", name, c, 100*t, 100*minThroughput))
				}
			}
			cpu := "?"
			if cl.cpu > 0 {
				cpu = us(cl.cpu / time.Duration(cl.n))
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %.0f | %s | %s | %s | %s |\n", name, c, us(p50), us(p99), rate, added, ratio, tput, cpu)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every figure pools all rounds but those in parentheses, which take each round alone. CPU / req is the CPU time of the process the route goes through (the upstream for direct, the proxy, the gateway) per request.")
	fmt.Fprintln(w)
	if ok {
		fmt.Fprintf(w, "Targets (docs/design.md): gateway p50 added latency ≤ %.1f× the proxy's at c=1 and c=20 on both routes, throughput at c=20 ≥ %.0f%% of the proxy's: **met**.\n\n", maxAddedRatio, 100*minThroughput)
	} else {
		fmt.Fprintf(w, "Targets (docs/design.md): **missed** on %s.\n\n", strings.Join(verdicts, "; "))
	}
	return ok
}

// medianOf is the median of xs.
func medianOf(xs []float64) float64 {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	if n := len(ys); n%2 == 1 {
		return ys[n/2]
	}
	return (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
}

func loadRange(loads []string) string {
	if len(loads) == 0 {
		return "?"
	}
	lo, hi := loads[0], loads[0]
	var flo, fhi float64
	fmt.Sscan(lo, &flo)
	fhi = flo
	for _, l := range loads[1:] {
		var f float64
		fmt.Sscan(l, &f)
		if f < flo {
			lo, flo = l, f
		}
		if f > fhi {
			hi, fhi = l, f
		}
	}
	if lo == hi {
		return lo
	}
	return lo + " to " + hi
}
