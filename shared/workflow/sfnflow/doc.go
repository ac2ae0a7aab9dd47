// Package sfnflow adapts AWS Step Functions to workflow.Workflow: Start runs
// StartExecution on the state machine deployed for a workflow.Machine, and
// SendTaskSuccess and SendTaskFailure answer the task waiting on a task
// token (a Task state with the .waitForTaskToken integration).
//
// Step Functions errors are translated here, at the edge: TaskDoesNotExist,
// InvalidToken and TaskTimedOut become workflow.ErrTaskNotFound and
// ExecutionAlreadyExists becomes ErrExecutionAlreadyExists, with no service
// error (awslite.Error) left in the chain; other errors are wrapped with the operation. The local
// adapter (package local) follows the same contract on one machine.
package sfnflow
