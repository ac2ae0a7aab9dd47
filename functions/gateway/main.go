// Command gateway is the agents' Lambda: /v1/calls, /v1/rest/..., /v1/scripts,
// /v1/confirmations/{id}, /v1/credentials/me, /mcp and /healthz behind API
// Gateway.
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
	// The signing key seals MCP request states and card tokens. Credentials
	// live in the table (countersign keys); credentials.json is written to
	// it at start only when COUNTERSIGN_SEED_CREDENTIALS=true.
	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey | awsenv.MaySeedCredentials)
	awsenv.StartHTTP(d, gatewayapp.Gateway(d.App))
}
