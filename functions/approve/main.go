// Command approve is the approvers' Lambda: GET, HEAD and POST /approve/{id}.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey)
	awsenv.StartHTTP(d, d.Approver())
}
