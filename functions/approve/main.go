// Command approve is the approvers' Lambda: GET, HEAD and POST
// /approve/{id}, and people's passkeys at /account/passkeys.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/notify/snsmail"
	"github.com/countersign/countersign/shared/passkey"
)

func main() {
	// NeedOAuth: approvers sign in through the deployment's provider
	// (approvers.sign_in, "required" by default when there is one), the
	// sign-in the gateway function's /oauth routes complete.
	// WithEmail: the e-mail approvers are mailed each approval counted
	// toward a quorum and the decision (their follow-ups).
	d := awsenv.MustLoad(awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.NeedOAuth, awsenv.WithEmail(snsmail.Deployed), awsenv.WithSignIn())
	// Passkeys: only this function registers them and verifies approvals
	// made with them, so only it links the WebAuthn library.
	d.App.UsePasskeys(passkey.New(d.App.PasskeyDeps()))
	awsenv.StartHTTP(d, d.ApproverHTTP())
}
