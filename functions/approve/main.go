// Command approve is the approvers' Lambda: GET, HEAD and POST /approve/{id}.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/httpapi"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey)
	h := &httpapi.Approver{Confirm: d.Confirm, Signer: d.Signer, Settings: d.Config.Settings,
		Events: d.Dispatcher, SyncEvents: true, Logger: d.Logger}
	lambda.Start(h.Handle)
}
