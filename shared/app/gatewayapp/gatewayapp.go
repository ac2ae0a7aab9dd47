// Package gatewayapp assembles the parts of the graph built on large
// libraries: the agents' surfaces MCP (on the go-sdk) and code mode (on
// goja), and the execute task that runs a script batch's script again.
// Only the scripts function and the local stack link it; every other
// function builds from package app alone, so its bootstrap stays small and
// starts fast (docs/performance.md, Sizes and cold start).
package gatewayapp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/script"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/views"
)

// Gateway is the agents' surface with every route attached: /mcp needs
// the link signer (request states and card tokens are sealed with its key).
func Gateway(a *app.App) *httpapi.Gateway {
	g := a.Gateway()
	g.Scripts = httpScripts{Scripts(a)}
	if a.Signer != nil {
		g.MCP = MCP(a)
	}
	return g
}

// MCP is the MCP surface with code mode: run_script, and script batches
// decided in the card or the client's dialog.
func MCP(a *app.App) *mcpapi.Handler {
	return mcpapi.New(mcpapi.Options{Calls: a.Calls, Signer: a.Signer, Scripts: mcpScripts{Scripts(a)}, Now: a.Calls.Now, Logger: a.Logger})
}

// ExecuteTask is the execute task with everything it may have to run:
// script batches run their script again.
func ExecuteTask(a *app.App) *tasks.Execute {
	t := a.ExecuteTask()
	t.Scripts = Scripts(a)
	return t
}

// Scripts is code mode over a's pipeline and store; each run takes the
// limits of the settings.json in force (a.Calls.Current): the entry point
// for every surface (HTTP here, MCP's run_script).
func Scripts(a *app.App) *script.Service {
	return &script.Service{Calls: a.Calls, Store: a.Store, Logger: a.Logger}
}

// httpScripts is code mode behind the HTTP surface's interface: it takes
// the route's two fields as a request and answers code mode's own result
// and failure.
type httpScripts struct{ s *script.Service }

func (h httpScripts) RunScript(ctx context.Context, cred *countersign.Credential, source, confirmationID string) (*views.ScriptResult, error) {
	return h.s.Run(ctx, cred, script.Request{Source: source, ConfirmationID: confirmationID})
}

func (h httpScripts) DescribeScript(ctx context.Context, c *countersign.Confirmation) (*views.ScriptResult, error) {
	return h.s.Describe(ctx, c)
}

// mcpScripts is code mode behind the MCP surface's interface: its request
// carries what only MCP knows (the client, and why nobody can be asked
// through it).
type mcpScripts struct{ s *script.Service }

func (m mcpScripts) RunScript(ctx context.Context, cred *countersign.Credential, r mcpapi.ScriptRequest) (*views.ScriptResult, error) {
	return m.s.Run(ctx, cred, script.Request{Source: r.Source, ConfirmationID: r.ConfirmationID, CannotAsk: r.CannotAsk, Client: r.Client})
}

func (m mcpScripts) DescribeScript(ctx context.Context, c *countersign.Confirmation) (*views.ScriptResult, error) {
	return m.s.Describe(ctx, c)
}

func (m mcpScripts) RerunScript(ctx context.Context, id string) (*countersign.Confirmation, error) {
	return m.s.Rerun(ctx, id)
}

// ScriptsFunction is the scripts function's handler: API Gateway's HTTP
// events (the routes POST /v1/scripts and /mcp) go to those routes of the
// agents' surface, with code mode and MCP attached, and the batch workflow's execute task
// (its input is {"confirmation_id": ...}) runs a script batch's script
// again.
type ScriptsFunction struct {
	HTTP    func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	Execute func(context.Context, tasks.ExecuteInput) (tasks.ExecuteOutput, error)
}

// Function builds the scripts function's handler over a. Its HTTP events
// are served by the agents' surface's code mode routes alone
// (httpapi.Gateway.CodeMode), the only ones API Gateway sends it, so the
// function links none of the other routes' handlers.
func Function(a *app.App) *ScriptsFunction {
	return &ScriptsFunction{HTTP: httpapi.Lambda(Gateway(a).CodeMode()), Execute: ExecuteTask(a).Handle}
}

// Handle tells the two kinds of invocation apart by the event's shape:
// every API Gateway HTTP event (payload format 2.0) has a requestContext;
// the execute task's input never does. The execute task's errors are
// returned unchanged, so their Lambda errorType names stay the ones the
// state machine's Retry and Catch match.
func (f *ScriptsFunction) Handle(ctx context.Context, in json.RawMessage) (any, error) {
	var shape struct {
		RequestContext json.RawMessage `json:"requestContext"`
	}
	if err := json.Unmarshal(in, &shape); err != nil {
		return nil, fmt.Errorf("scripts function: the event is not a JSON object: %w", err)
	}
	if len(shape.RequestContext) > 0 {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, fmt.Errorf("scripts function: not an HTTP API event: %w", err)
		}
		return f.HTTP(ctx, req)
	}
	var task tasks.ExecuteInput
	if err := json.Unmarshal(in, &task); err != nil {
		return nil, fmt.Errorf("scripts function: not an execute task input: %w", err)
	}
	out, err := f.Execute(ctx, task)
	if err != nil {
		return nil, err
	}
	return out, nil
}
