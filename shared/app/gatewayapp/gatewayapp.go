// Package gatewayapp assembles the parts of the graph that only the gateway
// and the execute task link: the agents' surfaces built on large libraries
// (MCP on the go-sdk, code mode on goja). The approve, notify and finalize
// functions build from package app alone, so their bootstraps stay small.
// The gateway and execute mains and the local stack call these.
package gatewayapp

import (
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/tasks"
)

// Gateway is the agents' surface with every route attached.
func Gateway(a *app.App) *httpapi.Gateway {
	return a.Gateway()
}

// ExecuteTask is the execute task with everything it may have to run.
func ExecuteTask(a *app.App) *tasks.Execute {
	return a.ExecuteTask()
}
