package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/infra/local/democrm"
	"github.com/countersign/countersign/internal/oidctest"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

const webhookSecret = "whsec_test_secret_for_the_receiver"

// testCredentials are the keys the harness configures.
const testCredentials = `[
  {"id": "chat-user", "key": "cs_test_ask",    "choice": "ask_person", "ask_in_client": true},
  {"id": "other-user","key": "cs_test_ask2",   "choice": "ask_person", "ask_in_client": true},
  {"id": "program",   "key": "cs_test_program", "choice": "ask_person"},
  {"id": "agent",     "key": "cs_test_agent",  "choice": "ask_agent"},
  {"id": "runner",    "key": "cs_test_run",    "choice": "run_without_asking"},
  {"id": "ops-key",   "key": "cs_test_refuse", "origin": "operator"},
  {"id": "chatty",    "key": "cs_test_chat",   "origin": "chat"},
  {"id": "reader",    "key": "cs_test_ro",     "choice": "run_without_asking", "read_only": true},
  {"id": "billing-only", "key": "cs_test_billing", "choice": "run_without_asking", "connections": ["billing"]},
  {"id": "root",      "key": "cs_test_op",     "role": "operator"}
]`

// harnessOptions change the configuration the harness writes.
type harnessOptions struct {
	callSeconds, redeemSeconds int
	// limits, when set, is the settings' "limits" object.
	limits string
	// hook, when set, is called by the "hooked" connection's hook.
	hook func(req map[string]any) (decision, reason string)
	// files are extra configuration files (path relative to the
	// configuration directory → content); "%UPSTREAM%" in them becomes the
	// recording upstream's URL.
	files map[string]string
	// scripts, when set, is settings.json's scripts block.
	scripts string
	// mcp, when set, is settings.json's mcp block.
	mcp string
	// gate, when set, sees each upstream request before the CRM does (it
	// may hold it).
	gate func(r *http.Request)
	// bodyTimeout, when set, bounds the wait for a request's body.
	bodyTimeout time.Duration
	// approverSignIn, when set, is settings.json's approvers.sign_in.
	approverSignIn string
	// provider, when set, starts a real OpenID provider (oidctest) and
	// makes it settings.json's sign_in: people sign in there, and
	// approvers.sign_in defaults to required.
	provider bool
	// localhost, when set, makes public_url http://localhost:<port> (the
	// stack's port): passkeys need a host name as their relying party.
	localhost bool
	// logger, when set, receives the stack's logs (they are discarded
	// otherwise).
	logger *slog.Logger
}

// harness is a running local stack with a recording upstream and a webhook
// receiver, all on 127.0.0.1.
type harness struct {
	t                  testing.TB
	stack              *Stack
	upstream           *democrm.Server
	webhook            *receiver
	configDir, dataDir string
	console            *syncBuffer
	opts               harnessOptions
	// provider is the OpenID provider of harnessOptions.provider.
	provider *oidctest.Provider
	// ln is where the stack first listens (with a provider, whose client
	// needs the stack's redirect URI before the stack starts).
	ln net.Listener
	// addr is where the stack first listened.
	addr string
}

// receiver collects webhook events after checking their signature.
type receiver struct {
	mu     sync.Mutex
	events []notify.Event
	bad    int
	wake   chan struct{}
	// first is the index in events of the first event of each type and
	// confirmation, and waiting the waitEvent calls still waiting for one:
	// a waiter is woken when its own event arrives and finds it without
	// scanning every event received (which cost a benchmark of thousands
	// of handshakes more than the stack did).
	first   map[eventKey]int
	waiting map[eventKey][]chan struct{}
}

type eventKey struct{ typ, id string }

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	if err := notify.VerifySignature(req.Header.Get("Countersign-Signature"), b, webhookSecret, time.Now(), time.Minute); err != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev notify.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	k := eventKey{ev.Type, ev.Confirmation.ID}
	if _, ok := r.first[k]; !ok {
		if r.first == nil {
			r.first = map[eventKey]int{}
		}
		r.first[k] = len(r.events) - 1
	}
	for _, c := range r.waiting[k] {
		close(c)
	}
	delete(r.waiting, k)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// waitEvent waits for the first event of a type about a confirmation.
