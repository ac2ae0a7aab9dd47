package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// ErrExecutionAlreadyExists is returned by Start when an execution of the
// same machine and name exists with another input, or has already ended
// (Step Functions answers ExecutionAlreadyExists in both cases).
var ErrExecutionAlreadyExists = errors.New("local: execution already exists")

// ErrExecutionNotFound is returned by Execution for an unknown id.
var ErrExecutionNotFound = errors.New("local: execution not found")

// ErrClosed is returned by the Engine's methods after Close.
var ErrClosed = errors.New("local: engine closed")

// ErrorNamer is an optional interface for errors returned by a LambdaFunc
// that need an error name no Go type can have, such as
// "Lambda.ServiceException" (which Step Functions, not the function,
// reports on AWS). It exists for test doubles of the Lambda service; real
// functions should rely on their Go type name, as they do on AWS.
type ErrorNamer interface {
	ErrorName() string
}

// taskError is a task failure as Step Functions sees it.
type taskError struct {
	name  string
	cause string
}

func (t *taskError) Error() string { return t.name + ": " + t.cause }

// errorName is the name Step Functions reports for an error returned by a
// Lambda function written with aws-lambda-go, and errorCause its cause:
//
//   - an ErrorNamer (checked on the error itself, not its chain) gives its
//     ErrorName(), and the cause is Error();
//   - a messages.InvokeResponse_Error value gives its Type, and the cause is
//     its Message (aws-lambda-go passes such a value through unchanged);
//   - otherwise the name is the Go type name of the error value itself
//     (reflect.TypeOf(err); for a pointer, the name of the pointed-to type):
//     a *confirm.Error reports "Error", errors.New "errorString", and an
//     error wrapped with fmt.Errorf("...: %w", err) "wrapError". The chain
//     is not unwrapped, exactly as aws-lambda-go does; and the cause is
//     Error().
func errorName(err error) (name, cause string) {
	if n, ok := err.(ErrorNamer); ok {
		return n.ErrorName(), err.Error()
	}
	if ive, ok := err.(messages.InvokeResponse_Error); ok {
		return ive.Type, ive.Message
	}
	return typeName(err), err.Error()
}

// panicName is the name and cause for a value recovered from a panic in a
// function: aws-lambda-go reports the type name of the panic value (so
// panic("boom") reports "string") and its %v formatting as the message.
func panicName(v any) (name, cause string) {
	if n, ok := v.(ErrorNamer); ok {
		return n.ErrorName(), fmt.Sprintf("%v", v)
	}
	if ive, ok := v.(messages.InvokeResponse_Error); ok {
		return ive.Type, ive.Message
	}
	return typeName(v), fmt.Sprintf("%v", v)
}

// typeName is aws-lambda-go's rule: the type's name, or for a pointer the
// name of its element type.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// invoke calls fn with payload the way Lambda would, turning a returned
// error or a panic into a task failure.
func invoke(ctx context.Context, fn LambdaFunc, payload json.RawMessage) (out json.RawMessage, fail *taskError) {
	defer func() {
		if v := recover(); v != nil {
			name, cause := panicName(v)
			out, fail = nil, &taskError{name: name, cause: cause}
		}
	}()
	out, err := fn(ctx, payload)
	if err != nil {
		name, cause := errorName(err)
		return nil, &taskError{name: name, cause: cause}
	}
	if len(out) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(out) {
		return nil, &taskError{name: errTaskFailed, cause: "the function returned invalid JSON"}
	}
	return out, nil
}
