package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/upstream"
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
	if in.ConfirmationID == "" || in.TaskToken == "" {
		return struct{}{}, taskError(errors.New("notify: confirmation_id and task_token are required"))
	}
	c, ok, err := h.Confirm.AttachToken(ctx, in.ConfirmationID, in.TaskToken)
	if err != nil {
		return struct{}{}, taskError(fmt.Errorf("notify %s: %w", in.ConfirmationID, err))
	}
	if !ok {
		logger(h.Logger).Info("notify skipped: confirmation no longer pending", "confirmation", in.ConfirmationID, "execution", in.Execution, "status", c.Status)
		return struct{}{}, nil
	}
	ev := notify.Event{Type: notify.TypeRequested, Confirmation: EventConfirmation(c)}
	linkFor := func(approver string) string {
		return h.Signer.Sign(c.ID, approver, c.ExpiresAt).URL(h.PublicURL)
	}
	dctx, cancel := deliveryContext(ctx, h.Budget)
	defer cancel()
	if err := h.Dispatcher.NotifyEachWait(dctx, ev, linkFor); err != nil {
		// The wait goes on: an approver may still get the link from another
		// channel, and the timeout ends it otherwise.
		logger(h.Logger).Warn("some approver channels failed", "confirmation", c.ID, "error", err)
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
	Status string `json:"status"`
}

// Finalize records how a wait ended when the workflow saw it end: expired,
// rejected or failed. A decision already stored wins over a late timer.
type Finalize struct {
	Confirm    *confirm.Service
	Dispatcher *notify.Dispatcher
	Logger     *slog.Logger
}

// Handle runs the finalize task.
func (h *Finalize) Handle(ctx context.Context, in FinalizeInput) (FinalizeOutput, error) {
	to := store.Status(in.Outcome)
	before, err := h.Confirm.Get(ctx, in.ConfirmationID)
	if err != nil {
		return FinalizeOutput{}, taskError(fmt.Errorf("finalize: %w", err))
	}
	c, err := h.Confirm.Finalize(ctx, in.ConfirmationID, to)
	if err != nil {
		return FinalizeOutput{}, taskError(err)
	}
	if before.Status == store.StatusPending && c.Status == store.StatusExpired {
		ev := notify.Event{Type: notify.TypeExpired, Confirmation: EventConfirmation(c), Status: string(c.Status)}
		if err := h.Dispatcher.NotifyWait(ctx, ev); err != nil {
			logger(h.Logger).Warn("expired event not delivered everywhere", "confirmation", c.ID, "error", err)
		}
	}
	return FinalizeOutput{Status: string(c.Status)}, nil
}

// ExecuteInput is the execute task's payload.
type ExecuteInput struct {
	ConfirmationID string `json:"confirmation_id"`
}

// ExecuteOutput is the execute task's result.
type ExecuteOutput struct {
	Status string `json:"status"`
}

// Execute runs the approved operations of a confirmation the gateway
// executes itself, each exactly once (see confirm.Service.ExecuteApproved).
type Execute struct {
	Confirm    *confirm.Service
	Run        confirm.Runner
	Dispatcher *notify.Dispatcher
	Logger     *slog.Logger
}

// Handle runs the execute task; a retried invocation replays stored outcomes.
func (h *Execute) Handle(ctx context.Context, in ExecuteInput) (ExecuteOutput, error) {
	before, err := h.Confirm.Get(ctx, in.ConfirmationID)
	if err != nil {
		return ExecuteOutput{}, taskError(err)
	}
	c, err := h.Confirm.ExecuteApproved(ctx, in.ConfirmationID, h.Run)
	if err != nil {
		return ExecuteOutput{}, taskError(err)
	}
	// A retried invocation replays the outcome without announcing it again.
	if c.Status != before.Status {
		ev := notify.Event{Type: notify.TypeExecuted, Confirmation: EventConfirmation(c), Status: string(c.Status)}
		if err := h.Dispatcher.NotifyWait(ctx, ev); err != nil {
			logger(h.Logger).Warn("executed event not delivered everywhere", "confirmation", c.ID, "error", err)
		}
	}
	return ExecuteOutput{Status: string(c.Status)}, nil
}

// Runner returns the confirm.Runner that calls a connection's upstream for a
// stored operation, sending its Idempotency-Key.
func Runner(cfg *policy.Config, client *upstream.Client) confirm.Runner {
	return func(ctx context.Context, op store.Operation, key string) store.Outcome {
		conn := cfg.Connections[op.Connection]
		if conn == nil {
			return store.Outcome{Error: fmt.Sprintf("connection %q is no longer configured", op.Connection)}
		}
		req := upstream.Request{
			BaseURL:        conn.BaseURL,
			Headers:        conn.Headers,
			Method:         op.Method,
			Path:           op.Path,
			Query:          confirm.QueryValues(op.Args.Query),
			IdempotencyKey: key,
		}
		if len(op.Args.Body) > 0 && string(op.Args.Body) != "null" {
			req.Body = op.Args.Body
		}
		return OutcomeOf(client.Do(ctx, req))
	}
}

// OutcomeOf turns an upstream response or error into a stored outcome.
func OutcomeOf(resp *upstream.Response, err error) store.Outcome {
	if err != nil {
		return store.Outcome{Error: err.Error()}
	}
	out := store.Outcome{Status: resp.Status, Headers: map[string]string{}}
	for k := range resp.Header {
		out.Headers[k] = resp.Header.Get(k)
	}
	if v, ok := resp.JSONBody(); ok {
		out.Body, _ = json.Marshal(v)
	} else if len(resp.Body) > 0 {
		out.Body, _ = json.Marshal(string(resp.Body))
	}
	return out
}

// EventConfirmation is the webhook view of a confirmation.
func EventConfirmation(c *store.Confirmation) notify.EventConfirmation {
	ec := notify.EventConfirmation{ID: c.ID, Kind: string(c.Kind), ExpiresAt: c.ExpiresAt, Credential: c.Credential, Reason: c.Reason}
	for _, op := range c.Operations {
		args, _ := json.Marshal(op.Args)
		eo := notify.EventOperation{Connection: op.Connection, Method: op.Method, Path: op.Path, Endpoint: op.Endpoint, Args: args}
		if op.Outcome != nil {
			eo.Outcome, _ = json.Marshal(op.Outcome)
		}
		ec.Operations = append(ec.Operations, eo)
	}
	return ec
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

func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
