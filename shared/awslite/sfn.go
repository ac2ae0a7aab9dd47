package awslite

import "context"

// SFN drives Step Functions: StartExecution, SendTaskSuccess and
// SendTaskFailure (the JSON 1.0 protocol). It is safe for concurrent use.
type SFN struct{ c client }

// NewSFN returns a Step Functions client.
func NewSFN(o Options) *SFN { return &SFN{c: newClient("states", o)} }

func (s *SFN) call(ctx context.Context, op string, in, out any) error {
	return s.c.jsonCall(ctx, "1.0", "AWSStepFunctions", op, in, out)
}

// StartExecutionInput starts an execution of StateMachineArn named Name
// with the JSON Input.
type StartExecutionInput struct {
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name,omitempty"`
	Input           string `json:"input,omitempty"`
}

// StartExecutionOutput names the execution started (or, for the same name
// and input, already running).
type StartExecutionOutput struct {
	ExecutionArn string `json:"executionArn"`
}

// StartExecution starts an execution. A name whose execution has another
// input or has ended is the error ExecutionAlreadyExists.
func (s *SFN) StartExecution(ctx context.Context, in *StartExecutionInput) (*StartExecutionOutput, error) {
	out := new(StartExecutionOutput)
	if err := s.call(ctx, "StartExecution", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// SendTaskSuccessInput completes the task waiting on TaskToken with the
// JSON Output.
type SendTaskSuccessInput struct {
	TaskToken string `json:"taskToken"`
	Output    string `json:"output"`
}

// SendTaskSuccess completes a task. A token nobody waits on any more is
// TaskDoesNotExist, InvalidToken or TaskTimedOut.
func (s *SFN) SendTaskSuccess(ctx context.Context, in *SendTaskSuccessInput) error {
	return s.call(ctx, "SendTaskSuccess", in, nil)
}

// SendTaskFailureInput fails the task waiting on TaskToken.
type SendTaskFailureInput struct {
	TaskToken string `json:"taskToken"`
	Error     string `json:"error,omitempty"`
	Cause     string `json:"cause,omitempty"`
}

// SendTaskFailure fails a task, with the errors of SendTaskSuccess.
func (s *SFN) SendTaskFailure(ctx context.Context, in *SendTaskFailureInput) error {
	return s.call(ctx, "SendTaskFailure", in, nil)
}
