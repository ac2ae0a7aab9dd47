// Command notify is the workflow's waitForTaskToken task: it stores the task
// token on the confirmation and sends each approver channel its signed link.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	a := awsenv.MustLoad(awsenv.NeedSigningKey)
	lambda.Start(a.NotifyTask().Handle)
}
