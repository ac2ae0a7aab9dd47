// Command approve is the approvers' Lambda: GET, HEAD and POST /approve/{id}.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	// NeedOAuth: approvers sign in through the deployment's provider
	// (approvers.sign_in, "required" by default when there is one), the
	// sign-in the gateway function's /oauth routes complete.
	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey | awsenv.NeedOAuth)
	awsenv.StartHTTP(d, d.Approver())
}
