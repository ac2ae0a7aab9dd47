// Package app is the composition root: it builds the whole countersign
// graph (the confirmation lifecycle, the call pipeline, the approver
// channels, and the HTTP surfaces and workflow tasks over them) from a
// loaded configuration and the adapters of where it runs. The Lambda mains
// (through shared/awsenv) and the local stack each call New with theirs,
// so the graph is wired once.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/script/journal"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/workflow"
)

// Store is everything the graph keeps: the union of what the lifecycle
// and the pipeline need, and credential seeding. Adapters: store/embedded
// and store/dynamostore.
type Store interface {
	confirm.Store
	calls.Store
	audit.Store
	PutCredential(ctx context.Context, c countersign.Credential) error

	// Scripts' journals (code mode, shared/script, attached by gatewayapp).
	CreateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error)
	UpdateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	PutScriptCall(ctx context.Context, c *countersign.ScriptCall) error
	ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error)
	PutScriptPart(ctx context.Context, p *countersign.ScriptPart) error
	ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error)
}

// Adapters are what a deployment plugs in. Nil fields mean the defaults
// their comments give.
type Adapters struct {
	Store Store
	// Workflow runs the state machines. It may be nil at New and set with
	// SetWorkflow (the local engine needs the task handlers first).
	Workflow workflow.Workflow
	// Signer signs and verifies approval links; required by the approver
	// surface and the notify task.
	Signer *links.Signer
	// Channels are the approver channels (console, webhooks, SNS).
	Channels []notify.Channel
	// Upstream sends calls to the connections; nil means upstream.Client.
	Upstream calls.Sender
	// Hooks calls the connections' hooks; nil means a client with a 5 s timeout.
	Hooks *http.Client
	// Logger receives structured logs, each line of a request with its
	// request id; nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns confirmation ids; nil means random "cf_" ids.
	NewID func() string
}

// Options are the choices of where the graph runs.
type Options struct {
	// PublicURL is where approval links point; empty means
	// settings.public_url. The caller decides which wins (see awsenv and
	// the local stack).
	PublicURL string
	// SyncEvents delivers approver events before a handler returns
	// (Lambda freezes work left running after the response).
	SyncEvents bool
	// PollInterval is the first pause of a ?wait= long poll (0: 100 ms).
	PollInterval time.Duration
	// Stopping, when closed, answers long polls at once (a server shutting down).
	Stopping <-chan struct{}
	// BodyTimeout bounds the HTTP surfaces' wait for a request's body
	// once its headers are in (0: httpapi.BodyTimeout).
	BodyTimeout time.Duration
}

// App is the assembled graph.
//
// The configuration is held in one place, the pipeline (Calls.Current):
// Apply puts another in force there, Live returns it, and nothing else in
// the graph keeps a copy, so what a request obeys is what is in force.
type App struct {
	Store      Store
	Dispatcher *notify.Dispatcher
	Confirm    *confirm.Service
	Calls      *calls.Service
	Signer     *links.Signer
	// Audit is the audit trail every surface records to.
	Audit *audit.Trail
	// PublicURL is where approval links point, as New set it; LinkBase
	// returns the one in force.
	PublicURL string
	Logger    *slog.Logger

	now     func() time.Time
	options Options
	link    atomic.Pointer[string]
}

// Live is what a deployment may change while it runs: the configuration
// it re-read and what follows from it.
type Live struct {
	// Config is the new configuration (validated, as config.Load returns it).
	Config *config.Config
	// Channels are the approver channels for it.
	Channels []notify.Channel
	// PublicURL is where approval links point; empty means
	// Config.Settings.PublicURL.
	PublicURL string
}

// Apply puts l in force for what starts after it returns: the calls, the
// lifecycle's timeouts, the approval page's look, the approver channels and
// the links' base. Work under way finishes with what it started with.
func (a *App) Apply(l Live) {
	if l.Config == nil {
		return
	}
	t := l.Config.Settings.Timeouts
	a.Confirm.SetTimeouts(confirm.Timeouts{Call: t.Call(), Script: t.Script(), Redeem: t.Redeem()})
	a.Dispatcher.SetChannels(l.Channels)
	base := l.PublicURL
	if base == "" {
		base = l.Config.Settings.PublicURL
	}
	a.link.Store(&base)
	a.Calls.SetConfig(l.Config)
}

// Live returns the configuration in force.
func (a *App) Live() *config.Config { return a.Calls.Current() }

// LinkBase returns where approval links point now.
func (a *App) LinkBase() string {
	if p := a.link.Load(); p != nil {
		return *p
	}
	return a.PublicURL
}

