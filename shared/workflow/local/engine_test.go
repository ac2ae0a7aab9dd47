package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/shared/workflow"
)

// call is one recorded function call.
type call struct {
	at      time.Time
	payload map[string]any
}

// fakes are the notify, execute and finalize functions.
type fakes struct {
	mu       sync.Mutex
	notify   []call
	execute  []call
	finalize []call
	// notifyErr, if set, decides the error of the n-th notify call (from 0).
	notifyErr func(ctx context.Context, n int) error
	// executeErr, if set, decides the error of the n-th execute call.
	executeErr func(n int) error
	// finalizeStatus, if set, is the stored status finalize returns (the
	// real task returns the record's status after finalizing).
	finalizeStatus string
}

func recordCall(mu *sync.Mutex, list *[]call, payload json.RawMessage) int {
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		panic(fmt.Sprintf("payload %s: %v", payload, err))
	}
	mu.Lock()
	defer mu.Unlock()
	*list = append(*list, call{at: time.Now(), payload: p})
	return len(*list) - 1
}

func (f *fakes) functions() map[string]LambdaFunc {
	return map[string]LambdaFunc{
		"notify": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			n := recordCall(&f.mu, &f.notify, payload)
			if f.notifyErr != nil {
				if err := f.notifyErr(ctx, n); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{"notified":true}`), nil
		},
		"execute": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			n := recordCall(&f.mu, &f.execute, payload)
			if f.executeErr != nil {
				if err := f.executeErr(n); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{"status":"done","results":[1,2]}`), nil
		},
		"finalize": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			recordCall(&f.mu, &f.finalize, payload)
			if f.finalizeStatus != "" {
				return fmt.Appendf(nil, `{"status":%q}`, f.finalizeStatus), nil
			}
			return json.RawMessage(`{"ok":true}`), nil
		},
	}
}

func (f *fakes) calls(list *[]call) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), (*list)...)
}

// token returns the token handed to the last notify call.
func (f *fakes) token(tb testing.TB) string {
	tb.Helper()
	calls := f.calls(&f.notify)
	if len(calls) == 0 {
		tb.Fatal("notify was not called")
	}
	tok, _ := calls[len(calls)-1].payload["task_token"].(string)
	if tok == "" {
		tb.Fatalf("notify payload has no task_token: %v", calls[len(calls)-1].payload)
	}
	return tok
}

func (f *fakes) outcomes() []string {
	var out []string
	for _, c := range f.calls(&f.finalize) {
		out = append(out, fmt.Sprint(c.payload["outcome"]))
	}
	return out
}

var testSubs = map[string]string{
	"NotifyFunctionArn":   "notify",
	"ExecuteFunctionArn":  "execute",
	"FinalizeFunctionArn": "finalize",
}

func realDefinitions(tb testing.TB) map[workflow.Machine][]byte {
	tb.Helper()
	defs, err := LoadDefinitions(filepath.Join("..", "..", "..", "statemachines"))
	if err != nil {
		tb.Fatal(err)
	}
	return defs
}

func openDB(tb testing.TB, path string) *bbolt.DB {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	db.NoSync = true // tests: the file lives in a temporary directory
	return db
}

func newEngine(tb testing.TB, db *bbolt.DB, f *fakes, defs map[workflow.Machine][]byte) *Engine {
	tb.Helper()
	e, err := New(Options{DB: db, Definitions: defs, Substitutions: testSubs, Functions: f.functions()})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// env is one engine on a fresh DB inside a synctest bubble.
type env struct {
	f    *fakes
	db   *bbolt.DB
	path string
	e    *Engine
}

func newEnv(t *testing.T, f *fakes) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.db")
	db := openDB(t, path)
	return &env{f: f, db: db, path: path, e: newEngine(t, db, f, realDefinitions(t))}
}

func (v *env) close(tb testing.TB) {
	tb.Helper()
	if err := v.e.Close(); err != nil {
		tb.Error(err)
	}
	if err := v.db.Close(); err != nil {
		tb.Error(err)
	}
}

