package stack

import (
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
	"sort"
	"strings"
	"sync"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/infra/local/democrm"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/passkey"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/telemetry"
	"github.com/countersign/countersign/shared/workflow/local"
	"github.com/countersign/countersign/statemachines"
)

// Options configure the local stack; zero values are the defaults docs/configuration.md gives.
type Options struct {
	// ConfigDir is the configuration directory (default infra/config).
	ConfigDir string
	// Addr is where the gateway listens (default 127.0.0.1:8080; port 0 picks one).
	Addr string
	// Listener, when set, is where the gateway listens instead of Addr: a
	// caller that must know the address before the stack starts (to
	// register its redirect URI at an identity provider, say) opens it.
	// The stack closes it.
	Listener net.Listener
	// DataDir keeps the store and the signing key (default .countersign).
	DataDir string
	// DemoUpstream is where the demo CRM listens; empty runs none.
	DemoUpstream string
	// AllowLoopbackClientDocuments lets an OAuth client_id be a metadata
	// document on a loopback http address (tests).
	AllowLoopbackClientDocuments bool
	// NoClientDocuments turns OAuth Client ID Metadata Documents off, so
	// clients register instead (a machine without internet access).
	NoClientDocuments bool
	// PublicURL overrides settings.public_url in approval links (tests on a random port).
	PublicURL string
	// Stdout receives the banner and the console approver's links (default os.Stdout).
	Stdout io.Writer
	// Logger receives structured logs (nil discards).
	Logger *slog.Logger
	// Webhook overrides the HTTP client and backoff of webhook channels (tests).
	WebhookClient  *http.Client
	WebhookBackoff []time.Duration
	// BodyTimeout bounds the wait for a request's body once its headers
	// are in (default httpapi.BodyTimeout; tests shorten it).
	BodyTimeout time.Duration
}

// Stack is a running local stack.
type Stack struct {
	// URL is the gateway's base URL, e.g. http://127.0.0.1:8080.
	URL string
	// PublicURL is where approval links point.
	PublicURL string
	// DemoURL is the demo upstream's base URL, if one runs.
	DemoURL string
	// Demo is the demo upstream, if one runs.
	Demo *democrm.Server
	// Config is the loaded configuration.
	Config *config.Config

	store      *embedded.Store
	oauth      *oauth.Server
	signer     *links.Signer
	engine     *local.Engine
	app        *app.App
	server     *http.Server
	demoServer *http.Server
	// notes are start-up remarks the banner prints (links, the demo).
	notes     []string
	served    chan error
	stopping  chan struct{}
	closeOnce sync.Once
	closeErr  error
	sweeping  sync.WaitGroup
}

// headerTimeout bounds the wait for a request's headers, idleTimeout a
// keep-alive connection's wait for its next request.
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// sweepEvery is how often the local stack deletes expired records, as
// DynamoDB's TTL does in a deployment.
const sweepEvery = time.Hour

// Function names the local engine substitutes for the ${...} ARNs.
var substitutions = map[string]string{
	"NotifyFunctionArn":   "notify",
	"ExecuteFunctionArn":  "execute",
	"FinalizeFunctionArn": "finalize",
}

