package stack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// faultCase is one injected fault: where it is injected, the flow driven
// through it, and what every confirmation the flow made must come to once
// every window has passed (in creation order; a create that stored nothing
// is left out).
type faultCase struct {
	name   string
	inject func(f *faultStack)
	flow   func(f *faultStack) []string
	want   []countersign.Status
	// sent is how many requests carrying a confirmation's Idempotency-Key
	// reach the upstream in all.
	sent int
}

// Every flow retries an answer it does not want once, as an agent or a
// person would: that is the harsher test (a retry is a second chance to
// run something twice).

var (
	ask    = "cs_test_ask"
	runner = "cs_test_run"
)

func deleteCall(path string) map[string]any {
	return map[string]any{"connection": "crm", "method": "DELETE", "path": path, "intent": "write"}
}

// attempt makes a request, and once more unless it got want; it logs what
// each try answered.
func attempt(log *[]string, what string, want int, fn func() result) (result, bool) {
	var r result
	for i := range 2 {
		r = fn()
		note := fmt.Sprint(r.status)
		if c := r.str("code"); c != "" {
			note += " " + c
		}
		if i > 0 {
			what = "retry"
		}
		*log = append(*log, what+" "+note)
		if r.status == want {
			return r, true
		}
		synctest.Wait()
	}
	return r, false
}

// handshake: the agent's call pauses, the approver approves on the link
// from the notification, the agent redeems.
func handshake(path string) func(f *faultStack) []string {
	return func(f *faultStack) []string {
		var log []string
		r, ok := attempt(&log, "call", http.StatusAccepted, func() result { return f.call(ask, deleteCall(path)) })
		if !ok {
			return log
		}
		id := r.str("confirmation.id")
		synctest.Wait()
		link, ok := f.inbox.link(id)
		if !ok {
			return append(log, "no link sent")
		}
		if _, ok := attempt(&log, "approve", http.StatusOK, func() result { return f.decide(link, "approve") }); !ok {
			if f.record(id).Status != countersign.StatusApproved {
				return log
			}
		}
		synctest.Wait()
		attempt(&log, "redeem", http.StatusOK, func() result { return f.call(ask, redeemOf(deleteCall(path), id)) })
		return log
	}
}

// rejection: the approver rejects, and the agent tries to redeem anyway.
func rejection(path string) func(f *faultStack) []string {
	return func(f *faultStack) []string {
		var log []string
		r, ok := attempt(&log, "call", http.StatusAccepted, func() result { return f.call(ask, deleteCall(path)) })
		if !ok {
			return log
		}
		id := r.str("confirmation.id")
		synctest.Wait()
		link, ok := f.inbox.link(id)
		if !ok {
			return append(log, "no link sent")
		}
		attempt(&log, "reject", http.StatusOK, func() result { return f.decide(link, "reject") })
		synctest.Wait()
		attempt(&log, "redeem", http.StatusOK, func() result { return f.call(ask, redeemOf(deleteCall(path), id)) })
		return log
	}
}

// unanswered: the call pauses and nobody decides.
func unanswered(path string) func(f *faultStack) []string {
	return func(f *faultStack) []string {
		var log []string
		attempt(&log, "call", http.StatusAccepted, func() result { return f.call(ask, deleteCall(path)) })
		return log
	}
}

// gatewayRuns: a call the gateway runs itself once approved (the MCP
// card's mode), approved by the approver on the link; the workflow's
// Execute task runs it.
func gatewayRuns(path string) func(f *faultStack) []string {
	return func(f *faultStack) []string {
		var log []string
		res, err := f.pauseGatewayRuns(path)
		if err != nil {
			return append(log, "pause: "+err.Error())
		}
		log = append(log, "pause "+res.Outcome.String())
		id := res.Confirmation.ID
		synctest.Wait()
		link, ok := f.inbox.link(id)
		if !ok {
			return append(log, "no link sent")
		}
		attempt(&log, "approve", http.StatusOK, func() result { return f.decide(link, "approve") })
		return log
	}
}

// granted: the person approves in the client itself (an MCP input
// request); the retried call carries the answer, and a lost answer is
// carried again.
func granted(path string) func(f *faultStack) []string {
	return func(f *faultStack) []string {
		var log []string
		ctx := context.Background()
		cred, err := f.app.Calls.Authenticate(ctx, ask)
		if err != nil {
			f.t.Fatal(err)
		}
		c := func() *calls.Call {
			return &calls.Call{Connection: "crm", Method: http.MethodDelete, Path: path, Intent: policy.IntentWrite}
		}
		res, err := f.app.Calls.Do(ctx, cred, c(), calls.Options{Pause: calls.PauseCollect})
		if err != nil {
			f.t.Fatal(err)
		}
		g := &calls.Grant{ID: confirm.NewID(), Binding: res.Operation.Binding, Approve: true, By: "client:test", ExpiresAt: time.Now().Add(10 * time.Minute)}
		f.st.expect(g.ID)
		for i := range 2 {
			res, err := f.app.Calls.Do(ctx, cred, c(), calls.Options{Grant: g})
			what := "answer"
			if i > 0 {
				what = "retry"
			}
			if err == nil {
				return append(log, what+" "+res.Outcome.String())
			}
			log = append(log, what+" "+string(fault.CodeOf(err)))
			synctest.Wait()
		}
		return log
	}
}

