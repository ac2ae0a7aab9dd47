package workflow

import (
	"context"
	"errors"
)

// Machine names a state machine file in statemachines/ (without .asl.json).
type Machine string

// The state machines.
const (
	// Confirm waits for the decision on a single call (600 s by default).
	Confirm Machine = "confirm"
	// Batch waits for the decision on a script batch (1800 s by default).
	Batch Machine = "batch"
)

// ErrTaskNotFound is returned by SendTaskSuccess and SendTaskFailure when the
// token names no waiting task (unknown, already answered, or timed out);
// Step Functions answers TaskDoesNotExist, InvalidToken or TaskTimedOut.
var ErrTaskNotFound = errors.New("workflow: task not found")

// Workflow starts executions of the state machines and answers their
// waiting tasks. Adapters: local (an ASL interpreter) and sfnflow (AWS Step
// Functions).
type Workflow interface {
	// Start begins an execution named name (unique per machine) with the
	// JSON input and returns its identifier without waiting for it.
	Start(ctx context.Context, m Machine, name string, input []byte) (string, error)
	// SendTaskSuccess completes the task waiting on token with the JSON output.
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
	// SendTaskFailure fails the task waiting on token with an error name and cause.
	SendTaskFailure(ctx context.Context, token, errorName, cause string) error
}