func (v *env) start(tb testing.TB, m workflow.Machine, name string, timeout int) string {
	tb.Helper()
	id, err := v.e.Start(context.Background(), m, name,
		fmt.Appendf(nil, `{"confirmation_id":%q,"timeout_seconds":%d}`, name, timeout))
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func (v *env) info(tb testing.TB, id string) ExecutionInfo {
	tb.Helper()
	info, err := v.e.Execution(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

func wantState(tb testing.TB, info ExecutionInfo, status Status, state string) {
	tb.Helper()
	if info.Status != status || info.State != state {
		tb.Fatalf("execution %s: status %s in state %q (error %q, cause %q), want %s in %q",
			info.ID, info.Status, info.State, info.Error, info.Cause, status, state)
	}
}

func decode(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func TestConfirm(t *testing.T) {
	tests := []struct {
		name        string
		answer      func(e *Engine, token string) error
		wantStatus  Status
		wantState   string
		wantExecute int
		wantOutcome []string
		check       func(t *testing.T, out map[string]any)
	}{
		{
			name: "approved without execute",
			answer: func(e *Engine, token string) error {
				return e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":false}`))
			},
			wantStatus: StatusSucceeded, wantState: "Approved",
			check: func(t *testing.T, out map[string]any) {
				d, _ := out["decision"].(map[string]any)
				if d["approved"] != true || d["execute"] != false {
					t.Errorf("output decision = %v", out["decision"])
				}
			},
		},
		{
			name: "approved with execute",
			answer: func(e *Engine, token string) error {
				return e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":true}`))
			},
			wantStatus: StatusSucceeded, wantState: "Executed", wantExecute: 1,
			check: func(t *testing.T, out map[string]any) {
				ex, _ := out["execution"].(map[string]any)
				if len(ex) != 1 || ex["status"] != "done" {
					t.Errorf("output execution = %v, want the ResultSelector's {status: done}", out["execution"])
				}
			},
		},
		{
			name: "approved without the execute field",
			answer: func(e *Engine, token string) error {
				return e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true}`))
			},
			wantStatus: StatusSucceeded, wantState: "Approved",
		},
		{
			name: "rejected",
			answer: func(e *Engine, token string) error {
				return e.SendTaskFailure(context.Background(), token, "Rejected", "rejected by ana@example.com")
			},
			wantStatus: StatusSucceeded, wantState: "Rejected", wantOutcome: []string{"rejected"},
			check: func(t *testing.T, out map[string]any) {
				e, _ := out["error"].(map[string]any)
				if e["Error"] != "Rejected" || e["Cause"] != "rejected by ana@example.com" {
					t.Errorf("output error = %v", out["error"])
				}
				if out["confirmation_id"] != "cf_1" {
					t.Errorf("output lost the input: %v", out)
				}
			},
		},
		{
			name: "approved with execute, written with the decision",
			answer: func(e *Engine, token string) error {
				return answerAlong(e, token, []byte(`{"approved":true,"execute":true}`), "", "")
			},
			wantStatus: StatusSucceeded, wantState: "Executed", wantExecute: 1,
		},
		{
			name: "rejected, written with the decision",
			answer: func(e *Engine, token string) error {
				return answerAlong(e, token, nil, "Rejected", "rejected by ana@example.com")
			},
			wantStatus: StatusSucceeded, wantState: "Rejected", wantOutcome: []string{"rejected"},
		},
		{
			name: "failure with another name",
			answer: func(e *Engine, token string) error {
				return e.SendTaskFailure(context.Background(), token, "StoreUnavailable", "dynamodb down")
			},
			wantStatus: StatusFailed, wantState: "ConfirmationFailed", wantOutcome: []string{"failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakes{}
				v := newEnv(t, f)
				defer v.close(t)
				id := v.start(t, workflow.Confirm, "cf_1", 600)
				if id != "local:confirm:cf_1" {
					t.Fatalf("id = %q", id)
				}
				synctest.Wait()
				wantState(t, v.info(t, id), StatusRunning, "Notify")
				n := f.calls(&f.notify)
				if len(n) != 1 || n[0].payload["confirmation_id"] != "cf_1" || n[0].payload["execution"] != id {
					t.Fatalf("notify calls = %v", n)
				}
				token := f.token(t)
				if info := v.info(t, id); info.TaskToken != token {
					t.Fatalf("TaskToken = %q, notify got %q", info.TaskToken, token)
				}
				if err := tt.answer(v.e, token); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				info := v.info(t, id)
				wantState(t, info, tt.wantStatus, tt.wantState)
				if got := len(f.calls(&f.execute)); got != tt.wantExecute {
					t.Errorf("execute called %d times, want %d", got, tt.wantExecute)
				}
				if got := f.outcomes(); fmt.Sprint(got) != fmt.Sprint(tt.wantOutcome) {
					t.Errorf("finalize outcomes = %v, want %v", got, tt.wantOutcome)
				}
				if tt.check != nil {
					tt.check(t, decode(t, info.Output))
				}
				// The token is spent.
				err := v.e.SendTaskSuccess(context.Background(), token, []byte(`{}`))
				if !errors.Is(err, workflow.ErrTaskNotFound) {
					t.Errorf("second answer: err = %v, want ErrTaskNotFound", err)
				}
			})
		})
	}
}

func TestFailedExecutionError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{notifyErr: func(context.Context, int) error { return &notifyError{"smtp down"} }}
		v := newEnv(t, f)
		defer v.close(t)
		id := v.start(t, workflow.Confirm, "cf_fail", 600)
		synctest.Wait()
		info := v.info(t, id)
		wantState(t, info, StatusFailed, "ConfirmationFailed")
		if info.Error != "ConfirmationFailed" {
			t.Errorf("Error = %q", info.Error)
		}
		if got := f.outcomes(); fmt.Sprint(got) != "[failed]" {
			t.Errorf("finalize outcomes = %v", got)
		}
		// The Catch put the function's error at $.error for the Failed task.
		if n := len(f.calls(&f.notify)); n != 1 {
			t.Errorf("notify called %d times: a notifyError is not retried", n)
		}
		err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{}`))
		if !errors.Is(err, workflow.ErrTaskNotFound) {
			t.Errorf("answer after failure: err = %v, want ErrTaskNotFound", err)
		}
	})
}

type notifyError struct{ msg string }

func (e *notifyError) Error() string { return e.msg }

func TestTimeout(t *testing.T) {
	for _, tt := range []struct {
		machine workflow.Machine
		seconds int
	}{
		{workflow.Confirm, 600},
		{workflow.Batch, 1800},
	} {
		t.Run(string(tt.machine), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakes{}
				v := newEnv(t, f)
				defer v.close(t)
				start := time.Now()
				id := v.start(t, tt.machine, "cf_t", tt.seconds)
				synctest.Wait()
				token := f.token(t)
				if d := v.info(t, id).TaskDeadline.Sub(start); d != time.Duration(tt.seconds)*time.Second {
					t.Errorf("TaskDeadline - start = %v", d)
				}

				time.Sleep(time.Duration(tt.seconds-1) * time.Second)
				synctest.Wait()
				wantState(t, v.info(t, id), StatusRunning, "Notify")
				if got := f.outcomes(); len(got) != 0 {
					t.Fatalf("finalize called before the timeout: %v", got)
				}

				time.Sleep(time.Second)
				synctest.Wait()
				info := v.info(t, id)
				wantState(t, info, StatusSucceeded, "Expired")
				fin := f.calls(&f.finalize)
				if len(fin) != 1 || fin[0].payload["outcome"] != "expired" || fin[0].payload["confirmation_id"] != "cf_t" {
					t.Fatalf("finalize calls = %v", fin)
				}
				if d := fin[0].at.Sub(start); d != time.Duration(tt.seconds)*time.Second {
					t.Errorf("expired after %v, want %ds", d, tt.seconds)
				}
				out := decode(t, info.Output)
				if e, _ := out["error"].(map[string]any); e["Error"] != "States.Timeout" {
					t.Errorf("output error = %v", out["error"])
				}
				err := v.e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true}`))
				if !errors.Is(err, workflow.ErrTaskNotFound) {
					t.Errorf("late answer: err = %v, want ErrTaskNotFound", err)
				}
			})
		})
	}
}

// TestTimeoutAfterLostDecision: approve stores the decision before it calls
// SendTaskSuccess or SendTaskFailure, and that call can fail; the wait then
// times out on a decided record, which finalize keeps and reports. The
// workflow follows the stored decision instead of calling it expired.
func TestTimeoutAfterLostDecision(t *testing.T) {
	for _, tt := range []struct {
		machine     workflow.Machine
		stored      string
		wantState   string
		wantExecute int
	}{
		{workflow.Confirm, "approved", "Approved", 0},
		{workflow.Confirm, "executed", "Approved", 0},
		{workflow.Confirm, "rejected", "Rejected", 0},
		{workflow.Confirm, "expired", "Expired", 0},
		{workflow.Batch, "approved", "Executed", 1},
		{workflow.Batch, "partially_executed", "Executed", 1},
		{workflow.Batch, "rejected", "Rejected", 0},
		{workflow.Batch, "expired", "Expired", 0},
	} {
		t.Run(string(tt.machine)+"/"+tt.stored, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakes{finalizeStatus: tt.stored}
				v := newEnv(t, f)
				defer v.close(t)
				id := v.start(t, tt.machine, "cf_lost", 60)
				synctest.Wait()
				time.Sleep(60 * time.Second)
				synctest.Wait()
				wantState(t, v.info(t, id), StatusSucceeded, tt.wantState)
				if got := f.outcomes(); len(got) != 1 || got[0] != "expired" {
					t.Errorf("finalize outcomes = %v, want [expired]", got)
				}
				if n := len(f.calls(&f.execute)); n != tt.wantExecute {
					t.Errorf("execute called %d times, want %d", n, tt.wantExecute)
				}
			})
		})
	}
}

func TestAnswerJustBeforeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		id := v.start(t, workflow.Confirm, "cf_late", 600)
		synctest.Wait()
		time.Sleep(599*time.Second + 999*time.Millisecond)
		if err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{"approved":true,"execute":false}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		wantState(t, v.info(t, id), StatusSucceeded, "Approved")
		if got := f.outcomes(); len(got) != 0 {
			t.Errorf("finalize outcomes = %v, want none", got)
		}
	})
}

// serviceException stands in for the Lambda service's transient error,
// whose name no Go type can have.
type serviceException struct{}

func (serviceException) Error() string     { return "Rate exceeded" }
func (serviceException) ErrorName() string { return "Lambda.ServiceException" }

func TestRetry(t *testing.T) {
	t.Run("notify recovers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{notifyErr: func(_ context.Context, n int) error {
				if n < 2 {
					return serviceException{}
				}
				return nil
			}}
			v := newEnv(t, f)
			defer v.close(t)
			start := time.Now()
			id := v.start(t, workflow.Confirm, "cf_r", 600)
			time.Sleep(time.Minute)
			synctest.Wait()
			calls := f.calls(&f.notify)
			if len(calls) != 3 {
				t.Fatalf("notify called %d times, want 3", len(calls))
			}
			// IntervalSeconds 1, BackoffRate 2: after 1 s, then 2 s more.
			for i, want := range []time.Duration{0, time.Second, 3 * time.Second} {
				if got := calls[i].at.Sub(start); got != want {
					t.Errorf("notify call %d at %v, want %v", i, got, want)
				}
			}
			// Each attempt has its own token; only the last one is live.
			first, _ := calls[0].payload["task_token"].(string)
			if err := v.e.SendTaskSuccess(context.Background(), first, []byte(`{}`)); !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("first attempt's token: err = %v, want ErrTaskNotFound", err)
			}
			if err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{"approved":true,"execute":false}`)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			wantState(t, v.info(t, id), StatusSucceeded, "Approved")
		})
	})
	t.Run("notify exhausts retries", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{notifyErr: func(context.Context, int) error { return serviceException{} }}
			v := newEnv(t, f)
			defer v.close(t)
			id := v.start(t, workflow.Confirm, "cf_r", 600)
			time.Sleep(time.Minute)
			synctest.Wait()
			if n := len(f.calls(&f.notify)); n != 4 {
				t.Errorf("notify called %d times, want 1 + MaxAttempts 3", n)
			}
			info := v.info(t, id)
			wantState(t, info, StatusFailed, "ConfirmationFailed")
			if got := f.outcomes(); fmt.Sprint(got) != "[failed]" {
				t.Errorf("finalize outcomes = %v", got)
			}
		})
	})
	t.Run("execute recovers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{executeErr: func(n int) error {
				if n == 0 {
					return serviceException{}
				}
				return nil
			}}
			v := newEnv(t, f)
			defer v.close(t)
			id := v.start(t, workflow.Confirm, "cf_x", 600)
			synctest.Wait()
			if err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{"approved":true,"execute":true}`)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			wantState(t, v.info(t, id), StatusSucceeded, "Executed")
			if n := len(f.calls(&f.execute)); n != 2 {
				t.Errorf("execute called %d times, want 2", n)
			}
		})
	})
	t.Run("execute fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{executeErr: func(int) error { return errors.New("upstream 500") }}
			v := newEnv(t, f)
			defer v.close(t)
			id := v.start(t, workflow.Confirm, "cf_x", 600)
			synctest.Wait()
			if err := v.e.SendTaskSuccess(context.Background(), f.token(t), []byte(`{"approved":true,"execute":true}`)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			wantState(t, v.info(t, id), StatusFailed, "ConfirmationFailed")
			if n := len(f.calls(&f.execute)); n != 1 {
				t.Errorf("execute called %d times, want 1 (errorString is not retried)", n)
			}
			fin := f.calls(&f.finalize)
			if len(fin) != 1 || fin[0].payload["outcome"] != "failed" {
				t.Errorf("finalize calls = %v", fin)
			}
		})
	})
}

func TestPanicInFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{notifyErr: func(context.Context, int) error { panic("boom") }}
		v := newEnv(t, f)
		defer v.close(t)
		id := v.start(t, workflow.Confirm, "cf_p", 600)
		synctest.Wait()
		wantState(t, v.info(t, id), StatusFailed, "ConfirmationFailed")
		if got := f.outcomes(); fmt.Sprint(got) != "[failed]" {
			t.Errorf("finalize outcomes = %v", got)
		}
	})
}

func TestUnknownToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := newEnv(t, &fakes{})
		defer v.close(t)
		for _, tok := range []string{"", "no-such-token"} {
			if err := v.e.SendTaskSuccess(context.Background(), tok, []byte(`{}`)); !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("SendTaskSuccess(%q): err = %v, want ErrTaskNotFound", tok, err)
			}
			if err := v.e.SendTaskFailure(context.Background(), tok, "Rejected", ""); !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("SendTaskFailure(%q): err = %v, want ErrTaskNotFound", tok, err)
			}
		}
	})
}

func TestConcurrentAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		const executions, senders = 10, 8
		for i := range executions {
			name := fmt.Sprintf("cf_%d", i)
			id := v.start(t, workflow.Confirm, name, 600)
			synctest.Wait()
			token := f.token(t)
			var wg sync.WaitGroup
			errs := make([]error, senders)
			for s := range senders {
				wg.Go(func() {
					if s%2 == 0 {
						errs[s] = v.e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":false}`))
					} else {
						errs[s] = v.e.SendTaskFailure(context.Background(), token, "Rejected", "no")
					}
				})
			}
			wg.Wait()
			synctest.Wait()
			winner := -1
			for s, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("%s: senders %d and %d both won", name, winner, s)
					}
					winner = s
				case !errors.Is(err, workflow.ErrTaskNotFound):
					t.Fatalf("%s: sender %d: %v", name, s, err)
				}
			}
			if winner < 0 {
				t.Fatalf("%s: no sender won", name)
			}
			info := v.info(t, id)
			if winner%2 == 0 {
				wantState(t, info, StatusSucceeded, "Approved")
			} else {
				wantState(t, info, StatusSucceeded, "Rejected")
			}
		}
		if n := len(f.calls(&f.finalize)); n > executions {
			t.Errorf("finalize called %d times for %d executions", n, executions)
		}
	})
}

func TestStartIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		ctx := context.Background()
		input := []byte(`{"confirmation_id": "cf_1", "timeout_seconds": 600}`)
		id1, err := v.e.Start(ctx, workflow.Confirm, "cf_1", input)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		id2, err := v.e.Start(ctx, workflow.Confirm, "cf_1", []byte(`{"confirmation_id":"cf_1","timeout_seconds":600}`))
		if err != nil || id2 != id1 {
			t.Fatalf("same input: id %q err %v, want %q", id2, err, id1)
		}
		synctest.Wait()
		if n := len(f.calls(&f.notify)); n != 1 {
			t.Errorf("notify called %d times, want 1", n)
		}
		_, err = v.e.Start(ctx, workflow.Confirm, "cf_1", []byte(`{"confirmation_id":"cf_1","timeout_seconds":60}`))
		if !errors.Is(err, ErrExecutionAlreadyExists) {
			t.Errorf("other input: err = %v, want ErrExecutionAlreadyExists", err)
		}
		// The same name on the other machine is another execution.
		if id, err := v.e.Start(ctx, workflow.Batch, "cf_1", input); err != nil || id != "local:batch:cf_1" {
			t.Errorf("batch: id %q err %v", id, err)
		}
		// Once ended, the name cannot be reused, as on Step Functions.
		synctest.Wait()
		if err := v.e.SendTaskSuccess(ctx, v.info(t, id1).TaskToken, []byte(`{"approved":true}`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := v.e.Start(ctx, workflow.Confirm, "cf_1", input); !errors.Is(err, ErrExecutionAlreadyExists) {
			t.Errorf("ended execution: err = %v, want ErrExecutionAlreadyExists", err)
		}
		for _, bad := range []struct{ name, input string }{
			{"", `{}`}, {"has space", `{}`}, {"a:b", `{}`}, {"ok", `{not json`},
		} {
			if _, err := v.e.Start(ctx, workflow.Confirm, bad.name, []byte(bad.input)); err == nil {
				t.Errorf("Start(%q, %s) succeeded", bad.name, bad.input)
			}
		}
		if _, err := v.e.Start(ctx, "nope", "x", nil); err == nil {
			t.Error("Start on an unknown machine succeeded")
		}
	})
}