// live: a write that runs at once (run_without_asking, auto tier), with
// the agent's Idempotency-Key.
func live(f *faultStack) []string {
	var log []string
	body := map[string]any{"connection": "crm", "method": "PATCH", "path": "/contacts/12", "intent": "write", "body": map[string]any{"name": "Ada"}}
	attempt(&log, "call", http.StatusOK, func() result { return f.call(runner, body, "Idempotency-Key", "k1") })
	return log
}

// review: a review-tier call, queued for the operator.
func review(f *faultStack) []string {
	var log []string
	body := map[string]any{"connection": "crm", "method": "POST", "path": "/accounts/3/close", "intent": "write"}
	attempt(&log, "call", http.StatusForbidden, func() result { return f.call(ask, body) })
	return log
}

func storeFault(s step, m faultMode) func(f *faultStack) {
	return func(f *faultStack) { f.st.fail(s, m, 1) }
}

func workflowFault(c wfCall, m faultMode) func(f *faultStack) {
	return func(f *faultStack) { f.wf.fail(c, m, 1) }
}

func upstreamFault(u upFault) func(f *faultStack) {
	return func(f *faultStack) { f.up.failWrites(u, 1) }
}

const (
	executed = countersign.StatusExecuted
	expired  = countersign.StatusExpired
	failed   = countersign.StatusFailed
	redeemed = countersign.StatusRedeemed
	rejected = countersign.StatusRejected
)