func (r *receiver) waitEvent(tb testing.TB, typ, id string) notify.Event {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	k := eventKey{typ, id}
	for {
		r.mu.Lock()
		if i, ok := r.first[k]; ok {
			ev := r.events[i]
			r.mu.Unlock()
			return ev
		}
		arrived := make(chan struct{})
		if r.waiting == nil {
			r.waiting = map[eventKey][]chan struct{}{}
		}
		r.waiting[k] = append(r.waiting[k], arrived)
		r.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline:
			tb.Fatalf("no %s event for %s within 10s", typ, id)
		}
	}
}

func (r *receiver) count(typ, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Type == typ && ev.Confirmation.ID == id {
			n++
		}
	}
	return n
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

// newHarness writes a configuration, starts a recording upstream and a
// webhook receiver, and starts the stack. It stops everything at the end.
func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.callSeconds == 0 {
		o.callSeconds = 600
	}
	if o.redeemSeconds == 0 {
		o.redeemSeconds = 600
	}
	h := &harness{t: t, upstream: democrm.New(), webhook: &receiver{wake: make(chan struct{}, 1)}, console: &syncBuffer{}, opts: o}
	var upstream http.Handler = h.upstream
	if o.gate != nil {
		upstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			o.gate(r)
			h.upstream.ServeHTTP(w, r)
		})
	}
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		decision, reason := "allow", ""
		if o.hook != nil {
			decision, reason = o.hook(req)
		}
		if decision == "500" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"decision": decision, "reason": reason})
	}))
	t.Cleanup(hooks.Close)
	wh := httptest.NewServer(h.webhook)
	t.Cleanup(wh.Close)
	// A port that refuses connections, for upstream_unreachable.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	h.configDir, h.dataDir = t.TempDir(), t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(h.configDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	signIn := ""
	if o.provider {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h.ln = ln
		h.provider = oidctest.Start(t, storage.WebClient(providerClient, providerSecret, "http://"+ln.Addr().String()+oauth.PathCallback))
		signIn = fmt.Sprintf(`,
  "sign_in": {"issuer": %q, "client_id": %q, "client_secret": %q}`, h.provider.Issuer, providerClient, providerSecret)
	}
	publicHost := "127.0.0.1"
	if o.localhost {
		publicHost = "localhost"
	}
	write("settings.json", fmt.Sprintf(`{
  "workspace": {"name": "Test Co", "accent_color": "#0f766e"},
  "public_url": "http://`+publicHost+`:1",
  "approvers": {"console": true, "webhooks": [{"name": "ops", "url": %q, "format": "json", "secret": %q}]%s},
  "timeouts": {"call_seconds": %d, "script_seconds": 1800, "redeem_seconds": %d}%s
}`, wh.URL, webhookSecret, approverSignInJSON(o.approverSignIn), o.callSeconds, o.redeemSeconds, limitsJSON(o.limits)+scriptsBlock(o.scripts)+mcpBlock(o.mcp)+signIn))
	write("credentials.json", testCredentials)
	write("connections/crm/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "headers": {"X-Upstream-Token": "upstream-secret"},
  "endpoints": [
    {"method": "GET",    "path": "/contacts"},
    {"method": "POST",   "path": "/contacts"},
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "PATCH",  "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "operation_id": "deleteContact"},
    {"method": "GET",    "path": "/payments"},
    {"method": "POST",   "path": "/payments", "confirm": true,
     "escalate": [{"field": "body.amount", "above": 10000, "escalate": "review"}]},
    {"method": "GET",    "path": "/accounts/{id}"},
    {"method": "POST",   "path": "/accounts/{id}/close", "confirm": "review"},
    {"method": "DELETE", "path": "/accounts/{id}", "confirm": "never"}
  ],
  "delegations": {"escalateConfirm": true}
}`, up.URL))
	write("connections/crm/tools/archive_contact.json", `{"name": "archive_contact", "description": "Archive a contact",
  "exposure": {"kind": "requires-confirmation", "prompt": "Archive this contact?"}, "call": {"method": "POST", "path": "/contacts/{id}/archive"}}`)
	write("connections/crm/tools/purge_contacts.json", `{"name": "purge_contacts", "description": "Purge contacts",
  "exposure": {"kind": "operator-gated"}, "llm_callable": false, "call": {"method": "POST", "path": "/contacts/purge"}}`)
	write("connections/hooked/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}
  ],
  "hooks": [{"url": %q}]
}`, up.URL, hooks.URL))
	write("connections/billing/policy.json", fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [{"method": "GET", "path": "/payments"}]
}`, deadURL))
	for rel, content := range o.files {
		write(rel, strings.ReplaceAll(content, "%UPSTREAM%", up.URL))
	}
	h.start()
	return h
}

// countersign's client at the harness's OpenID provider.
const (
	providerClient = "countersign-local"
	providerSecret = "provider-secret"
)

func approverSignInJSON(mode string) string {
	if mode == "" {
		return ""
	}
	return fmt.Sprintf(`, "sign_in": %q`, mode)
}

func limitsJSON(l string) string {
	if l == "" {
		return ""
	}
	return ",\n  \"limits\": " + l
}

func scriptsBlock(b string) string {
	if b == "" {
		return ""
	}
	return ",\n  \"scripts\": " + b
}

// start starts (or restarts) the stack on the same data directory.
func (h *harness) start() {
	h.t.Helper()
	addr := "127.0.0.1:0"
	if h.provider != nil && h.addr != "" { // a restart: where the provider sends people back
		addr = h.addr
	}
	ln := h.ln
	h.ln = nil
	s, err := Start(context.Background(), Options{
		ConfigDir: h.configDir, Addr: addr, Listener: ln, DataDir: h.dataDir, Stdout: h.console,
		WebhookBackoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond},
		BodyTimeout:    h.opts.bodyTimeout,
		Logger:         h.opts.logger,
	})
	if err != nil {
		h.t.Fatalf("start stack: %v", err)
	}
	h.stack = s
	if h.addr == "" {
		h.addr = strings.TrimPrefix(s.URL, "http://")
	}
	h.t.Cleanup(func() { h.stop() })
}

// stop shuts the stack down cleanly (idempotent).
func (h *harness) stop() {
	if h.stack == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.stack.Close(ctx); err != nil {
		h.t.Errorf("close stack: %v", err)
	}
	h.stack = nil
}

// waitConsole waits until the console approver has printed want.
func (h *harness) waitConsole(want string) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(h.console.String(), want) {
			return
		}
	}
	h.t.Fatalf("the console approver did not print %q:\n%s", want, h.console.String())
}

// restart stops the stack and starts it again with the same data.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// result is a response read whole.
type result struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (r result) str(path string) string {
	v := r.get(path)
	s, _ := v.(string)
	return s
}

// get walks a dotted path through the JSON body.
func (r result) get(path string) any {
	var v any = r.json
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			var i int
			if _, err := fmt.Sscanf(part, "%d", &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// harnessClient is http.DefaultClient with a pool of idle connections
// for 20 agents at once: http.DefaultTransport keeps 2 per host, so the
// concurrent benchmarks dialled a new connection for most requests, and
// the dials and the stack's accepts were counted in their CPU.
var harnessClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()}

func (h *harness) do(method, path, key string, body io.Reader, headers map[string]string) result {
	h.t.Helper()
	req, err := http.NewRequest(method, h.stack.URL+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := harnessClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(b, &r.json)
	}
	return r
}

// call posts to /v1/calls.
func (h *harness) call(key string, body any, headers ...string) result {
	h.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	hs := map[string]string{"Content-Type": "application/json"}
	for i := 0; i+1 < len(headers); i += 2 {
		hs[headers[i]] = headers[i+1]
	}
	return h.do(http.MethodPost, "/v1/calls", key, bytes.NewReader(b), hs)
}

// link turns an approval link into a URL on the running stack (the
// configured public URL is a placeholder in tests).
func (h *harness) link(raw string) string {
	h.t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		h.t.Fatal(err)
	}
	return u.RequestURI()
}

// approvalLink waits for the webhook's requested event and returns the link.
func (h *harness) approvalLink(id string) string {
	h.t.Helper()
	ev := h.webhook.waitEvent(h.t, notify.TypeRequested, id)
	if len(ev.Links) != 1 || ev.Links[0].Approver != "ops" {
		h.t.Fatalf("requested event links = %+v, want one link for approver ops", ev.Links)
	}
	return h.link(ev.Links[0].URL)
}

// post submits the approval form the page would submit.
func (h *harness) post(link, decision string, ops []int, accept string) result {
	h.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		h.t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", decision)
	for _, op := range ops {
		form.Add("op", fmt.Sprint(op))
	}
	headers := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if accept != "" {
		headers["Accept"] = accept
	}
	return h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()), headers)
}

var (
	formRe  = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
	inputRe = regexp.MustCompile(`<input ([^>]*)>`)
	attrRe  = regexp.MustCompile(`([a-z]+)(?:="([^"]*)")?`)
)