// Start loads the configuration, opens the store, resumes the workflow
// executions left from a previous run, and starts serving.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	o = o.withDefaults()
	logger := o.Logger
	cfg, err := config.Load(o.ConfigDir, nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	s := &Stack{Config: cfg, served: make(chan error, 1), stopping: make(chan struct{})}
	// Whatever was opened before a failure is closed again (s, not the
	// result, which is nil on failure).
	ln := o.Listener
	defer func() {
		if err != nil {
			if ln != nil {
				ln.Close() // not served yet
			}
			_ = s.Close(context.Background())
		}
	}()
	if err := s.openData(o.DataDir); err != nil {
		return nil, err
	}

	if ln == nil {
		if ln, err = net.Listen("tcp", o.Addr); err != nil {
			return nil, fmt.Errorf("listen on %s: %w", o.Addr, err)
		}
	}
	s.URL = "http://" + ln.Addr().String()

	if err := s.startDemo(o); err != nil {
		return nil, err
	}
	publicURL, note := linkBase(cfg.Settings.PublicURL, ln.Addr(), o.PublicURL)
	if note != "" {
		s.notes = append(s.notes, note)
	}
	s.PublicURL = publicURL

	s.app = app.New(cfg, app.Adapters{Store: s.store, Signer: s.signer, Channels: approverChannels(cfg, o), Logger: logger},
		app.Options{PublicURL: publicURL, Stopping: s.stopping, BodyTimeout: o.BodyTimeout})
	s.app.UsePasskeys(passkey.New(s.app.PasskeyDeps())) // the approval page and /account/passkeys
	signIn, err := s.startOAuth(ctx, o, publicURL)
	if err != nil {
		return nil, err
	}
	revoked, err := s.app.SeedCredentials(ctx)
	if err != nil {
		return nil, err
	}
	if len(revoked) > 0 {
		s.notes = append(s.notes, "revoked: "+strings.Join(revoked, ", ")+" (no longer in credentials.json; their keys and tokens are refused)")
	}
	if err := s.startWorkflows(ctx, logger); err != nil {
		return nil, err
	}

	s.app.Audit.ConfigLoaded(ctx)
	s.serve(ln, signIn, logger)
	return s, nil
}

