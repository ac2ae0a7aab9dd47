package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/telemetry"
)

// NotifyInput is the notify task's payload (statemachines/*.asl.json).
type NotifyInput struct {
	ConfirmationID string `json:"confirmation_id"`
	TaskToken      string `json:"task_token"`
	Execution      string `json:"execution,omitempty"`
}

// Notify stores the task token on the confirmation and sends each approver
// channel its own signed link. The agent never sees a link.
type Notify struct {
	Confirm    *confirm.Service
	Signer     *links.Signer
	Dispatcher *notify.Dispatcher
	// PublicURL is where approvers reach the approval page.
	PublicURL string
	// LinkBase, when set, returns where approvers reach the approval page,
	// read for each task (a deployment re-reads its configuration); it wins
	// over PublicURL.
	LinkBase func() string
	// Budget bounds the deliveries and their retries (0 means 20 s), and
	// they always stop before the invocation's own deadline (a second
	// before, or a quarter of the time left when that is less): a slow
	// receiver must not time the task out, which would fail the confirmation.
	Budget time.Duration
	Logger *slog.Logger
}

// deliveryContext is ctx bounded by the budget and by ctx's own deadline,
// keeping back a second (or a quarter of what is left, when that is less)
// to answer before the deadline.
func deliveryContext(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget <= 0 {
		budget = 20 * time.Second
	}
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		budget = min(budget, left-min(time.Second, left/4))
	}
	return context.WithTimeout(ctx, max(budget, 0))
}

// Handle runs the notify task. It is idempotent: a retried invocation with
// the same token sends the links again but changes nothing else.
func (h *Notify) Handle(ctx context.Context, in NotifyInput) (struct{}, error) {
	ctx = withRequestID(ctx)
	if in.ConfirmationID == "" || in.TaskToken == "" {
		return struct{}{}, taskError(errors.New("notify: confirmation_id and task_token are required"))
	}
	// What the person is to see of the resources (the endpoints' show
	// reads) is stored before the token: nobody can answer, nor get a
	// link, before it is there. A read that fails is stored as such; a
	// store that fails leaves the record as it was, and the links still go.
	var c *countersign.Confirmation
	var ok bool
	seen, err := h.Confirm.Observe(ctx, in.ConfirmationID)
	if err != nil {
		logger(h.Logger).WarnContext(ctx, "show reads not stored", "confirmation", in.ConfirmationID, "error", err)
		c, ok, err = h.Confirm.AttachToken(ctx, in.ConfirmationID, in.TaskToken)
	} else {
		c, ok, err = h.Confirm.AttachTokenTo(ctx, seen, in.TaskToken) // the record as Observe left it
	}
	if err != nil {
		return struct{}{}, taskError(fmt.Errorf("notify %s: %w", in.ConfirmationID, err))
	}
	if !ok {
		logger(h.Logger).InfoContext(ctx, "notify skipped: confirmation no longer pending", "confirmation", in.ConfirmationID, "execution", in.Execution, "status", c.Status)
		return struct{}{}, nil
	}
	ctx, sp := telemetry.StartTask(ctx, "notify", c.Trace, c.ID)
	defer sp.End("", nil)
	ev := notify.Event{Type: notify.TypeRequested, Confirmation: notify.ConfirmationOf(c)}
	base := h.PublicURL
	if h.LinkBase != nil {
		base = h.LinkBase()
	}
	linkFor := func(approver string) string {
		return h.Signer.Sign(c.ID, approver, c.ExpiresAt).URL(base)
	}
	dctx, cancel := deliveryContext(ctx, h.Budget)
	defer cancel()
	if err := h.Dispatcher.NotifyEachWait(dctx, ev, linkFor); err != nil {
		// The wait goes on: an approver may still get the link from another
		// channel, and the timeout ends it otherwise.
		logger(h.Logger).WarnContext(ctx, "some approver channels failed", "confirmation", c.ID, "error", err)
	}
	return struct{}{}, nil
}

// FinalizeInput is the finalize task's payload.
type FinalizeInput struct {
	ConfirmationID string `json:"confirmation_id"`
	Outcome        string `json:"outcome"`
}

// FinalizeOutput is the finalize task's result.
type FinalizeOutput struct {
	// Status is the stored status after finalizing: a decision already
	// stored is kept.
	Status string `json:"status"`
	// Execute is set when the gateway runs the confirmation's approved
	// operations itself (Confirmation.GatewayExecutes): an approval whose
	// SendTaskSuccess never arrived is then run by the state machine's
	// Execute state, as nobody redeems it.
	Execute bool `json:"execute,omitempty"`
}