// press does what a browser does when a person presses a button on the
// approval page: it submits the page's form with its hidden fields, the
// checked checkboxes (all of them unless uncheck names some) and the button's
// name and value.
func (h *harness) press(page result, button string, uncheck ...string) result {
	h.t.Helper()
	action, form := pageForm(h.t, page, button, uncheck...)
	return h.do(http.MethodPost, action, "", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
}

// pageForm is what a browser posts when a person presses button on the
// approval page: the form's action and fields (see press).
func pageForm(t testing.TB, page result, button string, uncheck ...string) (string, url.Values) {
	t.Helper()
	m := formRe.FindSubmatch(page.body)
	if m == nil {
		t.Fatalf("the page has no form:\n%s", page.body)
	}
	action := html.UnescapeString(string(m[1]))
	form := url.Values{}
	// The first form's inputs only, as a browser posts them (a page that
	// offers remember has a second form with the link's fields again).
	first := page.body[bytes.Index(page.body, []byte("<form")):]
	if j := bytes.Index(first, []byte("</form>")); j >= 0 {
		first = first[:j]
	}
	for _, in := range inputRe.FindAllSubmatch(first, -1) {
		attrs := map[string]string{}
		for _, a := range attrRe.FindAllSubmatch(in[1], -1) {
			attrs[string(a[1])] = html.UnescapeString(string(a[2]))
		}
		_, checked := attrs["checked"]
		switch attrs["type"] {
		case "hidden":
			form.Add(attrs["name"], attrs["value"])
		case "checkbox":
			if checked && !slices.Contains(uncheck, attrs["value"]) {
				form.Add(attrs["name"], attrs["value"])
			}
		}
	}
	if !bytes.Contains(page.body, []byte(`name="decision" value="`+button+`"`)) {
		t.Fatalf("the page has no %q button", button)
	}
	form.Set("decision", button)
	return action, form
}

// statusOf reads a confirmation's status as its creator.
func (h *harness) statusOf(key, id string) string {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/confirmations/"+id, key, nil, nil)
	if r.status != http.StatusOK {
		h.t.Fatalf("status of %s: %d %s", id, r.status, r.body)
	}
	return r.str("status")
}

// expect fails unless the result has the status and, when given, the code.
func expect(tb testing.TB, r result, status int, code string) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if code != "" && r.str("code") != code {
		tb.Fatalf("code %q, want %q; body %s", r.str("code"), code, r.body)
	}
}
