package sfnflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/workflow"
)

// Limits Step Functions puts on SendTaskFailure
// (https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskFailure.html).
const (
	// MaxErrorNameLen is the longest error name sent, in bytes.
	MaxErrorNameLen = 256
	// MaxCauseLen is the longest cause sent, in bytes.
	MaxCauseLen = 32768
)

// ErrExecutionAlreadyExists is returned (wrapped) by Start when an execution
// of the same state machine and name exists with another input, or has
// already ended: Step Functions answers ExecutionAlreadyExists in both cases.
// Starting a running execution again with the same name and input is not an
// error; it returns the same execution ARN.
var ErrExecutionAlreadyExists = errors.New("sfnflow: execution already exists")

// API is the subset of *awslite.SFN a Flow uses, so tests may fake it.
type API interface {
	StartExecution(ctx context.Context, in *awslite.StartExecutionInput) (*awslite.StartExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *awslite.SendTaskSuccessInput) error
	SendTaskFailure(ctx context.Context, in *awslite.SendTaskFailureInput) error
}

var _ API = (*awslite.SFN)(nil)

// Flow runs the countersign state machines on AWS Step Functions. It is safe
// for concurrent use.
type Flow struct {
	api      API
	machines map[workflow.Machine]string
}

var _ workflow.Workflow = (*Flow)(nil)

// required are the machines every Flow must be able to start.
var required = []workflow.Machine{workflow.Confirm, workflow.Batch}

// New returns a Flow that calls api and starts the state machine ARN
// machines maps each workflow.Machine to. Every machine (workflow.Confirm
// and workflow.Batch) needs an ARN; the map is copied.
func New(api API, machines map[workflow.Machine]string) (*Flow, error) {
	if api == nil {
		return nil, errors.New("sfnflow: new: nil API")
	}
	var missing []string
	for _, m := range required {
		if strings.TrimSpace(machines[m]) == "" {
			missing = append(missing, string(m))
		}
	}
	for m, arn := range machines {
		if strings.TrimSpace(arn) == "" && !isRequired(m) {
			missing = append(missing, string(m))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("sfnflow: new: no state machine ARN for %s", strings.Join(missing, ", "))
	}
	f := &Flow{api: api, machines: make(map[workflow.Machine]string, len(machines))}
	for m, arn := range machines {
		f.machines[m] = strings.TrimSpace(arn)
	}
	return f, nil
}

func isRequired(m workflow.Machine) bool { return slices.Contains(required, m) }

// Start starts an execution of m named name with the JSON input (empty
// means {}) and returns its execution ARN. Step Functions Standard
// workflows are idempotent on name and input: starting a running execution
// again with the same input returns the same ARN. Another input, or a name
// whose execution has ended, is ErrExecutionAlreadyExists.
func (f *Flow) Start(ctx context.Context, m workflow.Machine, name string, input []byte) (string, error) {
	arn, ok := f.machines[m]
	if !ok {
		return "", fmt.Errorf("sfnflow: start %s %s: unknown state machine", m, name)
	}
	if len(input) == 0 {
		input = []byte("{}")
	}
	out, err := f.api.StartExecution(ctx, &awslite.StartExecutionInput{
		StateMachineArn: arn,
		Name:            name,
		Input:           string(input),
	})
	if err != nil {
		if e, ok := errors.AsType[*awslite.Error](err); ok && e.Code == "ExecutionAlreadyExists" {
			return "", fmt.Errorf("sfnflow: start %s %s: %w (%s)", m, name, ErrExecutionAlreadyExists, e.Message)
		}
		return "", fmt.Errorf("sfnflow: start %s %s: %w", m, name, err)
	}
	if out == nil || out.ExecutionArn == "" {
		return "", fmt.Errorf("sfnflow: start %s %s: no execution ARN in the response", m, name)
	}
	return out.ExecutionArn, nil
}

// SendTaskSuccess completes the task waiting on token with the JSON output.
// An unknown, answered or timed-out token is workflow.ErrTaskNotFound.
func (f *Flow) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	err := f.api.SendTaskSuccess(ctx, &awslite.SendTaskSuccessInput{
		TaskToken: token,
		Output:    string(output),
	})
	if err != nil {
		return taskError("send task success", err)
	}
	return nil
}

// SendTaskFailure fails the task waiting on token with errorName and cause,
// which the state machine's Retry and Catch match on. Both are truncated to
// the Step Functions limits (MaxErrorNameLen, MaxCauseLen bytes) at a UTF-8
// character boundary. An unknown, answered or timed-out token is
// workflow.ErrTaskNotFound.
func (f *Flow) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	err := f.api.SendTaskFailure(ctx, &awslite.SendTaskFailureInput{
		TaskToken: token,
		Error:     truncate(errorName, MaxErrorNameLen),
		Cause:     truncate(cause, MaxCauseLen),
	})
	if err != nil {
		return taskError("send task failure", err)
	}
	return nil
}

// taskError translates the error of a SendTask* call. The three answers
// meaning "no such waiting task" become workflow.ErrTaskNotFound without
// the service's error in the chain; anything else is wrapped.
func taskError(op string, err error) error {
	if e, ok := errors.AsType[*awslite.Error](err); ok {
		switch e.Code {
		case "TaskDoesNotExist", "InvalidToken", "TaskTimedOut":
			return fmt.Errorf("sfnflow: %s: %s: %w", op, e.Code, workflow.ErrTaskNotFound)
		}
	}
	return fmt.Errorf("sfnflow: %s: %w", op, err)
}

// truncate returns s, with invalid UTF-8 replaced by U+FFFD, cut to at most
// n bytes without splitting a character. Counting bytes keeps within a
// limit whether the service counts bytes, characters or UTF-16 units.
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
