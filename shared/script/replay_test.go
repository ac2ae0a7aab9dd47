package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script"
)

// TestDivergence: a script that makes another call (or the same call with
// other arguments) where the journal has one stops there, cleanly;
// nothing after it runs, and what ran before it ran once.
func TestDivergence(t *testing.T) {
	tests := []struct {
		name, src string
		reason    string
		line      int
	}{
		{"another path", `const d = call('crm', 'DELETE', '/contacts/1');
const r = call('crm', 'GET', d.pending ? '/contacts/2' : '/contacts/3');
call('crm', 'POST', '/contacts', {body: {after: true}});
d`, "call 2 differs from the first run: it was GET /contacts/2 (crm), now it is GET /contacts/3 (crm)", 2},
		{"other arguments", `const d = call('crm', 'DELETE', '/contacts/1');
call('crm', 'GET', '/contacts/2', {query: {fresh: String(!d.pending)}});
call('crm', 'POST', '/contacts', {body: {after: true}});
d`, "call 2 differs from the first run: it was GET /contacts/2 (crm), now it is GET /contacts/2 (crm) or has other arguments", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, quick)
			res := e.mustRun(t, "chat-user", tt.src)
			id := res.Confirmation.ID
			e.decide(t, id, true, nil)
			c, err := e.svc.Rerun(e.ctx, id)
			if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			// The approved delete came before the divergence: it ran, once.
			if c.Status != countersign.StatusPartiallyExecuted || c.Result != nil {
				t.Errorf("batch %s with result %s, want partially_executed and none", c.Status, c.Result)
			}
			if _, err := e.svc.Rerun(e.ctx, id); err != nil {
				t.Fatal(err)
			}
			_, err = e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: tt.src, ConfirmationID: id})
			var se *script.Error
			if !errors.As(err, &se) || se.Code != fault.ScriptDiverged || !strings.Contains(se.Reason, tt.reason) || se.Line != tt.line {
				t.Fatalf("resubmission: %+v", err)
			}
			if diff := cmp.Diff([]string{"ran"}, states(se.Calls)); diff != "" {
				t.Errorf("calls of the run after approval (-want +got):\n%s", diff)
			}
			for line, want := range map[string]int{"DELETE /contacts/1": 1, "GET /contacts/2": 1, "GET /contacts/3": 0, "POST /contacts": 1} {
				if n := e.up.count(line); n != want {
					t.Errorf("%s seen %d times, want %d", line, n, want)
				}
			}
		})
	}
}

// TestRerunMakesNewCalls: after approval a script may go further than its
// first run did: a call that needs no confirmation runs (once, however
// often the script runs again), one that needs confirmation is denied.
func TestRerunMakesNewCalls(t *testing.T) {
	e := newEnv(t, quick)
	src := `const d = call('crm', 'DELETE', '/contacts/1');
let more = null;
if (!d.pending) { more = [call('crm', 'GET', '/contacts/9'), call('crm', 'DELETE', '/contacts/8')] }
more`
	res := e.mustRun(t, "chat-user", src)
	e.decide(t, res.Confirmation.ID, true, nil)
	for range 2 {
		if _, err := e.svc.Rerun(e.ctx, res.Confirmation.ID); err != nil {
			t.Fatal(err)
		}
	}
	done, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, ConfirmationID: res.Confirmation.ID})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ran", "ran", "denied"}, states(done.Calls)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	var v []map[string]any
	if err := json.Unmarshal(done.Value, &v); err != nil || v[0]["status"] != 200.0 || v[1]["code"] != "requires_confirmation" {
		t.Errorf("value %s", done.Value)
	}
	for line, want := range map[string]int{"DELETE /contacts/1": 1, "GET /contacts/9": 1, "DELETE /contacts/8": 0} {
		if n := e.up.count(line); n != want {
			t.Errorf("%s seen %d times, want %d", line, n, want)
		}
	}
}

// TestRerunOutcomeUnknown: an approved call claimed by a run that died
// before recording its outcome is never sent again; the script stops there.
func TestRerunOutcomeUnknown(t *testing.T) {
	e := newEnv(t, quick)
	res := e.mustRun(t, "chat-user", "call('crm', 'GET', '/contacts/1'); call('crm', 'DELETE', '/contacts/1'); call('crm', 'DELETE', '/contacts/2')")
	id := res.Confirmation.ID
	e.decide(t, id, true, nil)
	if _, claimed, err := e.calls.Confirm.ClaimOne(e.ctx, id, 0); err != nil || !claimed {
		t.Fatal(err)
	}
	c, err := e.svc.Rerun(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != countersign.StatusFailed {
		t.Errorf("batch %s, want failed", c.Status)
	}
	out, err := e.svc.Describe(e.ctx, c)
	if err != nil || out.Error == nil || out.Error.Code != string(fault.OutcomeUnknown) || !strings.Contains(out.Error.Reason, "call 2 (DELETE /contacts/1)") {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if n := e.up.count("DELETE /contacts/1") + e.up.count("DELETE /contacts/2"); n != 0 {
		t.Errorf("deletes sent %d times", n)
	}
}

// TestConcurrentReruns: Execute tasks racing on one batch run each approved
// call once; the later ones wait for the first and replay.
func TestConcurrentReruns(t *testing.T) {
	e := newEnv(t, quick)
	res := e.mustRun(t, "chat-user", "[call('crm', 'GET', '/contacts/1').status, call('crm', 'DELETE', '/contacts/1').status, call('crm', 'DELETE', '/contacts/2').status]")
	id := res.Confirmation.ID
	e.decide(t, id, true, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := e.svc.Rerun(e.ctx, id)
			if err != nil || c.Status != countersign.StatusExecuted {
				t.Errorf("rerun: %v, %v", c, err)
			}
		})
	}
	wg.Wait()
	for line, want := range map[string]int{"GET /contacts/1": 1, "DELETE /contacts/1": 1, "DELETE /contacts/2": 1} {
		if n := e.up.count(line); n != want {
			t.Errorf("%s seen %d times, want %d", line, n, want)
		}
	}
	if n := e.events.count("confirmation.executed", id); n != 1 {
		t.Errorf("%d executed events", n)
	}
}

