package script_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/script"
)

func TestCompleted(t *testing.T) {
	e := newEnv(t, quick)
	res := e.mustRun(t, "chat-user", `
const a = call('crm', 'GET', '/contacts/1');
const b = call('crm', 'get', '/contacts', {query: {limit: 2, tag: ['x', 'y'], active: true}});
console.log('read', a.status, a.body.name);
({first: a.body.path, second: b.status, nothing: undefined})`)
	if res.Status != script.Completed || res.Confirmation != nil {
		t.Fatalf("status %s", res.Status)
	}
	if diff := cmp.Diff(map[string]any{"first": "/contacts/1", "second": 200.0}, value(t, res.Value)); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ran", "ran"}, states(res.Calls)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if res.Calls[1].Method != "GET" || string(res.Calls[0].Response) != `{"status":200,"body":{"path":"/contacts/1","name":"Ada"}}` {
		t.Errorf("calls %+v", res.Calls)
	}
	if diff := cmp.Diff([]string{"read 200 Ada"}, res.Logs); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	if e.up.count("GET /contacts") != 1 || e.up.count("GET /contacts/1") != 1 {
		t.Errorf("upstream saw %v", e.up.seen)
	}
}

// TestBatch is code mode as docs/design.md describes it, end to end at the package level: two
// reads run, two deletes are collected, the escalated payment is denied;
// after the approver keeps one delete, the run after approval replays the
// reads, runs the kept delete once and returns {rejected: true} for the
// other, and the result is stored. Nothing ever runs twice.
func TestBatch(t *testing.T) {
	e := newEnv(t, quick)
	src := `
const a = call('crm', 'GET', '/contacts/1');
const b = call('crm', 'GET', '/contacts/2');
const d1 = call('crm', 'DELETE', '/contacts/1');
const d2 = call('crm', 'DELETE', '/contacts/2');
const p = call('crm', 'POST', '/payments', {body: {amount: 20000, to: 'ACME'}});
console.log(JSON.stringify(d1));
({reads: [a.status, b.status], d1, d2, payment: p.code})`
	res := e.mustRun(t, "chat-user", src)
	if res.Status != script.ConfirmationRequired || res.Confirmation == nil {
		t.Fatalf("status %s", res.Status)
	}
	if diff := cmp.Diff([]string{"ran", "ran", "pending", "pending", "denied"}, states(res.Calls)); diff != "" {
		t.Fatalf("first run states (-want +got):\n%s", diff)
	}
	conf := res.Confirmation
	if conf.Kind != countersign.KindScript || len(conf.Operations) != 2 || conf.Operations[0].Path != "/contacts/1" || conf.Operations[1].Path != "/contacts/2" {
		t.Fatalf("batch %+v", conf)
	}
	if *res.Calls[3].Operation != 1 || res.Calls[4].Operation != nil || !strings.Contains(string(res.Calls[4].Response), `"code":"review_required"`) {
		t.Errorf("calls %+v", res.Calls)
	}
	if e.up.count("DELETE /contacts/1")+e.up.count("DELETE /contacts/2")+e.up.count("POST /payments") != 0 {
		t.Fatal("a collected or denied call reached the upstream")
	}
	if diff := cmp.Diff([]string{`{"pending":true}`}, res.Logs); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	// While pending, a resubmission shows the batch and runs nothing.
	again, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, ConfirmationID: conf.ID})
	if err != nil || again.Status != script.ConfirmationRequired || len(again.Calls) != 5 {
		t.Fatalf("resubmission while pending: %+v, %v", again, err)
	}
	if _, err := e.svc.Rerun(e.ctx, conf.ID); fault.CodeOf(err) != fault.ConfirmationPending {
		t.Fatalf("rerun while pending: %v", err)
	}

	e.decide(t, conf.ID, true, []int{0})
	for range 2 { // a retried Execute task replays
		got, err := e.svc.Rerun(e.ctx, conf.ID)
		if err != nil {
			t.Fatalf("rerun: %v", err)
		}
		if got.Status != countersign.StatusExecuted {
			t.Errorf("batch status %s, want executed", got.Status)
		}
	}
	for line, want := range map[string]int{"GET /contacts/1": 1, "GET /contacts/2": 1, "DELETE /contacts/1": 1, "DELETE /contacts/2": 0, "POST /payments": 0} {
		if n := e.up.count(line); n != want {
			t.Errorf("upstream saw %s %d times, want %d", line, n, want)
		}
	}
	if key := e.up.keys["DELETE /contacts/1"]; key != conf.ID+":0" {
		t.Errorf("Idempotency-Key %q", key)
	}
	if n := e.events.count(notify.TypeExecuted, conf.ID); n != 1 {
		t.Errorf("%d executed events, want 1", n)
	}

	// The owner reads the outcome: a resubmission returns it and runs nothing.
	done, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, ConfirmationID: conf.ID})
	if err != nil {
		t.Fatalf("resubmission: %v", err)
	}
	want := map[string]any{"reads": []any{200.0, 200.0}, "d1": map[string]any{"status": 204.0, "body": nil},
		"d2": map[string]any{"rejected": true}, "payment": "review_required"}
	if diff := cmp.Diff(want, value(t, done.Value)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"replayed", "replayed", "ran", "rejected", "denied"}, states(done.Calls)); diff != "" {
		t.Errorf("states after approval (-want +got):\n%s", diff)
	}
	if done.Effective != countersign.StatusExecuted || string(done.Confirmation.Result) != string(done.Value) {
		t.Errorf("confirmation %s with result %s", done.Effective, done.Confirmation.Result)
	}
	out, err := e.svc.Describe(e.ctx, done.Confirmation)
	if err != nil || string(out.Value) != string(done.Value) || len(out.Calls) != 5 {
		t.Errorf("describe %+v, %v", out, err)
	}
	if n := e.up.total(); n != 3 {
		t.Errorf("upstream saw %d requests in all, want 3", n)
	}

	// Another credential cannot read it; another script is not it.
	if _, err := e.svc.Run(e.ctx, e.creds["runner"], script.Request{Source: src, ConfirmationID: conf.ID}); fault.CodeOf(err) != fault.UnknownConfirmation {
		t.Errorf("another credential: %v", err)
	}
	if _, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src + " ", ConfirmationID: conf.ID}); fault.CodeOf(err) != fault.ConfirmationMismatch {
		t.Errorf("another script: %v", err)
	}
}