func TestRestart(t *testing.T) {
	t.Run("token survives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{}
			v := newEnv(t, f)
			id := v.start(t, workflow.Confirm, "cf_restart", 600)
			synctest.Wait()
			token := f.token(t)
			v.close(t)

			time.Sleep(5 * time.Minute) // stopped for a while, not past the deadline
			db := openDB(t, v.path)
			defer db.Close()
			e := newEngine(t, db, f, realDefinitions(t))
			defer e.Close()
			if err := e.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if n := len(f.calls(&f.notify)); n != 1 {
				t.Errorf("notify called %d times, want 1 (it had returned)", n)
			}
			if err := e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":true}`)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			info, err := e.Execution(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			wantState(t, info, StatusSucceeded, "Executed")
		})
	})
	t.Run("timer re-armed for the remaining time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{}
			v := newEnv(t, f)
			start := time.Now()
			id := v.start(t, workflow.Confirm, "cf_restart", 600)
			synctest.Wait()
			v.close(t)

			time.Sleep(100 * time.Second)
			db := openDB(t, v.path)
			defer db.Close()
			e := newEngine(t, db, f, realDefinitions(t))
			defer e.Close()
			if err := e.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Hour)
			synctest.Wait()
			fin := f.calls(&f.finalize)
			if len(fin) != 1 || fin[0].payload["outcome"] != "expired" {
				t.Fatalf("finalize calls = %v", fin)
			}
			if d := fin[0].at.Sub(start); d != 600*time.Second {
				t.Errorf("expired after %v, want 600s", d)
			}
			info, _ := e.Execution(context.Background(), id)
			wantState(t, info, StatusSucceeded, "Expired")
		})
	})
	t.Run("deadline passed while stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{}
			v := newEnv(t, f)
			id := v.start(t, workflow.Confirm, "cf_restart", 600)
			synctest.Wait()
			token := f.token(t)
			v.close(t)

			time.Sleep(700 * time.Second)
			db := openDB(t, v.path)
			defer db.Close()
			e := newEngine(t, db, f, realDefinitions(t))
			defer e.Close()
			resumed := time.Now()
			if err := e.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			fin := f.calls(&f.finalize)
			if len(fin) != 1 || fin[0].payload["outcome"] != "expired" || !fin[0].at.Equal(resumed) {
				t.Fatalf("finalize calls = %v, want expired at resume (%v)", fin, resumed)
			}
			info, _ := e.Execution(context.Background(), id)
			wantState(t, info, StatusSucceeded, "Expired")
			if err := e.SendTaskSuccess(context.Background(), token, []byte(`{}`)); !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("answer after expiry: err = %v, want ErrTaskNotFound", err)
			}
		})
	})
	t.Run("answer after the deadline before resume", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{}
			v := newEnv(t, f)
			id := v.start(t, workflow.Confirm, "cf_restart", 600)
			synctest.Wait()
			token := f.token(t)
			v.close(t)

			time.Sleep(700 * time.Second)
			db := openDB(t, v.path)
			defer db.Close()
			e := newEngine(t, db, f, realDefinitions(t))
			defer e.Close()
			// Not resumed yet: the store, not the timer, says it is late.
			if err := e.SendTaskSuccess(context.Background(), token, []byte(`{}`)); !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("late answer: err = %v, want ErrTaskNotFound", err)
			}
			synctest.Wait()
			info, _ := e.Execution(context.Background(), id)
			wantState(t, info, StatusSucceeded, "Expired")
		})
	})
	t.Run("notify interrupted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakes{notifyErr: func(ctx context.Context, n int) error {
				if n == 0 { // the first call hangs until the engine closes
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}}
			v := newEnv(t, f)
			id := v.start(t, workflow.Confirm, "cf_restart", 600)
			synctest.Wait()
			first := f.token(t)
			v.close(t)

			db := openDB(t, v.path)
			defer db.Close()
			e := newEngine(t, db, f, realDefinitions(t))
			defer e.Close()
			if err := e.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			calls := f.calls(&f.notify)
			if len(calls) != 2 || calls[1].payload["task_token"] != first {
				t.Fatalf("notify calls = %v, want a second call with the same token", calls)
			}
			if err := e.SendTaskFailure(context.Background(), first, "Rejected", ""); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			info, _ := e.Execution(context.Background(), id)
			wantState(t, info, StatusSucceeded, "Rejected")
		})
	})
}

func TestClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := newEnv(t, &fakes{})
		v.close(t)
		if _, err := v.e.Start(context.Background(), workflow.Confirm, "x", nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Start after Close: err = %v", err)
		}
		if err := v.e.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestAnswersRaceTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		id := v.start(t, workflow.Confirm, "cf_race", 600)
		synctest.Wait()
		token := f.token(t)
		if err := v.e.SendTaskSuccess(context.Background(), token, []byte(`{not json`)); err == nil || errors.Is(err, workflow.ErrTaskNotFound) {
			t.Errorf("invalid output: err = %v, want an invalid output error", err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for s := range errs {
			wg.Go(func() {
				time.Sleep(600 * time.Second) // wakes together with the timeout
				if s%2 == 0 {
					errs[s] = v.e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true}`))
				} else {
					errs[s] = v.e.SendTaskFailure(context.Background(), token, "Rejected", "")
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		for s, err := range errs {
			if !errors.Is(err, workflow.ErrTaskNotFound) {
				t.Errorf("sender %d at the deadline: err = %v, want ErrTaskNotFound", s, err)
			}
		}
		wantState(t, v.info(t, id), StatusSucceeded, "Expired")
		if got := f.outcomes(); fmt.Sprint(got) != "[expired]" {
			t.Errorf("finalize outcomes = %v, want one expired", got)
		}
	})
}

// TestCommitsPerExecution: transitions that are not waits share the commit
// of the change that led to them, and notify returning is not written. A
// confirmation approved for the agent to redeem takes two commits (started
// and waiting in Notify with its token; the answer with Route and
// Approved), one answered with execute three (the Execute task's result
// ends it), and an expiry three (the timeout; Expire's result with
// AfterExpire and Expired).
func TestCommitsPerExecution(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(e *Engine, token string) error
		wantState string
		want      int
	}{
		{"approved", func(e *Engine, token string) error {
			return e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":false}`))
		}, "Approved", 2},
		{"approved with execute", func(e *Engine, token string) error {
			return e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true,"execute":true}`))
		}, "Executed", 3},
		{"expired", nil, "Expired", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakes{}
				path := filepath.Join(t.TempDir(), "countersign.db")
				db := openDB(t, path)
				defer db.Close()
				var mu sync.Mutex
				commits := 0
				e, err := New(Options{DB: db, Definitions: realDefinitions(t), Substitutions: testSubs, Functions: f.functions(),
					Update: func(fn func(*bbolt.Tx) error) error {
						err := db.Update(fn)
						if err == nil {
							mu.Lock()
							commits++
							mu.Unlock()
						}
						return err
					}})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				id, err := e.Start(context.Background(), workflow.Confirm, "cf_1", []byte(`{"confirmation_id":"cf_1","timeout_seconds":600}`))
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if tt.answer != nil {
					if err := tt.answer(e, f.token(t)); err != nil {
						t.Fatal(err)
					}
				} else {
					time.Sleep(601 * time.Second)
				}
				synctest.Wait()
				info, err := e.Execution(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				wantState(t, info, StatusSucceeded, tt.wantState)
				mu.Lock()
				defer mu.Unlock()
				if commits != tt.want {
					t.Errorf("%d commits, want %d", commits, tt.want)
				}
			})
		})
	}
}

// TestNotifiedAfterACrash: that notify returned is kept in memory, written
// by Close (a clean restart does not call it again: TestRestart) or with
// the execution's next write; after a crash, Resume calls it again with the
// same token, as a retried Lambda invocation would.
func TestNotifiedAfterACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		id := v.start(t, workflow.Confirm, "cf_crash", 600)
		synctest.Wait()
		token := f.token(t)
		// The crash: the file as it is now, before Close writes anything.
		crashed := filepath.Join(t.TempDir(), "crashed.db")
		if err := v.db.View(func(tx *bbolt.Tx) error { return tx.CopyFile(crashed, 0o600) }); err != nil {
			t.Fatal(err)
		}
		v.close(t)

		db := openDB(t, crashed)
		defer db.Close()
		e := newEngine(t, db, f, realDefinitions(t))
		defer e.Close()
		if err := e.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		calls := f.calls(&f.notify)
		if len(calls) != 2 || calls[1].payload["task_token"] != token {
			t.Fatalf("notify calls after the crash = %v, want a second call with the same token", calls)
		}
		if err := e.SendTaskSuccess(context.Background(), token, []byte(`{"approved":true}`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		info, err := e.Execution(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, info, StatusSucceeded, "Approved")
	})
}

// TestAnsweredBeforeNotifyReturns: an approver who answers before the
// notify function has returned (the link went out first) leaves nothing
// behind in memory.
func TestAnsweredBeforeNotifyReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakes{}
		v := newEnv(t, f)
		defer v.close(t)
		f.notifyErr = func(ctx context.Context, n int) error {
			return v.e.SendTaskSuccess(ctx, f.token(t), []byte(`{"approved":true}`))
		}
		id := v.start(t, workflow.Confirm, "cf_quick", 600)
		synctest.Wait()
		wantState(t, v.info(t, id), StatusSucceeded, "Approved")
		v.e.mu.Lock()
		defer v.e.mu.Unlock()
		if len(v.e.notified) != 0 {
			t.Errorf("notified marks left: %v", v.e.notified)
		}
	})
}