// TestLargeValues: a response too large for one record is journaled in
// parts and replays exactly; a large result is kept whole on the journal
// and as a marker on the confirmation.
func TestLargeValues(t *testing.T) {
	limits := quick
	limits.ResultBytes = 1 << 20
	e := newEnv(t, limits)
	src := `const big = call('crm', 'GET', '/big');
const d = call('crm', 'DELETE', '/contacts/1');
({n: big.body.blob.length, d: d.status || d.pending, again: big.body.blob.slice(0, 100000)})`
	res := e.mustRun(t, "chat-user", src)
	if !strings.HasPrefix(string(res.Calls[0].Response), `{"truncated":true,"bytes":`) {
		t.Errorf("the listing shows %.80s", res.Calls[0].Response)
	}
	id := res.Confirmation.ID
	parts, err := e.st.ScriptParts(e.ctx, id, "call/")
	if err != nil || len(parts) != 2 {
		t.Fatalf("%d parts, %v; want the 300 KiB response in 2", len(parts), err)
	}
	e.decide(t, id, true, nil)
	c, err := e.svc.Rerun(e.ctx, id)
	if err != nil || c.Status != countersign.StatusExecuted {
		out, _ := e.svc.Describe(e.ctx, c)
		t.Fatalf("rerun %v %v: %+v", c.Status, err, out.Error)
	}
	if !strings.HasPrefix(string(c.Result), `{"truncated":true,"bytes":`) {
		t.Errorf("confirmation result %.80s, want a marker", c.Result)
	}
	done, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, ConfirmationID: id})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		N     int
		D     int
		Again string
	}
	if err := json.Unmarshal(done.Value, &v); err != nil || v.N != 300<<10 || v.D != 204 || len(v.Again) != 100000 {
		t.Fatalf("value n=%d d=%d again=%d, %v", v.N, v.D, len(v.Again), err)
	}
	if e.up.count("GET /big") != 1 || e.up.count("DELETE /contacts/1") != 1 {
		t.Errorf("upstream %v", e.up.seen)
	}
}

// TestRerunCancelled: a run after approval cut off by a shutdown finishes
// the call it sent, records it, decides nothing and hands the journal
// back; the next run replays that call and completes.
func TestRerunCancelled(t *testing.T) {
	e := newEnv(t, quick)
	res := e.mustRun(t, "chat-user", "call('crm', 'DELETE', '/contacts/1'); call('crm', 'DELETE', '/contacts/2'); 'done'")
	id := res.Confirmation.ID
	e.decide(t, id, true, nil)
	e.up.mu.Lock()
	e.up.hold, e.up.holdC, e.up.arrived = "DELETE /contacts/1", make(chan struct{}), make(chan struct{})
	e.up.mu.Unlock()
	ctx, cancel := context.WithCancel(e.ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := e.svc.Rerun(ctx, id)
		errc <- err
	}()
	<-e.up.arrived
	cancel()
	time.Sleep(50 * time.Millisecond)
	close(e.up.holdC)
	if err := <-errc; err == nil {
		t.Fatal("a cancelled run reported success")
	}
	run, err := e.st.GetScriptRun(e.ctx, id)
	if err != nil || run.Status != countersign.ScriptPending || run.Owner != "" {
		t.Fatalf("journal after the cancelled run: %+v, %v", run, err)
	}
	if n := e.up.count("DELETE /contacts/2"); n != 0 {
		t.Errorf("the call after the cut ran")
	}
	e.up.mu.Lock()
	e.up.hold = ""
	e.up.mu.Unlock()
	c, err := e.svc.Rerun(e.ctx, id)
	if err != nil || c.Status != countersign.StatusExecuted || string(c.Result) != `"done"` {
		t.Fatalf("rerun: %+v, %v", c, err)
	}
	if a, b := e.up.count("DELETE /contacts/1"), e.up.count("DELETE /contacts/2"); a != 1 || b != 1 {
		t.Errorf("deletes sent %d and %d times, want once each", a, b)
	}
}

// TestRejected: a batch rejected whole runs nothing, and says so.
func TestRejected(t *testing.T) {
	e := newEnv(t, quick)
	src := "call('crm', 'DELETE', '/contacts/1')"
	res := e.mustRun(t, "chat-user", src)
	e.decide(t, res.Confirmation.ID, false, nil)
	if _, err := e.svc.Rerun(e.ctx, res.Confirmation.ID); fault.CodeOf(err) != fault.ConfirmationRejected {
		t.Errorf("rerun: %v", err)
	}
	if _, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, ConfirmationID: res.Confirmation.ID}); fault.CodeOf(err) != fault.ConfirmationRejected {
		t.Errorf("resubmission: %v", err)
	}
	if n := e.up.total(); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}
