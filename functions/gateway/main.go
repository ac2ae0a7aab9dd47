// Command gateway is the agents' Lambda: /v1/calls, /v1/rest/...,
// /v1/confirmations/{id}, /v1/credentials/me and /healthz behind API Gateway.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/upstream"
)

func main() {
	d := awsenv.MustLoad(awsenv.NeedWorkflow)
	// Credentials from the bundled configuration are (re)written at cold
	// start; credentials created in the store directly are left alone.
	for _, c := range d.Config.Credentials {
		if err := d.Store.PutCredential(context.Background(), c); err != nil {
			fmt.Fprintln(os.Stderr, "countersign: cannot store credential", c.ID+":", err)
			os.Exit(1)
		}
	}
	h := &httpapi.Gateway{Config: d.Config, Store: d.Store, Confirm: d.Confirm, Upstream: &upstream.Client{},
		Events: d.Dispatcher, SyncEvents: true, Logger: d.Logger}
	lambda.Start(h.Handle)
}