// New builds the graph.
func New(cfg *config.Config, ad Adapters, o Options) *App {
	logger := reqlog.Logger(ad.Logger)
	t := cfg.Settings.Timeouts
	a := &App{Store: ad.Store, Signer: ad.Signer, Logger: logger, now: ad.Now, options: o}
	a.PublicURL = o.PublicURL
	if a.PublicURL == "" {
		a.PublicURL = cfg.Settings.PublicURL
	}
	a.Dispatcher = notify.NewDispatcher(ad.Channels, logger)
	a.Audit = &audit.Trail{Store: ad.Store, Now: ad.Now, Logger: logger, ConfigDir: cfg.Dir}
	a.Confirm = &confirm.Service{
		Store: ad.Store, Workflow: ad.Workflow,
		Timeouts: confirm.Timeouts{Call: t.Call(), Script: t.Script(), Redeem: t.Redeem()},
		Now:      ad.Now, NewID: ad.NewID, Logger: logger,
		Audit: a.Audit, Events: a.Dispatcher, SyncEvents: o.SyncEvents,
	}
	if digest, err := audit.DirDigest(cfg.Dir); err == nil {
		a.Audit.ConfigDigest = digest
	} else {
		logger.Warn("configuration digest not computed; configuration loads are not recorded", "error", err)
	}
	a.Calls = (&calls.Service{
		Store: ad.Store, Confirm: a.Confirm, Upstream: ad.Upstream, Hooks: ad.Hooks,
		Now: ad.Now, Logger: logger, Audit: a.Audit,
	}).WithConfig(cfg)
	a.Confirm.Reader = calls.ShowReader{Config: a.Calls.Current}
	return a
}

// SetWorkflow sets the workflow adapter after New.
func (a *App) SetWorkflow(w workflow.Workflow) { a.Confirm.Workflow = w }

// SeedCredentials writes the configuration's credentials (credentials.json)
// to the store: the local stack and tests do; a deployment keeps its
// credentials only in the table and seeds them only when told to
// (shared/awsenv).
func (a *App) SeedCredentials(ctx context.Context) error {
	for _, c := range a.Live().Credentials {
		if err := a.Store.PutCredential(ctx, c); err != nil {
			return fmt.Errorf("store credential %s: %w", c.ID, err)
		}
	}
	return nil
}

// Gateway is the agents' surface without code mode's engine: the status
// of a script batch (GET /v1/confirmations/{id}) is read from its journal,
// and running scripts (POST /v1/scripts) and /mcp are gatewayapp's, which
// a deployment serves from the scripts function. The gateway function
// builds from this alone, so its bootstrap links neither goja nor the MCP
// SDK.
func (a *App) Gateway() *httpapi.Gateway {
	return &httpapi.Gateway{Calls: a.Calls, Scripts: scriptStatus{journal.Reader{Store: a.Store}},
		PollInterval: a.options.PollInterval, Stopping: a.options.Stopping, BodyTimeout: a.options.BodyTimeout}
}

// scriptStatus answers the status of script batches from their journals;
// it runs no script.
type scriptStatus struct{ journal journal.Reader }

func (s scriptStatus) RunScript(context.Context, *countersign.Credential, string, string) (*countersign.ScriptResult, error) {
	return nil, fault.Errorf(fault.NotFound, "no route POST /v1/scripts here: scripts run in the scripts function")
}

func (s scriptStatus) DescribeScript(ctx context.Context, c *countersign.Confirmation) (*countersign.ScriptResult, error) {
	return s.journal.Describe(ctx, c)
}

// Approver is the approvers' surface (the approval page).
func (a *App) Approver() *httpapi.Approver {
	return &httpapi.Approver{Calls: a.Calls, Signer: a.Signer, Now: a.now, Logger: a.Logger, BodyTimeout: a.options.BodyTimeout, Credentials: a.Store}
}

// Operator is the operator surface: /v1/operator/... and the /operator page.
func (a *App) Operator() *httpapi.Operator {
	return &httpapi.Operator{Calls: a.Calls, Sessions: a.Store, Signer: a.Signer, Audit: a.Store, Now: a.now, Logger: a.Logger,
		BodyTimeout: a.options.BodyTimeout}
}

// NotifyTask stores the workflow's task token and sends the approver links.
func (a *App) NotifyTask() *tasks.Notify {
	return &tasks.Notify{Confirm: a.Confirm, Signer: a.Signer, Dispatcher: a.Dispatcher, PublicURL: a.PublicURL,
		LinkBase: a.LinkBase, Logger: a.Logger}
}

// ExecuteTask runs approved operations the gateway executes itself.
func (a *App) ExecuteTask() *tasks.Execute { return &tasks.Execute{Calls: a.Calls} }

// FinalizeTask records how a wait ended.
func (a *App) FinalizeTask() *tasks.Finalize {
	return &tasks.Finalize{Confirm: a.Confirm, Logger: a.Logger}
}

// Close waits for background deliveries (bounded by ctx).
func (a *App) Close(ctx context.Context) error { return a.Dispatcher.Close(ctx) }
