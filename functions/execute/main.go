// Command execute is the workflow task that runs approved operations the
// gateway executes itself, each exactly once; a script batch's run its
// script again.
package main

import (
	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	d := awsenv.MustLoad(0)
	awsenv.Start(d, gatewayapp.ExecuteTask(d.App).Handle)
}
