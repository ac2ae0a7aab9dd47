// Command execute is the workflow task that runs approved operations the
// gateway executes itself, each exactly once.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/upstream"
)

func main() {
	d := awsenv.MustLoad(0)
	h := &tasks.Execute{Confirm: d.Confirm, Run: tasks.Runner(d.Config, &upstream.Client{}), Dispatcher: d.Dispatcher, Logger: d.Logger}
	lambda.Start(h.Handle)
}
