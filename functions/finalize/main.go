// Command finalize is the workflow task that records how a wait ended:
// expired, rejected or failed.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	d := awsenv.MustLoad(0)
	awsenv.Start(d, d.FinalizeTask().Handle)
}
