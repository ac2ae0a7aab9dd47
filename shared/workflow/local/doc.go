// Package local is the in-process adapter of workflow.Workflow: an
// interpreter of the Amazon States Language files in statemachines/, for the
// local stack and tests, whose executions are kept in a bbolt DB (buckets
// "workflow_executions" and "workflow_tokens") and resume after a restart.
//
// It implements exactly the subset of ASL those files use, and New refuses
// anything else with an error naming the machine, the state and the field:
//
//   - top level: Comment, StartAt, States, TimeoutSeconds;
//   - states: Task, Choice, Pass, Succeed, Fail;
//   - Task resources: arn:aws:states:::lambda:invoke (the result is
//     {"ExecutedVersion":"$LATEST","Payload":<output>,"StatusCode":200}) and
//     arn:aws:states:::lambda:invoke.waitForTaskToken (the function gets a
//     fresh token through $$.Task.Token, its output is ignored, and the task
//     waits for SendTaskSuccess, SendTaskFailure or its timeout), with
//     Parameters {FunctionName, Payload}; FunctionName must name one of
//     Options.Functions after ${...} substitution;
//   - fields: Type, Comment, Next, End, Resource, Parameters, ResultSelector,
//     ResultPath (null discards), InputPath, OutputPath, TimeoutSeconds,
//     TimeoutSecondsPath, Retry (ErrorEquals, IntervalSeconds, MaxAttempts,
//     BackoffRate, MaxDelaySeconds), Catch (ErrorEquals, ResultPath, Next),
//     Choices and Default, Pass's Result, Fail's Error and Cause;
//   - Choice rules: Variable with BooleanEquals, StringEquals,
//     NumericEquals, NumericGreaterThan, NumericLessThan or IsPresent, and
//     And, Or, Not;
//   - paths: $, $.a.b, $.a[0] (ResultPath: field steps only); context paths
//     $$.Execution.Id, $$.Execution.Name, $$.Execution.Input,
//     $$.Execution.StartTime, $$.State.Name, $$.State.EnteredTime,
//     $$.StateMachine.Id and, in a waitForTaskToken task, $$.Task.Token.
//
// Errors follow Step Functions: a function's error is named as aws-lambda-go
// names it (the Go type name of the returned error or panic value; see
// ErrorNamer for test doubles); States.ALL matches every error except
// States.Runtime (the engine's own failures, such as a path that selects
// nothing, which fail the execution); States.TaskFailed matches every error
// except States.Timeout and States.Runtime. A Catch puts
// {"Error": name, "Cause": cause} at its ResultPath.
//
// Every transition is written to bbolt before it is acted on. Tasks run at
// least once: after a restart, Resume runs the current state again, re-arms
// the timers of waiting tasks (their tokens stay valid) and times out at
// once those whose deadline passed meanwhile. Timers use the time package,
// so tests drive the 10- and 30-minute timeouts with testing/synctest.
//
// Executions are named "local:<machine>:<name>"; the context object's
// $$.Execution.Id is that id and $$.StateMachine.Id is "local:<machine>".
package local
