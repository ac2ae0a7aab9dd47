// Command operator is the operators' Lambda: the review queue and
// operator-gated tools under /v1/operator/, and the operator page under
// /operator (its session cookie and CSRF tokens are sealed with the link
// signing key).
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	// NeedOAuth: operators who are people sign in through the deployment's
	// provider, the sign-in the gateway function's /oauth routes complete.
	d := awsenv.MustLoad(awsenv.NeedSigningKey|awsenv.NeedOAuth, awsenv.WithSignIn())
	awsenv.StartHTTP(d, d.Operator())
}
