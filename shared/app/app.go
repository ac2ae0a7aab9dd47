// Package app is the composition root: it builds the whole countersign
// graph (the confirmation lifecycle, the call pipeline, the approver
// channels, and the HTTP surfaces and workflow tasks over them) from a
// loaded configuration and the adapters of where it runs. The Lambda mains
// (through shared/awsenv) and the local stack each call New with theirs,
// so the graph is wired once.
package app

import (
	"context"
	"errors"
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
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/script/journal"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/views"
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
	DeleteCredential(ctx context.Context, id string) error

	// Scripts' journals (code mode, shared/script, attached by gatewayapp).
	CreateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error)
	UpdateScriptRun(ctx context.Context, r *countersign.ScriptRun) error
	PutScriptCall(ctx context.Context, c *countersign.ScriptCall) error
	ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error)
	PutScriptPart(ctx context.Context, p *countersign.ScriptPart) error
	ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error)

	// People's passkeys (approval.passkey, /account/passkeys).
	store.Passkeys
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
	// Passkeys registers people's passkeys and verifies the assertions
	// of approvals that need one; its relying party is LinkBase. nil
	// until UsePasskeys: only the functions that serve passkeys install
	// it, so the others do not link the WebAuthn library.
	Passkeys Passkeys
	Signer   *links.Signer
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
	// The trail first: a record made under the new configuration follows
	// its config.loaded.
	a.Audit.SetConfig(l.Config.Digest, l.Config.Dir)
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
	a.Audit = &audit.Trail{Store: ad.Store, Now: ad.Now, Logger: logger, ConfigDir: cfg.Dir, ConfigDigest: cfg.Digest}
	a.Confirm = &confirm.Service{
		Store: ad.Store, Workflow: ad.Workflow,
		Timeouts: confirm.Timeouts{Call: t.Call(), Script: t.Script(), Redeem: t.Redeem()},
		Now:      ad.Now, NewID: ad.NewID, Logger: logger,
		Audit: a.Audit, Events: a.Dispatcher, SyncEvents: o.SyncEvents,
		Credentials: ad.Store,
	}
	a.Calls = (&calls.Service{
		Store: ad.Store, Confirm: a.Confirm, Upstream: ad.Upstream, Hooks: ad.Hooks,
		Now: ad.Now, Logger: logger, Audit: a.Audit,
	}).WithConfig(cfg)
	a.Confirm.RulesInForce = func(ops []countersign.Operation) *countersign.ApprovalRules {
		return confirm.RulesOf(a.Calls.Current().Policy, ops)
	}
	a.Confirm.Reader = calls.ShowReader{Config: a.Calls.Current}
	return a
}

// SetWorkflow sets the workflow adapter after New.
func (a *App) SetWorkflow(w workflow.Workflow) { a.Confirm.Workflow = w }