// TestChoices: each credential's choice applies to each call inside a script.
func TestChoices(t *testing.T) {
	src := `const r = call('crm', 'DELETE', '/contacts/7'); r`
	tests := []struct {
		cred  string
		state script.CallState
		check func(t *testing.T, v map[string]any)
	}{
		{"ops-key", script.StateDenied, func(t *testing.T, v map[string]any) {
			if v["code"] != "requires_confirmation" {
				t.Errorf("value %v", v)
			}
		}},
		{"agent", script.StateRan, func(t *testing.T, v map[string]any) {
			if v["status"] != 204.0 || v["notice"] == nil {
				t.Errorf("value %v", v)
			}
		}},
		{"runner", script.StateRan, func(t *testing.T, v map[string]any) {
			if v["status"] != 204.0 || v["notice"] != nil {
				t.Errorf("value %v", v)
			}
		}},
		{"reader", script.StateDenied, func(t *testing.T, v map[string]any) {
			if v["code"] != "read_only" {
				t.Errorf("value %v", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.cred, func(t *testing.T) {
			e := newEnv(t, quick)
			res := e.mustRun(t, tt.cred, src)
			if res.Status != script.Completed || len(res.Calls) != 1 || res.Calls[0].State != tt.state {
				t.Fatalf("%+v", res)
			}
			var v map[string]any
			if err := json.Unmarshal(res.Value, &v); err != nil {
				t.Fatal(err)
			}
			tt.check(t, v)
		})
	}
}

// TestListingIsBounded: however many large responses a script gets, the
// listing of its calls stays within a few MiB (the script got them all).
func TestListingIsBounded(t *testing.T) {
	// What is bounded here is the listing's bytes, not the time: a hundred
	// 30 KB answers under -race on a loaded machine took past the 5 s
	// default, so the run gets a minute.
	e := newEnv(t, script.Limits{Time: time.Minute, Calls: 100, ResultBytes: 1 << 20})
	e.up.bigBytes = 30000
	res := e.mustRun(t, "runner", "let n = 0; for (let i = 0; i < 100; i++) n += call('crm', 'GET', '/big').body.blob.length; n")
	if string(res.Value) != "3000000" {
		t.Fatalf("value %s", res.Value)
	}
	total := 0
	for _, c := range res.Calls {
		total += len(c.Response)
	}
	last := string(res.Calls[99].Response)
	if total > 2<<20+64*100 || !strings.HasPrefix(last, `{"truncated":true,"bytes":`) || strings.HasPrefix(string(res.Calls[0].Response), `{"truncated"`) {
		t.Errorf("listing of %d bytes, first %.40s, last %s", total, res.Calls[0].Response, last)
	}
}

// TestCannotAsk: a surface that can ask nobody (an MCP client with neither
// a dialog nor a card) has the calls that need confirmation denied to the
// script, and nothing is left pending; a call whose connection takes
// approvals only from its approvers is still collected for them.
func TestCannotAsk(t *testing.T) {
	e := newEnv(t, quick)
	const why = "Plain Client can show neither a confirmation dialog nor a card"
	src := `
const a = call('crm', 'GET', '/contacts/1');
const d = call('crm', 'DELETE', '/contacts/1');
({read: a.status, d})`
	res, err := e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: src, CannotAsk: why})
	if err != nil || res.Status != script.Completed || res.Confirmation != nil || res.Unasked != 1 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	want := map[string]any{"read": 200.0, "d": map[string]any{"denied": true, "code": "requires_confirmation",
		"reason": "DELETE /contacts/{id} requires confirmation, and " + why}}
	if diff := cmp.Diff(want, value(t, res.Value)); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	if e.up.count("DELETE /contacts/1") != 0 || e.up.count("GET /contacts/1") != 1 {
		t.Errorf("upstream saw %v", e.up.seen)
	}

	// Other credentials' choices are theirs: run_without_asking runs it.
	res, err = e.svc.Run(e.ctx, e.creds["runner"], script.Request{Source: src, CannotAsk: why})
	if err != nil || res.Unasked != 0 || e.up.count("DELETE /contacts/1") != 1 {
		t.Fatalf("run_without_asking: %+v, %v", res, err)
	}

	// Out of band only: collected, whatever the surface.
	res, err = e.svc.Run(e.ctx, e.creds["chat-user"], script.Request{Source: `
const d = call('crm', 'DELETE', '/contacts/2');
const v = call('vault', 'DELETE', '/items/9');
({d, v})`, CannotAsk: why})
	if err != nil || res.Status != script.ConfirmationRequired || res.Unasked != 1 {
		t.Fatalf("out of band: %+v, %v", res, err)
	}
	if ops := res.Confirmation.Operations; len(ops) != 1 || ops[0].Connection != "vault" {
		t.Errorf("batch %+v, want only the vault call", ops)
	}
	if diff := cmp.Diff([]string{"denied", "pending"}, states(res.Calls)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}
