package mcpapi

import (
	"context"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
)

// Pipeline is what the MCP surface asks of the call pipeline
// (calls.Service): authenticate, run a call, read and answer a
// confirmation (the answer and what it runs are the pipeline's use case,
// AnswerAndRun), and the configuration in force.
type Pipeline interface {
	Current() *config.Config
	Authenticate(ctx context.Context, key string) (*countersign.Credential, error)
	SignsIn() bool
	Challenge(path string, invalid bool) string
	RecordClient(ctx context.Context, cred *countersign.Credential, c calls.Client)
	Connections(cred *countersign.Credential) []string
	Idempotent(ctx context.Context, cred *countersign.Credential, key, hash string, fn func() calls.Reply) (calls.Reply, bool, error)
	Do(ctx context.Context, cred *countersign.Credential, c *calls.Call, o calls.Options) (*calls.Result, error)
	Confirmation(ctx context.Context, cred *countersign.Credential, id string, o calls.WaitOptions) (calls.Status, error)
	AnswerAndRun(ctx context.Context, id string, a confirm.Answer, rerun calls.Rerunner) (*countersign.Confirmation, error)
	ReadCurrent(ctx context.Context, ops []countersign.Operation)
	Observe(ctx context.Context, id string) (*countersign.Confirmation, error)
	RunApproved(ctx context.Context, c *countersign.Confirmation, rerun calls.Rerunner) *countersign.Confirmation
	Answer(ctx context.Context, id string, a confirm.Answer) (*countersign.Confirmation, error)
}

var _ Pipeline = (*calls.Service)(nil)
