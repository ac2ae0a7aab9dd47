package calls_test

import (
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// collect asks the pipeline for the bound operation of a call, as the MCP
// surface does before it asks the person in the client.
func collect(tb testing.TB, e *env, cred *countersign.Credential, c *calls.Call) countersign.Operation {
	tb.Helper()
	cp := *c
	res, err := e.svc.Do(e.ctx, cred, &cp, calls.Options{Pause: calls.PauseCollect})
	if err != nil || res.Outcome != calls.Collected {
		tb.Fatalf("collect: %+v, %v", res, err)
	}
	return res.Operation
}

func TestGrant(t *testing.T) {
	del := func() *calls.Call {
		return &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite}
	}
	tests := []struct {
		name    string
		call    func() *calls.Call // the retried call; del() unless set
		cred    string
		approve bool
		expires time.Duration
		use     int // how many times the same answer is used
		code    fault.Code
		ran     int
	}{
		{name: "approved runs once", approve: true, use: 1, ran: 1},
		{name: "approved and retried runs once", approve: true, use: 3, code: fault.ConfirmationUsed, ran: 1},
		{name: "declined runs nothing", approve: false, use: 1, code: fault.ConfirmationRejected},
		{name: "declined then reused runs nothing", approve: false, use: 2, code: fault.ConfirmationUsed},
		{name: "another call", approve: true, use: 1, code: fault.ConfirmationMismatch,
			call: func() *calls.Call { c := del(); c.Path = "/contacts/13"; return c }},
		{name: "another credential", approve: true, use: 1, cred: "runner", code: fault.ConfirmationMismatch},
		{name: "expired", approve: true, use: 1, expires: -time.Second, code: fault.ConfirmationExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			asker := e.creds["chat-user"]
			op := collect(t, e, asker, del())
			expires := tt.expires
			if expires == 0 {
				expires = 10 * time.Minute
			}
			g := &calls.Grant{ID: confirm.NewID(), Binding: op.Binding, Approve: tt.approve, By: "client:test", ExpiresAt: e.clock.Now().Add(expires)}
			cred := asker
			if tt.cred != "" {
				cred = e.creds[tt.cred]
			}
			var last fault.Code
			for i := 0; i < tt.use; i++ {
				c := del()
				if tt.call != nil {
					c = tt.call()
				}
				res, err := e.svc.Do(e.ctx, cred, c, calls.Options{Grant: g})
				switch {
				case err != nil:
					last = fault.CodeOf(err)
				case res.Outcome == calls.Denied:
					last = res.Code
				case res.Outcome == calls.Executed:
					last = ""
					if res.Confirmation == nil || res.Confirmation.ID != g.ID || res.Confirmation.Status != countersign.StatusExecuted {
						t.Errorf("executed with confirmation %+v, want %s executed", res.Confirmation, g.ID)
					}
				default:
					t.Fatalf("outcome %v", res.Outcome)
				}
			}
			if last != tt.code {
				t.Errorf("last answer %q, want %q", last, tt.code)
			}
			got := e.up.seen()
			if len(got) != tt.ran {
				t.Fatalf("the upstream was called %d times, want %d", len(got), tt.ran)
			}
			if tt.ran == 1 && got[0].Key != g.ID+":0" {
				t.Errorf("Idempotency-Key %q, want %s:0", got[0].Key, g.ID)
			}
		})
	}
}

// TestGrantConcurrentUses: many uses of the same answer at once call the
// upstream once; every other use is confirmation_used.
func TestGrantConcurrentUses(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["chat-user"]
	c := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite}
	op := collect(t, e, cred, c)
	g := &calls.Grant{ID: confirm.NewID(), Binding: op.Binding, Approve: true, By: "client:test", ExpiresAt: e.clock.Now().Add(time.Minute)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[fault.Code]int{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp := *c
			res, err := e.svc.Do(e.ctx, cred, &cp, calls.Options{Grant: g})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes[fault.CodeOf(err)]++
				return
			}
			codes[fault.Code(res.Outcome.String())]++
		}()
	}
	wg.Wait()
	if codes["executed"] != 1 || codes[fault.ConfirmationUsed] != 19 {
		t.Errorf("answers %v, want 1 executed and 19 confirmation_used", codes)
	}
	if n := len(e.up.seen()); n != 1 {
		t.Errorf("the upstream was called %d times, want 1", n)
	}
}

// TestGrantDoesNotLiftADenial: an answer never overrides the policy, and a
// denied call does not spend it.
func TestGrantDoesNotLiftADenial(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["chat-user"]
	c := &calls.Call{Connection: "crm", Method: "POST", Path: "/accounts/3/close", Intent: policy.IntentWrite}
	g := &calls.Grant{ID: confirm.NewID(), Binding: "anything", Approve: true, By: "client:test", ExpiresAt: e.clock.Now().Add(time.Minute)}
	res, err := e.svc.Do(e.ctx, cred, c, calls.Options{Grant: g})
	if err != nil || res.Outcome != calls.Denied || res.Code != fault.ReviewRequired {
		t.Fatalf("Do = %+v, %v; want review_required", res, err)
	}
	if _, err := e.st.GetConfirmation(e.ctx, g.ID); err == nil {
		t.Errorf("a denied call spent the answer")
	}
}

// TestRetryableAnswersAreNotKept: an answer marked retryable (an MCP input
// request) is not replayed: the repeated call runs again.
func TestRetryableAnswersAreNotKept(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["chat-user"]
	runs := 0
	for i, transient := range []bool{true, false, false} {
		a, replayed, err := e.svc.Idempotent(e.ctx, cred, "k1", "hash", func() calls.Reply {
			runs++
			return calls.Reply{Status: 200, Body: []byte("x"), Retryable: transient}
		})
		if err != nil || string(a.Body) != "x" {
			t.Fatalf("use %d: %+v, %v", i, a, err)
		}
		if want := i == 2; replayed != want {
			t.Errorf("use %d replayed = %v, want %v", i, replayed, want)
		}
	}
	if runs != 2 {
		t.Errorf("ran %d times, want 2 (the transient answer, then the kept one)", runs)
	}
}