// Finalize records how a wait ended when the workflow saw it end: expired,
// rejected or failed. A decision already stored wins over a late timer.
// The lifecycle records the change and announces an expiry
// (confirm.Service.Finalize).
type Finalize struct {
	Confirm *confirm.Service
	Logger  *slog.Logger
}

// Handle runs the finalize task.
func (h *Finalize) Handle(ctx context.Context, in FinalizeInput) (FinalizeOutput, error) {
	ctx = withRequestID(ctx)
	// With tracing on, the task continues the trace of the call that
	// paused (the record keeps its traceparent); off, nothing more is read.
	sp := telemetry.Span{}
	if telemetry.Tracing() {
		if before, err := h.Confirm.Get(ctx, in.ConfirmationID); err == nil {
			ctx, sp = telemetry.StartTask(ctx, "finalize", before.Trace, before.ID)
		}
	}
	defer sp.End("", nil)
	c, err := h.Confirm.Finalize(ctx, in.ConfirmationID, countersign.Status(in.Outcome))
	if err != nil {
		return FinalizeOutput{}, taskError(err)
	}
	return FinalizeOutput{Status: string(c.Status), Execute: c.GatewayExecutes()}, nil
}

// ExecuteInput is the execute task's payload.
type ExecuteInput struct {
	ConfirmationID string `json:"confirmation_id"`
}

// ExecuteOutput is the execute task's result.
type ExecuteOutput struct {
	Status string `json:"status"`
}

// Executor runs the approved operations of a confirmation the gateway
// executes itself, each exactly once (calls.Service).
type Executor interface {
	// Lookup returns the confirmation.
	Lookup(ctx context.Context, id string) (*countersign.Confirmation, error)
	Execute(ctx context.Context, id string) (*countersign.Confirmation, error)
}

// ScriptRunner runs a script batch's script again after approval, so that
// its approved operations run inside it, where it reaches them, each
// exactly once (code mode, shared/script). It is attached only where goja
// may be linked (the execute function and the local stack).
type ScriptRunner interface {
	Rerun(ctx context.Context, id string) (*countersign.Confirmation, error)
}

// Execute is the execute task: it runs the approved operations of a
// confirmation the gateway executes itself, each exactly once, through the
// call pipeline (calls.Service.Execute), or, for a script batch, runs the
// script again (Scripts).
type Execute struct {
	Calls Executor
	// Scripts runs script batches; without it a script batch fails the
	// task rather than running its operations outside its script.
	Scripts ScriptRunner
}

// Handle runs the execute task; a retried invocation replays stored outcomes.
func (h *Execute) Handle(ctx context.Context, in ExecuteInput) (ExecuteOutput, error) {
	ctx = withRequestID(ctx)
	c, err := h.Calls.Lookup(ctx, in.ConfirmationID)
	if err != nil {
		return ExecuteOutput{}, taskError(fmt.Errorf("execute: %w", err))
	}
	ctx, sp := telemetry.StartTask(ctx, "execute", c.Trace, c.ID)
	defer sp.End("", nil)
	if c.Kind == countersign.KindScript {
		if h.Scripts == nil {
			return ExecuteOutput{}, taskError(fmt.Errorf("execute %s: a script batch needs the script runner, which this function lacks", c.ID))
		}
		c, err = h.Scripts.Rerun(ctx, c.ID)
	} else {
		c, err = h.Calls.Execute(ctx, c.ID)
	}
	if err != nil {
		return ExecuteOutput{}, taskError(err)
	}
	return ExecuteOutput{Status: string(c.Status)}, nil
}

// TaskError is the one error type the task handlers return, so the Lambda
// errorType that Step Functions' Retry and Catch see is always "TaskError"
// (aws-lambda-go reports the Go type name; a wrapped error would be
// "wrapError"). The cause keeps the whole message.
type TaskError struct{ Err error }

func (e *TaskError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *TaskError) Unwrap() error { return e.Err }

func taskError(err error) error {
	if err == nil {
		return nil
	}
	return &TaskError{Err: err}
}

// withRequestID puts the Lambda invocation's request id on the task's log
// lines (none when run by the local engine).
func withRequestID(ctx context.Context) context.Context {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return reqlog.With(ctx, lc.AwsRequestID)
	}
	return ctx
}

func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
