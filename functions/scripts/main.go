// Command scripts is code mode's Lambda: POST /v1/scripts and /mcp (whose
// run_script tool runs scripts) behind API Gateway, and the batch
// workflow's execute task, which runs an approved script batch's script
// again. It is the one function that links the JavaScript engine (goja)
// and the MCP SDK, so the others start without them.
package main

import (
	"runtime"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/awsenv"
)

// A Lambda instance serves one request at a time, so the process heap is
// the running script's: with the heap profile off, code mode's memory limit
// counts the process heap's growth directly (shared/script, memory.go),
// which stops a runaway script earlier than sampling by lane does.
func init() { runtime.MemProfileRate = 0 }

func main() {
	// The signing key seals MCP request states and card tokens; the
	// workflow ARNs: a script whose calls need a person starts a batch.
	// NeedOAuth: /mcp takes access tokens and its 401 names the metadata;
	// without WithSignIn, as nobody signs in here (no OpenID Connect client).
	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey | awsenv.NeedOAuth)
	awsenv.Start(d, gatewayapp.Function(d.App).Handle)
}