var faultCases = []faultCase{
	// Creating the record.
	{name: "create fails before", inject: storeFault(stepCreate, before), flow: handshake("/contacts/1"), want: []countersign.Status{executed}, sent: 1},
	{name: "create applied, error", inject: storeFault(stepCreate, after), flow: handshake("/contacts/2"), want: []countersign.Status{executed}, sent: 1},
	{name: "create applied, error, read fails", inject: storeFault(stepCreate, afterDown), flow: handshake("/contacts/46"), want: []countersign.Status{expired, executed}, sent: 1},
	{name: "create applied, conflict", inject: storeFault(stepCreate, afterConflict), flow: handshake("/contacts/3"), want: []countersign.Status{executed}, sent: 1},
	{name: "quota fails before", inject: storeFault(stepQuota, before), flow: handshake("/contacts/4"), want: []countersign.Status{executed}, sent: 1},
	{name: "quota applied, error", inject: storeFault(stepQuota, after), flow: handshake("/contacts/5"), want: []countersign.Status{executed}, sent: 1},
	{name: "quota applied, conflict", inject: storeFault(stepQuota, afterConflict), flow: handshake("/contacts/6"), want: []countersign.Status{executed}, sent: 1},
	// Starting the workflow.
	{name: "Start fails before", inject: workflowFault(wfStart, before), flow: handshake("/contacts/7"), want: []countersign.Status{failed, executed}, sent: 1},
	{name: "Start started, error", inject: workflowFault(wfStart, after), flow: handshake("/contacts/8"), want: []countersign.Status{failed, executed}, sent: 1},
	{name: "Start fails and so does finalize", flow: handshake("/contacts/9"), want: []countersign.Status{expired, executed}, sent: 1,
		inject: func(f *faultStack) { f.wf.fail(wfStart, before, 1); f.st.fail(stepFinalize, before, 1) }},
	// The notify task storing the token.
	{name: "attach token fails before", inject: storeFault(stepAttach, before), flow: handshake("/contacts/10"), want: []countersign.Status{failed}},
	{name: "attach token applied, error", inject: storeFault(stepAttach, after), flow: handshake("/contacts/11"), want: []countersign.Status{executed}, sent: 1},
	{name: "attach token applied, error, read fails", inject: storeFault(stepAttach, afterDown), flow: handshake("/contacts/47"), want: []countersign.Status{failed}},
	{name: "attach token applied, conflict", inject: storeFault(stepAttach, afterConflict), flow: handshake("/contacts/12"), want: []countersign.Status{executed}, sent: 1},
	// The decision.
	{name: "decide fails before", inject: storeFault(stepDecide, before), flow: handshake("/contacts/13"), want: []countersign.Status{executed}, sent: 1},
	{name: "decide applied, error", inject: storeFault(stepDecide, after), flow: handshake("/contacts/14"), want: []countersign.Status{executed}, sent: 1},
	{name: "decide applied, error, read fails", inject: storeFault(stepDecide, afterDown), flow: handshake("/contacts/48"), want: []countersign.Status{executed}, sent: 1},
	{name: "decide applied, conflict", inject: storeFault(stepDecide, afterConflict), flow: handshake("/contacts/15"), want: []countersign.Status{executed}, sent: 1},
	{name: "SendTaskSuccess fails before", inject: workflowFault(wfSuccess, before), flow: handshake("/contacts/16"), want: []countersign.Status{executed}, sent: 1},
	{name: "SendTaskSuccess delivered, error", inject: workflowFault(wfSuccess, after), flow: handshake("/contacts/17"), want: []countersign.Status{executed}, sent: 1},
	{name: "SendTaskFailure fails before", inject: workflowFault(wfFailure, before), flow: rejection("/contacts/18"), want: []countersign.Status{rejected}},
	{name: "SendTaskFailure delivered, error", inject: workflowFault(wfFailure, after), flow: rejection("/contacts/19"), want: []countersign.Status{rejected}},
	// The redemption's claim and the outcome.
	{name: "redeem fails before", inject: storeFault(stepClaim, before), flow: handshake("/contacts/20"), want: []countersign.Status{executed}, sent: 1},
	{name: "redeem applied, error", inject: storeFault(stepClaim, after), flow: handshake("/contacts/21"), want: []countersign.Status{executed}, sent: 1},
	{name: "redeem applied, error, read fails", inject: storeFault(stepClaim, afterDown), flow: handshake("/contacts/49"), want: []countersign.Status{redeemed}},
	{name: "redeem applied, conflict", inject: storeFault(stepClaim, afterConflict), flow: handshake("/contacts/22"), want: []countersign.Status{executed}, sent: 1},
	{name: "complete fails before", inject: storeFault(stepComplete, before), flow: handshake("/contacts/23"), want: []countersign.Status{redeemed}, sent: 1},
	{name: "complete applied, error", inject: storeFault(stepComplete, after), flow: handshake("/contacts/24"), want: []countersign.Status{executed}, sent: 1},
	{name: "complete applied, conflict", inject: storeFault(stepComplete, afterConflict), flow: handshake("/contacts/25"), want: []countersign.Status{executed}, sent: 1},
	// The workflow's timer.
	{name: "finalize expired fails before", inject: storeFault(stepFinalize, before), flow: unanswered("/contacts/26"), want: []countersign.Status{expired}},
	{name: "finalize expired applied, error", inject: storeFault(stepFinalize, after), flow: unanswered("/contacts/27"), want: []countersign.Status{expired}},
	// The upstream during a redemption.
	{name: "upstream times out on redeem", inject: upstreamFault(upTimeout), flow: handshake("/contacts/28"), want: []countersign.Status{failed}, sent: 1},
	{name: "upstream resets on redeem", inject: upstreamFault(upReset), flow: handshake("/contacts/29"), want: []countersign.Status{failed}, sent: 1},
	{name: "upstream 503 on redeem", inject: upstreamFault(up5xx), flow: handshake("/contacts/30"), want: []countersign.Status{executed}, sent: 1},
	{name: "upstream refuses on redeem", inject: upstreamFault(upRefused), flow: handshake("/contacts/31"), want: []countersign.Status{failed}},
	// The gateway running an approved call itself (the card's mode; script batches share the Execute task).
	{name: "gateway runs: no fault", flow: gatewayRuns("/contacts/32"), want: []countersign.Status{executed}, sent: 1},
	{name: "gateway runs: SendTaskSuccess fails before", inject: workflowFault(wfSuccess, before), flow: gatewayRuns("/contacts/33"), want: []countersign.Status{executed}, sent: 1},
	{name: "gateway runs: SendTaskSuccess delivered, error", inject: workflowFault(wfSuccess, after), flow: gatewayRuns("/contacts/41"), want: []countersign.Status{executed}, sent: 1},
	{name: "gateway runs: claim fails before", inject: storeFault(stepClaim, before), flow: gatewayRuns("/contacts/34"), want: []countersign.Status{executed}, sent: 1},
	{name: "gateway runs: claim fails for good", inject: func(f *faultStack) { f.st.fail(stepClaim, before, 1000) }, flow: gatewayRuns("/contacts/35"), want: []countersign.Status{failed}},
	{name: "gateway runs: claim applied, error", inject: storeFault(stepClaim, after), flow: gatewayRuns("/contacts/36"), want: []countersign.Status{executed}, sent: 1},
	{name: "gateway runs: claim applied, error, read fails", inject: storeFault(stepClaim, afterDown), flow: gatewayRuns("/contacts/50"), want: []countersign.Status{redeemed}},
	{name: "gateway runs: complete fails before", inject: storeFault(stepComplete, before), flow: gatewayRuns("/contacts/37"), want: []countersign.Status{redeemed}, sent: 1},
	{name: "gateway runs: upstream times out", inject: upstreamFault(upTimeout), flow: gatewayRuns("/contacts/38"), want: []countersign.Status{failed}, sent: 1},
	{name: "gateway runs: upstream resets", inject: upstreamFault(upReset), flow: gatewayRuns("/contacts/39"), want: []countersign.Status{failed}, sent: 1},
	{name: "gateway runs: upstream 503", inject: upstreamFault(up5xx), flow: gatewayRuns("/contacts/40"), want: []countersign.Status{executed}, sent: 1},
	// An answer given in the client (MCP input request): recorded redeemed and claimed in one create.
	{name: "grant: create fails before", inject: storeFault(stepCreate, before), flow: granted("/contacts/42"), want: []countersign.Status{executed}, sent: 1},
	{name: "grant: create applied, error", inject: storeFault(stepCreate, after), flow: granted("/contacts/43"), want: []countersign.Status{executed}, sent: 1},
	{name: "grant: create applied, error, read fails", inject: storeFault(stepCreate, afterDown), flow: granted("/contacts/51"), want: []countersign.Status{redeemed}},
	{name: "grant: complete fails before", inject: storeFault(stepComplete, before), flow: granted("/contacts/44"), want: []countersign.Status{redeemed}, sent: 1},
	{name: "grant: upstream times out", inject: upstreamFault(upTimeout), flow: granted("/contacts/45"), want: []countersign.Status{failed}, sent: 1},
	// A live call with the agent's Idempotency-Key, and a review item.
	{name: "live: idempotency claim fails before", inject: storeFault(stepIdemClaim, before), flow: live},
	{name: "live: idempotency claim applied, error", inject: storeFault(stepIdemClaim, after), flow: live},
	{name: "live: idempotency answer fails before", inject: storeFault(stepIdemAnswer, before), flow: live},
	{name: "live: idempotency answer applied, error", inject: storeFault(stepIdemAnswer, after), flow: live},
	{name: "live: upstream times out", inject: upstreamFault(upTimeout), flow: live},
	{name: "live: upstream resets", inject: upstreamFault(upReset), flow: live},
	{name: "live: upstream 503", inject: upstreamFault(up5xx), flow: live},
	{name: "review: item fails before", inject: storeFault(stepReview, before), flow: review},
	{name: "review: item applied, error", inject: storeFault(stepReview, after), flow: review},
}

