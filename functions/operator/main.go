// Command operator is the operators' Lambda: the review queue and
// operator-gated tools under /v1/operator/, and the operator page under
// /operator (its session cookie and CSRF tokens are sealed with the link
// signing key).
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedSigningKey)
	awsenv.StartHTTP(d, d.Operator())
}
