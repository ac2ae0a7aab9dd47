// Command gateway is the agents' Lambda: /v1/calls, /v1/rest/..., /v1/scripts,
// /v1/confirmations/{id}, /v1/credentials/me, /mcp and /healthz behind API
// Gateway.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	// The signing key seals MCP request states and card tokens.
	a := awsenv.MustLoad(awsenv.NeedWorkflow | awsenv.NeedSigningKey)
	// Credentials from the bundled configuration are (re)written at cold
	// start; credentials created in the store directly are left alone.
	if err := a.SeedCredentials(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "countersign: cannot start:", err)
		os.Exit(1)
	}
	lambda.Start(gatewayapp.Gateway(a).Handle)
}
