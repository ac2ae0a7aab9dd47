package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/countersign/countersign/shared/workflow"
)

// edit returns the real confirm definition changed by fn.
func edit(tb testing.TB, fn func(def map[string]any)) []byte {
	tb.Helper()
	var def map[string]any
	if err := json.Unmarshal(realDefinitions(tb)[workflow.Confirm], &def); err != nil {
		tb.Fatal(err)
	}
	fn(def)
	b, err := json.Marshal(def)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func stateOf(def map[string]any, name string) map[string]any {
	return def["States"].(map[string]any)[name].(map[string]any)
}

func TestLoadRealDefinitions(t *testing.T) {
	defs := realDefinitions(t)
	if len(defs) != 2 {
		t.Fatalf("definitions: %d", len(defs))
	}
	e, err := New(Options{DB: openDB(t, filepath.Join(t.TempDir(), "db")), Definitions: defs,
		Substitutions: testSubs, Functions: (&fakes{}).functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, m := range []workflow.Machine{workflow.Confirm, workflow.Batch} {
		mach := e.machines[m]
		if mach == nil || mach.startAt != "Notify" || !mach.states["Notify"].wait {
			t.Errorf("%s: not parsed as expected", m)
		}
		// The documented default timeout is in each file's Comment.
		var top struct{ Comment string }
		if err := json.Unmarshal(defs[m], &top); err != nil {
			t.Fatal(err)
		}
		want := map[workflow.Machine]string{workflow.Confirm: "600", workflow.Batch: "1800"}[m]
		if !strings.Contains(top.Comment, `"timeout_seconds": `+want) {
			t.Errorf("%s: Comment does not document %s s: %q", m, want, top.Comment)
		}
	}
}

func TestLoadRefusals(t *testing.T) {
	tests := []struct {
		name string
		def  func(def map[string]any)
		subs map[string]string
		want []string // all must appear in the error
	}{
		{
			name: "unknown top-level field",
			def:  func(d map[string]any) { d["Version"] = "1.0" },
			want: []string{`machine "confirm"`, `"Version"`},
		},
		{
			name: "unknown state field",
			def:  func(d map[string]any) { stateOf(d, "Notify")["HeartbeatSeconds"] = 60 },
			want: []string{`machine "confirm"`, `state "Notify"`, `"HeartbeatSeconds"`},
		},
		{
			name: "unknown state type",
			def: func(d map[string]any) {
				d["States"].(map[string]any)["Approved"] = map[string]any{"Type": "Wait", "Seconds": 1, "End": true}
			},
			want: []string{`state "Approved"`, `"Type"`, `"Wait"`},
		},
		{
			name: "unknown resource",
			def:  func(d map[string]any) { stateOf(d, "Execute")["Resource"] = "arn:aws:states:::sqs:sendMessage" },
			want: []string{`state "Execute"`, `"Resource"`, "sqs:sendMessage"},
		},
		{
			name: "missing substitution",
			subs: map[string]string{"NotifyFunctionArn": "notify", "FinalizeFunctionArn": "finalize"},
			want: []string{`machine "confirm"`, `state "Execute"`, `"Parameters.FunctionName"`, "${ExecuteFunctionArn}"},
		},
		{
			name: "unknown function",
			subs: map[string]string{"NotifyFunctionArn": "notify", "ExecuteFunctionArn": "nope", "FinalizeFunctionArn": "finalize"},
			want: []string{`state "Execute"`, `"Parameters.FunctionName"`, `"nope"`},
		},
		{
			name: "bad JSONPath",
			def:  func(d map[string]any) { stateOf(d, "Notify")["ResultPath"] = "$.items[*]" },
			want: []string{`state "Notify"`, `"ResultPath"`, `$.items[*]`},
		},
		{
			name: "recursive descent",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Parameters"].(map[string]any)["Payload"] = map[string]any{"id.$": "$..confirmation_id"}
			},
			want: []string{`state "Execute"`, "Parameters.Payload.id.$", `$..confirmation_id`},
		},
		{
			name: "unknown context path",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Parameters"].(map[string]any)["Payload"] = map[string]any{"n.$": "$$.State.RetryCount"}
			},
			want: []string{`state "Execute"`, "$$.State.RetryCount"},
		},
		{
			name: "task token outside waitForTaskToken",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Parameters"].(map[string]any)["Payload"] = map[string]any{"t.$": "$$.Task.Token"}
			},
			want: []string{`state "Execute"`, "$$.Task.Token"},
		},
		{
			name: "intrinsic function",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Parameters"].(map[string]any)["Payload"] = map[string]any{"s.$": "States.Format('{}', $.x)"}
			},
			want: []string{`state "Execute"`, "intrinsic"},
		},
		{
			name: "unknown lambda parameter",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Parameters"].(map[string]any)["InvocationType"] = "Event"
			},
			want: []string{`state "Execute"`, "Parameters.InvocationType"},
		},
		{
			name: "Next names no state",
			def:  func(d map[string]any) { stateOf(d, "Execute")["Next"] = "Nowhere" },
			want: []string{`state "Execute"`, `"Next"`, `"Nowhere"`},
		},
		{
			name: "States.ALL not last",
			def: func(d map[string]any) {
				c := stateOf(d, "Notify")["Catch"].([]any)
				stateOf(d, "Notify")["Catch"] = []any{c[2], c[0], c[1]}
			},
			want: []string{`state "Notify"`, "Catch[0]", "States.ALL"},
		},
		{
			name: "unknown comparator",
			def: func(d map[string]any) {
				stateOf(d, "Route")["Choices"] = []any{map[string]any{"Variable": "$.a", "StringMatches": "x*", "Next": "Execute"}}
			},
			want: []string{`state "Route"`, `"StringMatches"`},
		},
		{
			name: "unknown retrier field",
			def: func(d map[string]any) {
				stateOf(d, "Execute")["Retry"].([]any)[0].(map[string]any)["JitterStrategy"] = "FULL"
			},
			want: []string{`state "Execute"`, "Retry[0]", `"JitterStrategy"`},
		},
		{
			name: "Next and End",
			def:  func(d map[string]any) { stateOf(d, "Execute")["End"] = true },
			want: []string{`state "Execute"`, `"Next"`, `"End"`},
		},
		{
			name: "both timeouts",
			def:  func(d map[string]any) { stateOf(d, "Notify")["TimeoutSeconds"] = 600 },
			want: []string{`state "Notify"`, "TimeoutSeconds"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := realDefinitions(t)[workflow.Confirm]
			if tt.def != nil {
				def = edit(t, tt.def)
			}
			subs := testSubs
			if tt.subs != nil {
				subs = tt.subs
			}
			_, err := New(Options{DB: openDB(t, filepath.Join(t.TempDir(), "db")),
				Definitions:   map[workflow.Machine][]byte{workflow.Confirm: def},
				Substitutions: subs, Functions: (&fakes{}).functions()})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestErrorName(t *testing.T) {
	type valueErr struct{ error }
	tests := []struct {
		name      string
		err       error
		wantName  string
		wantCause string
	}{
		{"pointer type", &notifyError{"smtp down"}, "notifyError", "smtp down"},
		{"errors.New", errors.New("x"), "errorString", "x"},
		{"wrapped: not unwrapped", fmt.Errorf("ctx: %w", &notifyError{"y"}), "wrapError", "ctx: y"},
		{"value type", valueErr{errors.New("v")}, "valueErr", "v"},
		{"ErrorNamer", serviceException{}, "Lambda.ServiceException", "Rate exceeded"},
		{"InvokeResponse_Error", messages.InvokeResponse_Error{Type: "Rejected", Message: "no"}, "Rejected", "no"},
		{"context", context.DeadlineExceeded, "deadlineExceededError", "context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, cause := errorName(tt.err)
			if name != tt.wantName || cause != tt.wantCause {
				t.Errorf("errorName = %q, %q; want %q, %q", name, cause, tt.wantName, tt.wantCause)
			}
		})
	}
	t.Run("panics", func(t *testing.T) {
		for _, tt := range []struct {
			fn       LambdaFunc
			wantName string
		}{
			{func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }, "string"},
			{func(context.Context, json.RawMessage) (json.RawMessage, error) { panic(&notifyError{"p"}) }, "notifyError"},
			{func(context.Context, json.RawMessage) (json.RawMessage, error) {
				var m map[string]int
				//lint:ignore SA5000 the test needs a runtime error's panic, and this is one
				m["x"] = 1
				return nil, nil
			}, "plainError"},
		} {
			_, fail := invoke(context.Background(), tt.fn, json.RawMessage(`{}`))
			if fail == nil || fail.name != tt.wantName {
				t.Errorf("panic: got %+v, want name %q", fail, tt.wantName)
			}
		}
	})
}

