package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestSIGKILL builds ./infra/local once and runs it as a subprocess on a
// temporary data directory, in front of a recording upstream and with a
// webhook approver, both run by the test. It drives 50 confirmed calls
// (call → 202 → link from the webhook → approve POST → redeem) while
// killing the process with SIGKILL at random points and starting it again
// on the same --data: at random times, and while the upstream holds a
// redeemed call (the gateway dies between its claim and the answer) or the
// webhook receiver holds a notification (the notify task dies mid-way).
// Each call carries on where it can: an agent whose answer was lost
// retries, an approver re-posts, a confirmation whose link never came is
// left behind and the call asked again. Afterwards, with the store read
// directly:
//   - no operation reached the upstream twice (by Idempotency-Key
//     <confirmation>:<index>) and none without an approval recorded;
//   - every confirmation's status, evaluated past all its windows, tells
//     the truth (the same rules as the fault tests in infra/local/stack);
//   - every call was accounted for: executed once, or its approval spent
//     with the outcome unknown because the process died mid-call;
//   - the process still shuts down cleanly on SIGTERM.
//
// The kill points come from a seed, logged at the start: COUNTERSIGN_KILL_SEED=<n>
// replays a run's choices (the timing of the processes themselves still
// varies). -short skips it.
func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): the SIGKILL test builds and runs the local stack as a subprocess")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("COUNTERSIGN_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("COUNTERSIGN_KILL_SEED: %v", err)
		}
	}
	t.Logf("seed %d (COUNTERSIGN_KILL_SEED=%d go test -run TestSIGKILL ./infra/local replays its kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()

	const calls = 50
	k := &killer{t: t, ctx: ctx, now: make(chan killRequest)}
	// Kill points: a few upstream requests and webhook deliveries, chosen
	// by the seed, and timed kills at random moments of each run.
	k.onUpstream = pick(rng, 3, 1, calls)
	k.onWebhook = pick(rng, 3, 1, 2*calls)
	for range 8 {
		k.timed = append(k.timed, time.Duration(100+rng.IntN(500))*time.Millisecond)
	}
	t.Logf("kill on upstream request %v, on webhook delivery %v, and after %v of uptime", k.onUpstream, k.onWebhook, k.timed)

	up := &recordingUpstream{k: k}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	hooks := &hookReceiver{k: k, wake: make(chan struct{}, 1)}
	hookSrv := httptest.NewServer(hooks)
	defer hookSrv.Close()

	dir := t.TempDir()
	configDir, dataDir := filepath.Join(dir, "config"), filepath.Join(dir, "data")
	writeKillConfig(t, configDir, upSrv.URL, hookSrv.URL)
	k.bin = buildLocal(t, dir)
	addr := freeAddr(t)
	k.args = []string{"--config", configDir, "--data", dataDir, "--addr", addr, "--demo-upstream=", "--log-level", "warn"}
	k.base = "http://" + addr
	k.start()
	defer k.stopHard()
	supervised := make(chan struct{})
	go func() { defer close(supervised); k.supervise() }()

	a := &agent{k: k, hooks: hooks, client: &http.Client{Timeout: 5 * time.Second}}
	results := make([]callResult, calls)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = a.drive(ctx, fmt.Sprintf("/contacts/%d", 1000+i))
			}
		}()
	}
	for i := range calls {
		work <- i
	}
	close(work)
	wg.Wait()
	k.done()
	<-supervised
	if err := k.stopGracefully(); err != nil {
		t.Errorf("SIGTERM after the run: %v", err)
	}
	t.Logf("%d kills; %d calls in %s", k.kills, calls, time.Since(start).Round(time.Millisecond))

	// Every call accounted for.
	count := map[string]int{}
	for i, r := range results {
		count[r.end]++
		if r.end != "executed" && r.end != "unknown" {
			t.Errorf("call %d ended %q after confirmations %v: %s", i, r.end, r.ids, strings.Join(r.log, "; "))
		}
	}
	t.Logf("calls: %v", count)
	for i, r := range results {
		path := fmt.Sprintf("/contacts/%d", 1000+i)
		if n := up.byPath(path); n > 1 || r.end == "executed" && n != 1 {
			t.Errorf("call %d (%s) ended %s and reached the upstream %d times", i, path, r.end, n)
		}
	}

	// The store, read directly, against what the upstream received.
	received := up.byKey()
	for key, n := range received {
		if n > 1 {
			t.Errorf("the upstream received %s %d times", key, n)
		}
	}
	st, err := embedded.Open(filepath.Join(dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all := readConfirmations(t, st)
	statuses := map[countersign.Status]int{}
	seen := map[string]bool{}
	for _, c := range all {
		seen[c.ID] = true
		// Past every window: the decision's and the redemption's.
		late := c.ExpiresAt.Add(time.Hour)
		if c.RedeemBy != nil {
			late = c.RedeemBy.Add(time.Hour)
		}
		st := confirm.Effective(c, late)
		statuses[st]++
		n := received[confirm.IdempotencyKey(c.ID, 0)]
		op := c.Operations[0]
		switch {
		case n > 0 && (c.DecidedAt == nil || !op.Selected || c.Status == countersign.StatusRejected):
			t.Errorf("%s reached the upstream without an approval (status %s)", c.ID, c.Status)
		case n > 0 && op.State == countersign.OpWaiting:
			t.Errorf("%s reached the upstream but was never claimed", c.ID)
		}
		switch st {
		case countersign.StatusPending, countersign.StatusApproved:
			t.Errorf("%s reads %s past all its windows", c.ID, st)
		case countersign.StatusExecuted:
			if n != 1 || op.Outcome == nil || op.Outcome.Status != http.StatusNoContent {
				t.Errorf("%s reads executed; the upstream got it %d times; outcome %+v", c.ID, n, op.Outcome)
			}
		case countersign.StatusExpired, countersign.StatusRejected:
			if n != 0 {
				t.Errorf("%s reads %s but the upstream got it", c.ID, st)
			}
		case countersign.StatusFailed:
			if n != 0 && (op.Outcome == nil || op.Outcome.Error == "") {
				t.Errorf("%s reads failed, the upstream got it and no error is stored", c.ID)
			}
		case countersign.StatusRedeemed:
			if op.State != countersign.OpClaimed {
				t.Errorf("%s reads redeemed but its operation is %q", c.ID, op.State)
			}
		}
	}
	for key := range received {
		id, _, _ := strings.Cut(key, ":")
		if !seen[id] {
			t.Errorf("the upstream received %s, which has no confirmation", key)
		}
	}
	t.Logf("confirmations (past their windows): %v; upstream writes: %d", statuses, len(received))
	checkKilledAudit(t, st, all)
}

// checkKilledAudit checks the audit trail a killed process left: each
// transition's record is written in the transaction of the transition it
// records, so every confirmation has its call.paused record, every one
// decided its confirmation.approved or .rejected, and every one whose
// outcome was stored with the upstream's answer its confirmation.redeemed;
// none twice, and the chains verify.
func checkKilledAudit(t *testing.T, st *embedded.Store, all []*countersign.Confirmation) {
	t.Helper()
	ctx := context.Background()
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.ChainOf("chat-user")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range recs {
		got[r.Subject+" "+r.Action]++
	}
	for _, c := range all {
		want := []string{"call.paused"}
		if c.DecidedAt != nil {
			want = append(want, "confirmation."+map[bool]string{true: "approved", false: "rejected"}[c.Operations[0].Selected])
		}
		if o := c.Operations[0].Outcome; o != nil && o.Error == "" {
			want = append(want, "confirmation.redeemed")
		}
		for _, a := range want {
			if n := got[c.ID+" "+a]; n != 1 {
				t.Errorf("%s (%s): %d %s records, want 1", c.ID, c.Status, n, a)
			}
		}
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil || !rep.OK() {
		t.Errorf("the audit chains do not verify after the kills: %v, %+v", err, rep)
	}
	t.Logf("audit: %d records on the credential's chain", len(recs))
}

// callResult is how one call ended: "executed" (the upstream ran it once
// and the agent got the answer, or saw it stored), "unknown" (the approval
// was spent and the process died before the outcome was stored), or the
// step it gave up at.
type callResult struct {
	end string
	ids []string
	log []string
}

// agent drives calls as an agent and an approver would, retrying what a
// dead process did not answer.
type agent struct {
	k      *killer
	hooks  *hookReceiver
	client *http.Client
}

const agentKey = "cs_test_ask"

// drive takes one call through the handshake, asking again (a new
// confirmation) when one cannot go on, at most three times.
func (a *agent) drive(ctx context.Context, path string) (r callResult) {
	call := map[string]any{"connection": "crm", "method": "DELETE", "path": path, "intent": "write"}
	for range 3 {
		if ctx.Err() != nil {
			r.end = "timed out"
			return r
		}
		// The call: a lost answer is asked again (the first confirmation,
		// if it was stored, is left behind).
		status, body := a.retry(ctx, func() (int, map[string]any, error) { return a.post("/v1/calls", call) })
		if status != http.StatusAccepted {
			r.log = append(r.log, fmt.Sprintf("call: %d %v", status, body["code"]))
			continue
		}
		id, _ := body["confirmation"].(map[string]any)["id"].(string)
		r.ids = append(r.ids, id)
		// The link: the notify task sends it, again after a restart.
		link, ok := a.hooks.link(ctx, id, 8*time.Second)
		if !ok {
			r.log = append(r.log, id+": no link")
			continue
		}
		u, _ := url.Parse(link)
		form := u.Query()
		form.Set("decision", "approve")
		status, body = a.retry(ctx, func() (int, map[string]any, error) {
			return a.postForm(u.Path, form)
		})
		if status != http.StatusOK && (status != http.StatusConflict || body["code"] != "confirmation_decided") {
			r.log = append(r.log, fmt.Sprintf("%s approve: %d %v", id, status, body["code"]))
			continue
		}
		redeem := map[string]any{"connection": "crm", "method": "DELETE", "path": path, "intent": "confirmed_write", "confirmation_id": id}
		status, body = a.retry(ctx, func() (int, map[string]any, error) { return a.post("/v1/calls", redeem) })
		switch {
		case status == http.StatusOK:
			r.end = "executed"
			return r
		case status == http.StatusConflict && body["code"] == "confirmation_used":
			// An earlier redemption's answer was lost: the status says
			// whether its outcome was stored.
			switch st := a.status(ctx, id); st {
			case "executed":
				r.end = "executed"
			case "redeemed":
				r.end = "unknown"
			default:
				r.end = "used, then " + st
			}
			return r
		}
		r.log = append(r.log, fmt.Sprintf("%s redeem: %d %v", id, status, body["code"]))
	}
	r.end = "gave up"
	return r
}

// retry repeats fn while the process cannot answer (no answer, a
// connection cut, a 5xx) or the confirmation is not ready yet, for up to
// 20 s, and returns the last answer.
func (a *agent) retry(ctx context.Context, fn func() (int, map[string]any, error)) (int, map[string]any) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body, err := fn()
		again := err != nil || status >= 500 || status == http.StatusConflict && body["code"] == "confirmation_pending"
		if !again || time.Now().After(deadline) || ctx.Err() != nil {
			return status, body
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (a *agent) post(path string, body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, a.k.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Content-Type", "application/json")
	return a.do(req)
}

func (a *agent) postForm(path string, form url.Values) (int, map[string]any, error) {
	req, _ := http.NewRequest(http.MethodPost, a.k.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	return a.do(req)
}

func (a *agent) do(req *http.Request) (int, map[string]any, error) {
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, nil
}

func (a *agent) status(ctx context.Context, id string) string {
	for ctx.Err() == nil {
		req, _ := http.NewRequest(http.MethodGet, a.k.base+"/v1/confirmations/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+agentKey)
		if code, m, err := a.do(req); err == nil && code == http.StatusOK {
			s, _ := m["status"].(string)
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "unread"
}

// killer runs the local stack, kills it at its kill points and starts it
// again on the same data directory.
type killer struct {
	t    *testing.T
	ctx  context.Context
	bin  string
	args []string
	base string
	// onUpstream and onWebhook are the request numbers (from 1) at which
	// the process is killed while the request is held unanswered.
	onUpstream, onWebhook []int
	// timed are the uptimes after which the next runs are killed.
	timed []time.Duration

	now      chan killRequest // a kill point reached
	finished chan struct{}
	once     sync.Once

	// epoch counts the starts, so that a kill point reached by one run
	// never kills the next.
	epoch atomic.Int64

	mu    sync.Mutex
	cmd   *exec.Cmd
	out   *bytes.Buffer
	kills int
}

// killRequest is a kill point reached during run epoch.
type killRequest struct {
	why   string
	epoch int64
}

func (k *killer) done() {
	k.once.Do(func() {
		if k.finished == nil {
			k.finished = make(chan struct{})
		}
		close(k.finished)
	})
}

// start runs the process and waits until /healthz answers.
func (k *killer) start() {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished == nil {
		k.finished = make(chan struct{})
	}
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(k.bin, k.args...)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			k.t.Fatalf("start %s: %v", k.bin, err)
		}
		if waitHealthy(k.ctx, k.base, 10*time.Second) {
			k.cmd, k.out = cmd, out
			k.epoch.Add(1)
			return
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if attempt == 2 || k.ctx.Err() != nil {
			k.t.Fatalf("the local stack did not become healthy:\n%s", out)
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (k *killer) kill(why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Signal(syscall.SIGKILL)
	_ = k.cmd.Wait()
	k.cmd = nil
	k.kills++
	k.t.Logf("SIGKILL #%d: %s", k.kills, why)
}

// supervise kills at the timed points and when a held request asks for it,
// and starts the process again each time, until done.
func (k *killer) supervise() {
	timed := slices.Clone(k.timed)
	for {
		var tick <-chan time.Time
		if len(timed) > 0 {
			tick = time.After(timed[0])
		}
		select {
		case <-k.finished:
			return
		case <-k.ctx.Done():
			return
		case r := <-k.now:
			if r.epoch != k.epoch.Load() {
				continue // that run is gone already
			}
			k.kill(r.why)
		case <-tick:
			k.kill(fmt.Sprintf("after %s of uptime", timed[0]))
			timed = timed[1:]
		}
		k.start()
	}
}

// hold is called by a test server when a request reaches a kill point: the
// process is killed while the request is held, then the server may answer
// (to nobody).
func (k *killer) hold(why string) {
	select {
	case k.now <- killRequest{why: why, epoch: k.epoch.Load()}:
	case <-k.finished:
	case <-k.ctx.Done():
	}
}

// stopGracefully sends SIGTERM and expects exit status 0.
func (k *killer) stopGracefully() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return errors.New("not running")
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- k.cmd.Wait() }()
	select {
	case err := <-done:
		k.cmd = nil
		if err != nil {
			return fmt.Errorf("%w:\n%s", err, k.out)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		return errors.New("did not exit within 30 s of SIGTERM")
	}
}

// stopHard kills a process left running (a failed test).
func (k *killer) stopHard() {
	k.done()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != nil {
		_ = k.cmd.Process.Kill()
		_ = k.cmd.Wait()
		k.cmd = nil
	}
}

// recordingUpstream records every request (method, path, Idempotency-Key)
// and answers 204; at its kill points it holds the request until the
// gateway is killed.
type recordingUpstream struct {
	k  *killer
	mu sync.Mutex
	n  int
	// got counts requests by Idempotency-Key.
	got map[string]int
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	if u.got == nil {
		u.got = map[string]int{}
	}
	u.n++
	n := u.n
	u.got[r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key")]++
	u.mu.Unlock()
	if slices.Contains(u.k.onUpstream, n) {
		u.k.hold(fmt.Sprintf("while the upstream holds request %d (%s %s, key %s)", n, r.Method, r.URL.Path, r.Header.Get("Idempotency-Key")))
	}
	w.WriteHeader(http.StatusNoContent)
}

// byPath returns how many requests reached path.
func (u *recordingUpstream) byPath(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for k, c := range u.got {
		if strings.SplitN(k, " ", 3)[1] == path {
			n += c
		}
	}
	return n
}

// byKey returns how many times each Idempotency-Key was received.
func (u *recordingUpstream) byKey() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, n := range u.got {
		parts := strings.SplitN(k, " ", 3)
		out[parts[2]] += n
	}
	return out
}

// hookReceiver is the approver's webhook: it checks each signature, keeps
// the approval links, and at its kill points holds the delivery until the
// gateway is killed.
type hookReceiver struct {
	k     *killer
	mu    sync.Mutex
	n     int
	links map[string]string
	bad   int
	wake  chan struct{}
}

const killWebhookSecret = "whsec_kill_test"

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if err := notify.VerifySignature(r.Header.Get("Countersign-Signature"), b, killWebhookSecret, time.Now(), time.Minute); err != nil {
		h.mu.Lock()
		h.bad++
		h.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev notify.Event
	_ = json.Unmarshal(b, &ev)
	h.mu.Lock()
	h.n++
	n := h.n
	if h.links == nil {
		h.links = map[string]string{}
	}
	if ev.Type == notify.TypeRequested && len(ev.Links) > 0 {
		h.links[ev.Confirmation.ID] = ev.Links[0].URL
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	if slices.Contains(h.k.onWebhook, n) {
		h.k.hold(fmt.Sprintf("while the webhook receiver holds delivery %d (%s %s)", n, ev.Type, ev.Confirmation.ID))
	}
	w.WriteHeader(http.StatusNoContent)
}

// link waits for the approval link of id, as a path and query.
func (h *hookReceiver) link(ctx context.Context, id string, d time.Duration) (string, bool) {
	deadline := time.After(d)
	for {
		h.mu.Lock()
		l, ok := h.links[id]
		h.mu.Unlock()
		if ok {
			u, err := url.Parse(l)
			if err != nil {
				return "", false
			}
			return u.RequestURI(), true
		}
		select {
		case <-h.wake:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
}

// readConfirmations reads every stored confirmation straight from the
// embedded store's bucket.
func readConfirmations(tb testing.TB, st *embedded.Store) []*countersign.Confirmation {
	tb.Helper()
	var out []*countersign.Confirmation
	err := st.DB().View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("store_confirmations"))
		if b == nil {
			return errors.New("no store_confirmations bucket")
		}
		return b.ForEach(func(_, v []byte) error {
			var c countersign.Confirmation
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			out = append(out, &c)
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// buildLocal builds ./infra/local (this package) into dir.
func buildLocal(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "countersign-local")
	gobin := "go" // go test puts its own GOROOT/bin first on PATH
	cmd := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./infra/local: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealthy(ctx context.Context, base string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := c.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// pick returns n distinct numbers from [lo, hi], sorted.
func pick(rng *rand.Rand, n, lo, hi int) []int {
	var out []int
	for len(out) < n {
		v := lo + rng.IntN(hi-lo+1)
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func writeKillConfig(tb testing.TB, dir, upstreamURL, hookURL string) {
	tb.Helper()
	files := map[string]string{
		"settings.json": fmt.Sprintf(`{
  "workspace": {"name": "Kill Test"},
  "public_url": "http://127.0.0.1:1",
  "approvers": {"console": false, "webhooks": [{"name": "ops", "url": %q, "format": "json", "secret": %q}]},
  "limits": {"calls_per_minute": 100000, "pending_confirmations": 1000}
}`, hookURL, killWebhookSecret),
		"credentials.json": `[{"id": "chat-user", "key": "` + agentKey + `", "choice": "ask_person"}]`,
		"connections/crm/policy.json": fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]
}`, upstreamURL),
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
