package calls

import (
	"context"
	"encoding/json"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
)

// The scripts use case: what code mode (shared/script, whose Pipeline
// interface lists it) needs of the pipeline besides Do, Bind, Reserve,
// Confirmation and ExecuteOne: its batch's id before the batch exists,
// the batch itself, and its end.

// NewConfirmationID returns a new confirmation id as the lifecycle makes
// them: code mode writes a script's journal under its batch's id before
// it creates the batch.
func (s *Service) NewConfirmationID() string {
	if s.Confirm.NewID != nil {
		return s.Confirm.NewID()
	}
	return confirm.NewID()
}

// CreateBatch creates a script's batch confirmation (kind script) and
// starts its workflow; the lifecycle records it (script.paused).
func (s *Service) CreateBatch(ctx context.Context, r confirm.Request) (*countersign.Confirmation, error) {
	r.Kind = countersign.KindScript
	if r.Rules == nil {
		r.Rules = confirm.RulesOf(s.Current().Policy, r.Operations)
	}
	return s.Confirm.Create(ctx, r)
}

// EndScript records the end of a batch's run after approval, once
// (confirm.Service.EndScript records and announces it); failure is nil
// when the script completed.
func (s *Service) EndScript(ctx context.Context, id string, result json.RawMessage, failure *countersign.ScriptError) (*countersign.Confirmation, error) {
	return s.Confirm.EndScript(ctx, id, result, failure)
}