// TestInterpreter runs a machine using the rest of the subset: Pass with
// Result and Parameters, InputPath, OutputPath, ResultPath null, Choice
// with And/Or/Not and the comparators, Fail, and the execution timeout.
func TestInterpreter(t *testing.T) {
	const def = `{
	  "StartAt": "Init",
	  "States": {
	    "Init": {"Type": "Pass", "Result": {"n": 5, "s": "x", "list": [10, 20]}, "ResultPath": "$.data", "Next": "Shape"},
	    "Shape": {"Type": "Pass", "Parameters": {"second.$": "$.data.list[1]", "name.$": "$$.Execution.Name",
	        "state.$": "$$.State.Name", "machine.$": "$$.StateMachine.Id", "input.$": "$$.Execution.Input", "fixed": [1, {"k": "v"}]},
	      "ResultPath": "$.shaped", "Next": "Call"},
	    "Call": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "InputPath": "$.shaped",
	      "Parameters": {"FunctionName": "echo", "Payload.$": "$"}, "OutputPath": "$.Payload", "Next": "Discard"},
	    "Discard": {"Type": "Pass", "Result": "ignored", "ResultPath": null, "Next": "Route"},
	    "Route": {"Type": "Choice", "Choices": [
	        {"And": [{"Variable": "$.second", "NumericGreaterThan": 15}, {"Variable": "$.second", "NumericLessThan": 25},
	                 {"Not": {"Variable": "$.name", "StringEquals": "other"}}], "Next": "Route2"}],
	      "Default": "Bad"},
	    "Route2": {"Type": "Choice", "Choices": [
	        {"Or": [{"Variable": "$.missing", "IsPresent": true}, {"Variable": "$.second", "NumericEquals": 20}], "Next": "Wait"}]},
	    "Wait": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
	      "Parameters": {"FunctionName": "hold", "Payload": {"t.$": "$$.Task.Token"}}, "ResultPath": "$.answer", "Next": "Done"},
	    "Done": {"Type": "Succeed", "OutputPath": "$.answer"},
	    "Bad": {"Type": "Fail", "Error": "Bad", "Cause": "wrong branch"}
	  },
	  "TimeoutSeconds": 3600
	}`
	synctest.Test(t, func(t *testing.T) {
		var echoed json.RawMessage
		var token string
		funcs := map[string]LambdaFunc{
			"echo": func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { echoed = p; return p, nil },
			"hold": func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				var v struct{ T string }
				_ = json.Unmarshal(p, &v)
				token = v.T
				return nil, nil
			},
		}
		db := openDB(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		e, err := New(Options{DB: db, Definitions: map[workflow.Machine][]byte{"m": []byte(def)}, Functions: funcs})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		id, err := e.Start(ctx, "m", "run1", []byte(`{"in":1}`))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var got map[string]any
		if err := json.Unmarshal(echoed, &got); err != nil {
			t.Fatal(err)
		}
		want := `map[fixed:[1 map[k:v]] input:map[in:1] machine:local:m name:run1 second:20 state:Shape]`
		if fmt.Sprint(got) != want {
			t.Errorf("echo payload = %v, want %v", got, want)
		}
		info, _ := e.Execution(ctx, id)
		wantState(t, info, StatusRunning, "Wait")
		if token == "" || info.TaskToken != token || !info.TaskDeadline.IsZero() {
			t.Fatalf("token %q, info %+v", token, info)
		}
		if err := e.SendTaskSuccess(ctx, token, []byte(`{"ok":1}`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		info, _ = e.Execution(ctx, id)
		wantState(t, info, StatusSucceeded, "Done")
		if string(info.Output) != `{"ok":1}` {
			t.Errorf("output = %s", info.Output)
		}

		// The execution timeout fails a waiting execution.
		id2, err := e.Start(ctx, "m", "run2", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		info, _ = e.Execution(ctx, id2)
		if info.Status != StatusFailed || info.Error != "States.Timeout" || info.StopTime.Sub(info.StartTime) != time.Hour {
			t.Errorf("execution timeout: %+v", info)
		}
		if err := e.SendTaskSuccess(ctx, token, []byte(`{}`)); !errors.Is(err, workflow.ErrTaskNotFound) {
			t.Errorf("token after execution timeout: %v", err)
		}
	})
}

func TestChoiceMissingVariable(t *testing.T) {
	const def = `{"StartAt": "C", "States": {
	  "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "BooleanEquals": true, "Next": "S"}], "Default": "S"},
	  "S": {"Type": "Succeed"}}}`
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		e, err := New(Options{DB: db, Definitions: map[workflow.Machine][]byte{"m": []byte(def)}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		id, err := e.Start(context.Background(), "m", "a", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		info, _ := e.Execution(context.Background(), id)
		if info.Status != StatusFailed || info.Error != "States.Runtime" {
			t.Errorf("missing Variable: %+v, want FAILED States.Runtime as on Step Functions", info)
		}
	})
}
