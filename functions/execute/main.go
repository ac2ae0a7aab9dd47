// Command execute is the workflow task that runs approved operations the
// gateway executes itself, each exactly once; a script batch's run its
// script again.
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
	d := awsenv.MustLoad(0)
	awsenv.Start(d, gatewayapp.ExecuteTask(d.App).Handle)
}