// withDefaults fills in what Options leaves empty.
func (o Options) withDefaults() Options {
	if o.ConfigDir == "" {
		o.ConfigDir = "infra/config"
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.DataDir == "" {
		o.DataDir = ".countersign"
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// openData opens the embedded store and the links' signing key in dir.
func (s *Stack) openData(dir string) (err error) {
	if s.store, err = embedded.Open(filepath.Join(dir, "countersign.db"), nil); err != nil {
		return err
	}
	key, err := links.LoadOrCreateKey(filepath.Join(dir, "signing-key.json"))
	if err != nil {
		return err
	}
	s.signer, err = links.NewSigner(key)
	return err
}

// startDemo serves the demo CRM on o.DemoUpstream, when set, and points
// the configuration's connections at it.
func (s *Stack) startDemo(o Options) error {
	if o.DemoUpstream == "" {
		return nil
	}
	dl, err := net.Listen("tcp", o.DemoUpstream)
	if err != nil {
		return fmt.Errorf("demo upstream on %s: %w", o.DemoUpstream, err)
	}
	s.Demo = democrm.New()
	s.Demo.SetLog(o.Stdout) // what the gateway sent it, for the person watching
	s.DemoURL = "http://" + dl.Addr().String()
	s.demoServer = &http.Server{Handler: s.Demo, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.demoServer.Serve(dl) }()
	s.notes = append(s.notes, pointAtDemo(s.Config, s.DemoURL)...)
	return nil
}

// approverChannels are settings.json's approver channels: the console and
// the webhooks.
func approverChannels(cfg *config.Config, o Options) []notify.Channel {
	var channels []notify.Channel
	if cfg.Settings.Approvers.Console {
		channels = append(channels, &notify.Console{W: o.Stdout})
	}
	for _, w := range cfg.Settings.Approvers.Webhooks {
		channels = append(channels, &notify.Webhook{Approver: w.Name, URL: w.URL, Format: w.Format, Secret: w.Secret,
			Client: o.WebhookClient, Backoff: o.WebhookBackoff})
	}
	return channels
}

// startOAuth makes countersign the OAuth authorization server of its own
// surfaces; people sign in through settings.json's sign_in provider, or,
// with none configured, on the development page (loopback only). It
// returns the sign-in the approvers use too.
func (s *Stack) startOAuth(ctx context.Context, o Options, publicURL string) (oauth.SignIn, error) {
	cfg := s.Config
	var people []string // the configured users, offered on the development sign-in page
	for _, c := range cfg.Credentials {
		if c.Email != "" {
			people = append(people, c.Email)
		}
	}
	var signIn oauth.SignIn = &oauth.DevSignIn{Issuer: strings.TrimRight(publicURL, "/") + oauth.PathDevSignIn, Key: oauth.NewKey(), People: people,
		Sessions: s.store}
	if si := cfg.Settings.SignIn; si.Configured() {
		var err error
		if signIn, err = oauth.NewOIDCSignIn(ctx, oauth.OIDCOptions{Issuer: si.Issuer, ClientID: si.ClientID, ClientSecret: si.ClientSecret,
			RedirectURL: strings.TrimRight(publicURL, "/") + oauth.PathCallback, Key: oauth.NewKey(), Sessions: s.store}); err != nil {
			return nil, err
		}
	}
	var err error
	s.oauth, err = oauth.New(s.store, oauth.Options{
		PublicURL:              func() string { return publicURL },
		SignIn:                 signIn,
		Users:                  func() []countersign.Credential { return s.app.Live().Credentials },
		SessionKey:             oauth.NewKey(),
		Logger:                 o.Logger,
		AllowLoopbackDocuments: o.AllowLoopbackClientDocuments,
		NoClientDocuments:      o.NoClientDocuments,
	})
	if err != nil {
		return nil, err
	}
	s.app.Calls.Tokens = s.oauth
	return signIn, nil
}

// startWorkflows starts the in-process interpreter of the state machines,
// with the tasks the Lambda functions run on AWS, and resumes the
// executions the store holds.
func (s *Stack) startWorkflows(ctx context.Context, logger *slog.Logger) error {
	defs, err := statemachines.Definitions()
	if err != nil {
		return err
	}
	s.engine, err = local.New(local.Options{
		DB:            s.store.DB(),
		Update:        s.store.Update,
		Along:         s.store.TxAlong,
		Definitions:   defs,
		Substitutions: substitutions,
		Functions: map[string]local.LambdaFunc{
			"notify":   invoke(s.app.NotifyTask().Handle),
			"execute":  invoke(gatewayapp.ExecuteTask(s.app).Handle),
			"finalize": invoke(s.app.FinalizeTask().Handle),
		},
		Logger: logger,
	})
	if err != nil {
		return err
	}
	s.app.SetWorkflow(s.engine)
	if err := s.engine.Resume(ctx); err != nil {
		return fmt.Errorf("resume workflows: %w", err)
	}
	return nil
}

// serve routes the surfaces and serves them on ln, and starts the sweeper
// and the audit flusher.
func (s *Stack) serve(ln net.Listener, signIn oauth.SignIn, logger *slog.Logger) {
	gateway, approver, operator := gatewayapp.Gateway(s.app), s.app.Approver(), s.app.Operator()
	approver.SignIn = signIn // approvers sign in as people do for OAuth (approvers.sign_in)
	passkeys := s.app.PasskeysPage()
	passkeys.SignIn = signIn // people register passkeys signed in as approvers are

	// So do operators who are people (a configured user with role operator).
	operator.SignIn, operator.People = signIn, s.oauth
	// Routed by prefix, not with http.ServeMux: the mux cleans paths and
	// redirects /v1/rest/crm/a/../b with a 307, where the gateway must see
	// the path as sent and refuse it (as API Gateway passes it through).
	// /metrics (the Prometheus text format) is served on a loopback
	// listener, to loopback clients naming a loopback host (as GET /):
	// the counts by rule and connection are for the operator of this
	// machine, and a page rebound to 127.0.0.1 must not read them.
	metrics := isLoopbackAddr(ln.Addr())
	if metrics {
		telemetry.UsePrometheus()
	}
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		switch {
		case p == "/metrics" && metrics && fromLoopback(r):
			telemetry.Handler().ServeHTTP(w, r)
		case p == "/":
			s.serveHome(w, r, gateway)
		case oauth.Serves(p):
			s.oauth.ServeHTTP(w, r)
		case strings.HasPrefix(p, "/approve/"):
			approver.ServeHTTP(w, r)
		case httpapi.ServesPasskeys(p):
			passkeys.ServeHTTP(w, r)
		case p == "/operator" || strings.HasPrefix(p, "/operator/") || strings.HasPrefix(p, "/v1/operator/"):
			operator.ServeHTTP(w, r)
		default:
			gateway.ServeHTTP(w, r)
		}
	})
	// Headers must arrive within headerTimeout, a body within BodyTimeout
	// (each surface sets that deadline as it reads a body, and lifts it
	// once the body is in: a whole-request ReadTimeout would also cut long
	// polls and streams); an idle keep-alive connection is closed after
	// idleTimeout.
	// One Host rule for every surface (webguard.ForeignHost): a page that
	// rebinds its own name to 127.0.0.1 reaches none of them. /mcp applies
	// the same rule itself, to answer in JSON-RPC.
	guarded := httpapi.HostGuard(route, func() []string { return []string{s.PublicURL, s.app.Live().Settings.PublicURL} })
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() == "/mcp" {
			route.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
	s.server = &http.Server{Handler: handler, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}

	s.sweeping.Add(2)
	go s.sweep(logger)
	go s.flushAudit()
	go func() { s.served <- s.server.Serve(ln) }()
}

// DefaultDemoUpstream is where the demo CRM listens by default, and the
// base_url the shipped configuration gives the crm connection.
const DefaultDemoUpstream = "127.0.0.1:8081"

// pointAtDemo points the connections whose base_url is the demo's default
// address at the demo as it actually listens (--demo-upstream elsewhere),
// so the gateway never calls another process on the default port.
func pointAtDemo(cfg *config.Config, demoURL string) []string {
	var notes []string
	for _, c := range cfg.Connections {
		u, err := url.Parse(c.BaseURL)
		if err != nil || u.Host != DefaultDemoUpstream || "http://"+u.Host == demoURL {
			continue
		}
		c.BaseURL = demoURL + strings.TrimRight(u.EscapedPath(), "/")
		notes = append(notes, fmt.Sprintf("connection %s calls the demo upstream at %s (its base_url names %s)", c.Name, c.BaseURL, DefaultDemoUpstream))
	}
	sort.Strings(notes)
	return notes
}

// linkBase is where approval links point: override when given (tests);
// else settings.public_url, unless it is a loopback address on another
// port than the one the stack listens on (--addr moved it), in which case
// the port is corrected and the returned note says so.
func linkBase(publicURL string, listen net.Addr, override string) (base, note string) {
	if override != "" {
		return override, ""
	}
	u, err := url.Parse(publicURL)
	_, port, perr := net.SplitHostPort(listen.String())
	if err != nil || perr != nil || !isLoopback(u.Hostname()) || u.Port() == port {
		return publicURL, ""
	}
	u.Host = net.JoinHostPort(u.Hostname(), port)
	base = strings.TrimRight(u.String(), "/")
	return base, fmt.Sprintf("settings.json public_url %s does not match the address the stack listens on; approval links use %s", publicURL, base)
}

func isLoopbackAddr(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	return err == nil && isLoopback(host)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sweep deletes expired records now and every sweepEvery until the stack stops.
func (s *Stack) sweep(logger *slog.Logger) {
	defer s.sweeping.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if n, err := s.store.Sweep(time.Now()); err != nil {
			logger.Warn("sweep failed", "error", err)
		} else if n > 0 {
			logger.Info("swept expired records", "deleted", n)
		}
		select {
		case <-s.stopping:
			return
		case <-t.C:
		}
	}
}

// auditFlushEvery is how often the summaries of repeated denials whose
// window ended are written, when no other record writes them first.
const auditFlushEvery = 10 * time.Second

// flushAudit writes due summaries of repeated denials until the stack
// stops (Close writes the rest).
func (s *Stack) flushAudit() {
	defer s.sweeping.Done()
	t := time.NewTicker(auditFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case now := <-t.C:
			s.app.Audit.FlushDue(context.Background(), now)
		}
	}
}

// invoke adapts a Lambda handler to the engine as the Lambda runtime calls
// it (aws-lambda-go's reflection handler): the payload decoded into the
// handler's input with encoding/json's semantics, the handler's error
// returned as it is, so errors keep the type names Step Functions would
// see, and the result encoded as JSON. It decodes and encodes with
// go-json-experiment's v1 instead of through reflect.Value.Call and
// encoding/json's Decoder: every pause runs the notify task through it
// (TestInvokeAsTheLambdaRuntime holds it to aws-lambda-go's handler).
func invoke[In, Out any](handler func(context.Context, In) (Out, error)) local.LambdaFunc {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var in In
		if err := jsonv1.Unmarshal(payload, &in); err != nil {
			return nil, err
		}
		out, err := handler(ctx, in)
		if err != nil {
			return nil, err
		}
		return jsonv1.Marshal(out)
	}
}

