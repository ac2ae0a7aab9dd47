// Command gateway is the agents' Lambda: /v1/calls, /v1/rest/...,
// /v1/confirmations/{id}, /v1/credentials/me and /healthz behind API
// Gateway. POST /v1/scripts and /mcp are the scripts function's: this one
// links neither the JavaScript engine nor the MCP SDK, so it starts fast.
package main

import (
	"github.com/countersign/countersign/shared/awsenv"
)

func main() {
	// The signing key is read as before /mcp moved to the scripts function
	// (which seals MCP request states and card tokens with it); the
	// read runs beside the configuration's, so it adds no wait.
	// Credentials live in the table (countersign keys); credentials.json is
	// written to it at start only when COUNTERSIGN_SEED_CREDENTIALS=true.
	// NeedOAuth: it is the OAuth authorization server (the metadata
	// documents and /oauth/...) and takes access tokens on /v1.
	d := awsenv.MustLoad(awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.NeedOAuth|awsenv.MaySeedCredentials, awsenv.WithSignIn())
	awsenv.StartHTTP(d, d.HTTP())
}
