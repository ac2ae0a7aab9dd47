package calls

import (
	"context"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
)

// Rerunner runs an approved script batch's script again (code mode,
// shared/script): journaled calls replay, approved calls run once.
type Rerunner interface {
	RerunScript(ctx context.Context, id string) (*countersign.Confirmation, error)
}

// AnswerAndRun is an answer given in the client that made the call (the
// MCP card, a run_script answer) and what follows it: the lifecycle
// records the answer, or refuses it where the call's rules leave it to its
// approvers (confirm.Service.MayAnswer: a.Credential names the answering
// credential), and an approval runs what was approved, once. A call's
// operations the gateway runs (Execute; the workflow's execute task runs
// them too, and only one of them does); a script batch's run inside its
// script, run again by rerun (nil: the workflow runs it). The run is not
// tied to the request: what started finishes, bounded by MaxWait. It
// returns the record as it then stands; an error is the answer's refusal,
// and nothing ran.
func (s *Service) AnswerAndRun(ctx context.Context, id string, a confirm.Answer, rerun Rerunner) (*countersign.Confirmation, error) {
	c, err := s.Answer(ctx, id, a)
	if err != nil || !a.Approve {
		return c, err
	}
	return s.RunApproved(ctx, c, rerun), nil
}

// RunApproved runs an approved confirmation that the gateway runs itself
// (the card, an MCP task): a call's operations through Execute (the
// workflow's execute task runs them too, and only one of them does), a
// script batch by running its script again with rerun (nil: the workflow
// runs it). The run is not tied to the request: what started finishes,
// bounded by MaxWait. A failure is logged; it returns the record as it
// then stands.
func (s *Service) RunApproved(ctx context.Context, c *countersign.Confirmation, rerun Rerunner) *countersign.Confirmation {
	switch {
	case c.Kind == countersign.KindScript && rerun != nil:
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxWait)
		defer cancel()
		done, err := rerun.RerunScript(rctx, c.ID)
		if err != nil {
			s.logger().WarnContext(ctx, "script batch not run again here", "confirmation", c.ID, "error", err)
		}
		if done != nil {
			return done
		}
	case c.Kind != countersign.KindScript:
		done, err := s.Execute(ctx, c.ID)
		if err != nil {
			// The workflow's execute task runs it too; the record tells.
			s.logger().WarnContext(ctx, "approved call not run here", "confirmation", c.ID, "error", err)
		}
		if done != nil {
			return done
		}
	}
	if fresh, err := s.Lookup(ctx, c.ID); err == nil {
		return fresh
	}
	return c
}

// SignsIn reports whether people sign in with OAuth here (Tokens).
func (s *Service) SignsIn() bool { return s.Tokens != nil }
