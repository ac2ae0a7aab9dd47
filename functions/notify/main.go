// Command notify is the workflow's waitForTaskToken task: it stores the task
// token on the confirmation and sends each approver channel its signed link.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/tasks"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedSigningKey)
	h := &tasks.Notify{Confirm: d.Confirm, Signer: d.Signer, Dispatcher: d.Dispatcher, PublicURL: d.PublicURL, Logger: d.Logger}
	lambda.Start(h.Handle)
}