// Banner describes the running stack: the address and the credentials it
// loaded (ids and choices, never keys).
func (s *Stack) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "countersign local stack listening on %s\n", s.URL)
	fmt.Fprintf(&b, "approval links point to %s\n", s.PublicURL)
	for _, n := range s.notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if s.DemoURL != "" {
		fmt.Fprintf(&b, "demo upstream (CRM) on %s\n", s.DemoURL)
	}
	fmt.Fprintf(&b, "credentials:\n")
	for _, c := range s.Config.Credentials {
		extra := ""
		if c.ReadOnly {
			extra += " read-only"
		}
		if c.Operator {
			extra += " operator"
		}
		if c.AskInClient {
			extra += " asks-in-client"
		}
		if c.Email != "" {
			extra += " user " + c.Email
		}
		fmt.Fprintf(&b, "  %-12s %s%s\n", c.ID, c.Choice, extra)
	}
	if si := s.Config.Settings.SignIn; si.Configured() {
		fmt.Fprintf(&b, "people sign in with OAuth from their MCP client, through %s\n", si.Issuer)
	} else {
		fmt.Fprintf(&b, "people sign in with OAuth from their MCP client (development sign-in page: %s%s, loopback only)\n", strings.TrimRight(s.PublicURL, "/"), oauth.PathDevSignIn)
	}
	if origin, err := s.app.Passkeys.Origin(); err == nil {
		fmt.Fprintf(&b, "people register passkeys (approval.passkey) at %s%s\n", origin, oauth.PathPasskeys)
	}
	return b.String()
}

// Close stops accepting requests, lets in-flight ones finish (bounded by
// ctx), stops the workflow engine, waits for notifications, and closes the
// store. Everything recorded is on disk when it returns.
func (s *Stack) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.closeAll(ctx) })
	return s.closeErr
}

func (s *Stack) closeAll(ctx context.Context) error {
	var errs []error
	// Long polls answer now; every other in-flight request finishes.
	close(s.stopping)
	if s.server != nil {
		if err := s.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	if s.demoServer != nil {
		_ = s.demoServer.Shutdown(ctx)
	}
	if s.engine != nil {
		if err := s.engine.Close(); err != nil {
			errs = append(errs, fmt.Errorf("workflow engine: %w", err))
		}
	}
	if s.app != nil {
		s.sweeping.Wait()
		s.app.Audit.Flush(ctx) // the counts of open windows of repeated denials
		if err := s.app.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("notifications: %w", err))
		}
	}
	s.sweeping.Wait()
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// StoreStats counts the durable writes and the bbolt commits the stack
// made so far, the workflow engine's included (benchmarks and tests).
func (s *Stack) StoreStats() embedded.Stats { return s.store.Stats() }

// Done reports the server's exit.
func (s *Stack) Done() <-chan error { return s.served }
