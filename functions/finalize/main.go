// Command finalize is the workflow task that records how a wait ended:
// expired, rejected or failed.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/tasks"
)

func main() {
	d := awsenv.MustLoad(0)
	h := &tasks.Finalize{Confirm: d.Confirm, Dispatcher: d.Dispatcher, Logger: d.Logger}
	lambda.Start(h.Handle)
}
