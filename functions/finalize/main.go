// Command finalize is the workflow task that records how a wait ended:
// expired, rejected or failed.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	a := awsenv.MustLoad(0)
	lambda.Start(a.FinalizeTask().Handle)
}
