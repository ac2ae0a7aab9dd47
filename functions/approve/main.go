// Command approve is the approvers' Lambda: GET, HEAD and POST /approve/{id}.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	a := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey)
	lambda.Start(a.Approver().Handle)
}
