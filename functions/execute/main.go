// Command execute is the confirmation workflow's task that runs the
// approved operations the gateway executes itself, each exactly once. A
// script batch's script runs again in the scripts function instead (the
// batch workflow's execute task), so this one links no JavaScript engine.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	d := awsenv.MustLoad(0)
	awsenv.Start(d, d.ExecuteTask().Handle)
}