// TestFaults injects each fault of faultCases into the whole graph (store,
// workflow and upstream decorators; the real state machines and task
// handlers), drives its flow, lets the clock pass every window (600 s to
// decide, 600 s to redeem), and checks what truth promises: nothing approved
// ran twice, nothing unapproved ran, every confirmation ends in a status
// that tells the truth. Each case logs what the agent and the approver were
// answered and what each confirmation came to: go test -run TestFaults -v.
func TestFaults(t *testing.T) {
	for _, tc := range faultCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFaultStack(t)
				if tc.inject != nil {
					tc.inject(f)
				}
				answers := tc.flow(f)
				synctest.Wait()
				time.Sleep(40 * time.Minute)
				synctest.Wait()
				got := f.truth()
				var statuses []countersign.Status
				sent := 0
				for _, s := range got {
					statuses = append(statuses, s.Status)
					sent += s.Sent
				}
				fired := counted(append(f.st.log(), f.wf.fired...))
				live := f.up.received("runner:k1")
				t.Logf("| %s | %s | %s | %v; upstream got %d confirmed, %d live |", tc.name, strings.Join(fired, "; "),
					strings.Join(answers, ", "), statuses, sent, len(live))
				if len(fired) == 0 && tc.inject != nil && !strings.Contains(tc.name, "upstream") {
					t.Errorf("the fault was never injected")
				}
				if !slices.Equal(statuses, tc.want) {
					t.Errorf("confirmations came to %v, want %v", statuses, tc.want)
				}
				if sent != tc.sent {
					t.Errorf("the upstream got %d confirmed operations, want %d", sent, tc.sent)
				}
				if len(live) > 1 {
					t.Errorf("the live call reached the upstream %d times with the same key: %+v", len(live), live)
				}
			})
		})
	}
}

// counted folds repeated lines into one with a count.
func counted(lines []string) []string {
	var out []string
	n := map[string]int{}
	for _, l := range lines {
		if n[l]++; n[l] == 1 {
			out = append(out, l)
		}
	}
	for i, l := range out {
		if n[l] > 1 {
			out[i] = fmt.Sprintf("%s (x%d)", l, n[l])
		}
	}
	return out
}
