// Package gatewayapp assembles the parts of the graph that only the gateway
// and the execute task link: the agents' surfaces built on large libraries
// (MCP on the go-sdk, code mode on goja). The approve, notify and finalize
// functions build from package app alone, so their bootstraps stay small.
// The gateway and execute mains and the local stack call these.
package gatewayapp

import (
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/mcpapi"
	"github.com/countersign/countersign/shared/tasks"
)

// Gateway is the agents' surface with every route attached: /mcp needs
// the link signer (request states and card tokens are sealed with its key).
func Gateway(a *app.App) *httpapi.Gateway {
	g := a.Gateway()
	if a.Signer != nil {
		g.MCP = MCP(a)
	}
	return g
}

// MCP is the MCP surface. Code mode's run_script joins it as an
// mcpapi.ExtraTool in Options.Extra once code mode lands.
func MCP(a *app.App) *mcpapi.Handler {
	return mcpapi.New(mcpapi.Options{Calls: a.Calls, Signer: a.Signer, Now: a.Calls.Now, Logger: a.Logger})
}

// ExecuteTask is the execute task with everything it may have to run.
func ExecuteTask(a *app.App) *tasks.Execute {
	return a.ExecuteTask()
}