// SeedCredentials writes the configuration's credentials (credentials.json)
// to the store, marked as from the configuration (countersign.SourceConfig),
// and revokes those it wrote before that the file no longer lists: the
// local stack and tests do; a deployment keeps its credentials only in the
// table and seeds them only when told to (shared/awsenv). A configured
// user keeps the subject their first sign-in bound them to, as long as the
// file gives them the same e-mail. A revoked credential is deleted (its
// key is refused from the next call on), every OAuth grant of it is
// revoked (its access and refresh tokens with it), and the revocation is
// recorded on the audit trail ("credential.revoked"). Credentials made by
// other means (countersign keys, a first sign-in) carry no mark and are
// never revoked here. It returns the ids it revoked.
func (a *App) SeedCredentials(ctx context.Context) (revoked []string, err error) {
	listed := map[string]bool{}
	for _, c := range a.Live().Credentials {
		listed[c.ID] = true
		c.Source = countersign.SourceConfig
		if c.Email != "" {
			if was, err := a.Store.GetCredential(ctx, c.ID); err == nil && was.Subject != "" && policy.SameEmail(was.Email, c.Email) {
				c.Issuer, c.Subject = was.Issuer, was.Subject
			}
		}
		if err := a.Store.PutCredential(ctx, c); err != nil {
			return nil, fmt.Errorf("store credential %s: %w", c.ID, err)
		}
	}
	var stale []countersign.Credential
	q := countersign.ListQuery{Limit: 100}
	for {
		page, err := a.Store.ListCredentials(ctx, q)
		if err != nil {
			return revoked, fmt.Errorf("list credentials: %w", err)
		}
		for _, c := range page.Items {
			if c.Source == countersign.SourceConfig && !listed[c.ID] {
				stale = append(stale, c)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	for _, c := range stale {
		if err := a.revokeCredential(ctx, c); err != nil {
			return revoked, err
		}
		revoked = append(revoked, c.ID)
	}
	return revoked, nil
}

// revokeCredential revokes a credential the configuration no longer lists.
func (a *App) revokeCredential(ctx context.Context, c countersign.Credential) error {
	if gs, ok := a.Store.(grantRevoker); ok {
		grants, err := gs.OAuthGrants(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("revoke credential %s: its grants: %w", c.ID, err)
		}
		for _, g := range grants {
			for attempt := 0; !g.Revoked; attempt++ {
				g.Revoked = true
				err := gs.UpdateOAuthGrant(ctx, g)
				if err == nil || errors.Is(err, store.ErrNotFound) {
					break
				}
				if !errors.Is(err, store.ErrConflict) || attempt == 5 {
					return fmt.Errorf("revoke credential %s: grant %s: %w", c.ID, g.ID, err)
				}
				if g, err = gs.OAuthGrant(ctx, g.ID); err != nil {
					return fmt.Errorf("revoke credential %s: grant: %w", c.ID, err)
				}
			}
		}
	}
	if err := a.Store.DeleteCredential(ctx, c.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("revoke credential %s: %w", c.ID, err)
	}
	if _, err := a.Audit.Append(ctx, countersign.AuditRecord{Chain: audit.System, Actor: "system", Action: "credential.revoked", Subject: c.ID,
		Credential: c.ID, Reason: "no longer in credentials.json"}); err != nil {
		return fmt.Errorf("revoke credential %s: record it: %w", c.ID, err)
	}
	a.Logger.WarnContext(ctx, "credential revoked: no longer in credentials.json", "credential", c.ID)
	return nil
}

// grantRevoker is the OAuth grants of a store that keeps them (both
// adapters do).
type grantRevoker interface {
	OAuthGrants(ctx context.Context, credentialID string) ([]*countersign.OAuthGrant, error)
	OAuthGrant(ctx context.Context, id string) (*countersign.OAuthGrant, error)
	UpdateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error
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

func (s scriptStatus) RunScript(context.Context, *countersign.Credential, string, string) (*views.ScriptResult, error) {
	return nil, fault.Errorf(fault.NotFound, "no route POST /v1/scripts here: scripts run in the scripts function")
}

func (s scriptStatus) DescribeScript(ctx context.Context, c *countersign.Confirmation) (*views.ScriptResult, error) {
	return s.journal.Describe(ctx, c)
}

// Passkeys is people's passkeys as the app uses them: the pages'
// ceremonies (httpapi) and the lifecycle's verification (confirm).
// shared/passkey.Service is the implementation.
type Passkeys interface {
	httpapi.PasskeyService
	confirm.PasskeyVerifier
}

// UsePasskeys installs people's passkeys (shared/passkey.Service, built
// with PasskeyDeps): the approval page begins their ceremonies, the
// lifecycle verifies their assertions, /account/passkeys registers them.
// Without it an approval that needs a passkey is refused.
func (a *App) UsePasskeys(p Passkeys) {
	a.Passkeys = p
	a.Confirm.Passkeys = p
}

// PasskeyDeps is what shared/passkey.Service needs of the app: its store,
// the relying party's URL (LinkBase), its clock and the workspace's name.
func (a *App) PasskeyDeps() (st Store, publicURL func() string, now func() time.Time, workspace func() string) {
	return a.Store, a.LinkBase, a.now, func() string { return a.Live().Settings.Workspace.Name }
}

// Approver is the approvers' surface (the approval page).
func (a *App) Approver() *httpapi.Approver {
	return &httpapi.Approver{Calls: a.Calls, Signer: a.Signer, Now: a.now, Logger: a.Logger, BodyTimeout: a.options.BodyTimeout,
		Passkeys: a.Passkeys}
}

// PasskeysPage is the people's page of passkeys (/account/passkeys); its
// SignIn is the deployment's, set by the caller as the Approver's.
func (a *App) PasskeysPage() *httpapi.Passkeys {
	return &httpapi.Passkeys{Passkeys: a.Passkeys, Signer: a.Signer, Now: a.now, Logger: a.Logger, BodyTimeout: a.options.BodyTimeout}
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
