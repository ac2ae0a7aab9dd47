// Command execute is the workflow task that runs approved operations the
// gateway executes itself, each exactly once; a script batch's run its
// script again.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	a := awsenv.MustLoad(0)
	lambda.Start(gatewayapp.ExecuteTask(a).Handle)
}
