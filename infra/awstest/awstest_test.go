package awstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/confirm"
)

// The flows, run one at a time in this order against one emulated
// deployment. Adding one is a few lines: a name, the settings it needs
// (zero means defaultSettings; the functions are restarted, as by a
// redeploy, when they change) and a function of a *flow.
var flows = []struct {
	name     string
	settings settings
	run      func(f *flow)
	todo     string // set: not possible yet, logged as TODO
}{
	// First: the gateway's first invocation is its cold start.
	{name: "gateway cold start reads S3, writes nothing to the table", run: coldStart},
	{name: "OAuth: discovery, RFC 7591 registration, sign-in at the template's OpenID provider, token on /mcp", run: oauthSignIn},
	{name: "approve then redeem once", run: approveThenRedeem},
	{name: "link delivered by SNS e-mail, approved from it", run: emailApproval},
	{name: "REST respond-async, approve, then redeem once", run: restAsync},
	{name: "reject", run: reject},
	{name: "expire", settings: shortWait, run: expire},
	{name: "approved but SendTaskSuccess failed, still redeemable", settings: shortWait, run: approvedTaskLost},
	{name: "rejected but SendTaskFailure failed, still rejected", settings: shortWait, run: rejectedTaskLost},
	{name: "script batch through the gateway, approved, rerun by the Execute task", run: batchExecuted},
	{name: "review item run once by the operator function", run: reviewRun},
	{name: "script batch approved but SendTaskSuccess failed, still rerun by the Execute task", settings: shortWait, run: batchTaskLost},
	{name: "card call approved on the page but SendTaskSuccess failed, run by the Execute task", settings: shortWait, run: cardTaskLost},
	{name: "show: the notify task reads the contact before the links; changed before the redemption, 409", run: showRechecked},
	{name: "show: changed before the Execute task runs a card's call, nothing sent", run: showExecuteChanged},
	{name: "show: unchanged when the Execute task runs a card's call, sent once", run: showExecuteUnchanged},
	{name: "MCP task: a key's call on /mcp becomes a task, approved by link, completed on tasks/get", run: mcpTaskApproved},

	{name: "configuration change picked up from S3, a bad one refused", run: configChange},
	{name: "key created and revoked with countersign keys", run: keyRevoked},
	{name: "key created, changed and revoked through the operator function's API", run: operatorCredentials},
	{name: "candidate configuration from the bucket's candidate/ prefix: decided beside the live one, the live one enforced, the difference summarised by the operator function", run: candidateTrial},
	{name: "edit and approve: the approve function binds the edited call, the agent's redemption runs it once; an escalating edit is 422", run: editAndApprove},
	{name: "approve and remember: the approve function grants, the gateway runs the next call under it, the operator revokes it; velocity counted in the table", run: approveAndRemember},

	// People (people_test.go): approvers.sign_in not given, so the
	// template's identity provider makes sign-in required.
	{name: "people: sign-in required by default, ada signs in, approves and is recorded", settings: peopleSettings, run: signedInApproval},
	{name: "people: quorum of 2, ada and grace approve at once", settings: peopleSettings, run: quorumTwoAtOnce},
	{name: "people: quorum of 2, ada twice at once counts once, then grace", settings: peopleSettings, run: quorumSameTwice},
	{name: "people: quorum of 2, ada approves while grace rejects", settings: peopleSettings, run: quorumApproveReject},
	{name: "people: quorum of 2 approved by ada, grace's completing approval and mallory's rejection at once", settings: peopleSettings, run: quorumCompleteOrReject},
	{name: "people: four eyes, the caller's own approval refused, grace approves", settings: peopleSettings, run: fourEyes},
	{name: "people: a passkey registered and verified by the approve function", settings: peopleSettings, run: passkeyApproval},
}

// shortWait makes a confirmation expire 8 s after it is created: time
// enough to approve it on a loaded machine, short enough to wait for.
var shortWait = settings{CallSeconds: 8, ScriptSeconds: 8, RedeemSeconds: 60}

// TestAWSPath deploys template.yaml on this machine's emulators (see
// stack) and drives the flows above through it.
func TestAWSPath(t *testing.T) {
	if _, err := exec.LookPath("moto_server"); err != nil {
		testenv.Missing(t, testenv.Moto, `moto_server is not installed; install it with: python3 -m pip install 'moto[server]==5.2.1' cfn-lint aws-sam-translator boto3`+
			` and run: go test -count=1 -v ./infra/awstest/ (or make awstest)`)
	}
	begin := time.Now()
	// Bounded, with room for a cold build of the bootstraps and the
	// emulator on a busy 2-core machine (it once took over 5 minutes there
	// while other builds ran); the flows themselves take about a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := newStack(t, ctx)
	if problems := s.tpl.checkLogs(); len(problems) > 0 {
		t.Errorf("template.yaml: logs:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("emulated deployment ready in %s: functions %v, state machines %v, routes %v",
		time.Since(begin).Round(time.Millisecond), s.functionNames(), s.machineNames(), s.routeKeys())

	var ran, todo []string
	stopped := false
	for _, fl := range flows {
		if fl.todo != "" {
			t.Logf("flow %q: TODO: %s", fl.name, fl.todo)
			todo = append(todo, fl.name)
			continue
		}
		if stopped {
			continue
		}
		set := fl.settings
		if set == (settings{}) {
			set = defaultSettings
		}
		ok := t.Run(fl.name, func(t *testing.T) {
			fbegin := time.Now()
			s.deploy(set)
			s.resetWorkflows(ctx)
			f := &flow{T: t, s: s, ctx: ctx}
			fl.run(f)
			t.Logf("flow %q passed in %s", fl.name, time.Since(fbegin).Round(time.Millisecond))
		})
		if ok {
			ran = append(ran, fl.name)
		} else {
			s.dumpLogs(t)
		}
		// A failed flow may leave an execution waiting or the functions in a
		// state the next flow does not expect: stop there.
		stopped = !ok || ctx.Err() != nil
	}
	s.checkLeastPrivilege(t)
	t.Logf("AWS path: %d flows passed %q, %d TODO %q, in %s", len(ran), ran, len(todo), todo, time.Since(begin).Round(time.Millisecond))
}

// flow is one flow's view of the stack, with the steps flows share.
type flow struct {
	*testing.T
	s   *stack
	ctx context.Context
}

// answer is a decoded JSON response.
type answer struct {
	Status int
	Body   map[string]any
	Raw    string
}

func (a answer) str(key string) string { s, _ := a.Body[key].(string); return s }

// do sends a request to the API (the test's API Gateway).
func (f *flow) do(method, path string, header http.Header, body string) answer {
	f.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, f.s.front.URL+path, strings.NewReader(body))
	if err != nil {
		f.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, Raw: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(b, &a.Body)
	}
	return a
}

// call is POST /v1/calls on crm as the ask_person agent.
func (f *flow) call(method, path, intent, confirmation string) answer {
	f.Helper()
	return f.callAs(askKey, "crm", method, path, intent, confirmation)
}

// callAs is POST /v1/calls on connection with token (a key or an access
// token).
func (f *flow) callAs(token, connection, method, path, intent, confirmation string) answer {
	f.Helper()
	// The client is recorded on the credential (an UpdateItem the gateway's
	// role must allow; a failure there is only logged).
	req := map[string]any{"connection": connection, "method": method, "path": path, "intent": intent,
		"client": map[string]any{"name": "awstest", "version": "1.0"}}
	if confirmation != "" {
		req["confirmation_id"] = confirmation
	}
	b, _ := json.Marshal(req)
	return f.do(http.MethodPost, "/v1/calls", http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}, string(b))
}

// expect fails unless a has the status and, when code is set, the code
// (or, for 200 and 202, the status field).
func (f *flow) expect(step string, a answer, status int, code string) {
	f.Helper()
	got := a.str("code")
	if status < 300 {
		got = a.str("status")
	}
	if a.Status != status || code != "" && got != code {
		f.Fatalf("%s: got %d %s, want %d %s\n%s", step, a.Status, got, status, code, a.Raw)
	}
	f.Logf("%s: %d %s", step, a.Status, got)
}

// pause makes a confirm-tier call on crm as the ask_person agent and
// returns the confirmation id; nothing reaches the upstream.
func (f *flow) pause(method, path string) string {
	f.Helper()
	return f.pauseAs(askKey, "crm", method, path)
}

// pauseAs is pause on connection with token.
func (f *flow) pauseAs(token, connection, method, path string) string {
	f.Helper()
	a := f.callAs(token, connection, method, path, "write", "")
	f.expect("call "+method+" "+path, a, http.StatusAccepted, "confirmation_required")
	c, _ := a.Body["confirmation"].(map[string]any)
	id, _ := c["id"].(string)
	if id == "" {
		f.Fatalf("no confirmation id in %s", a.Raw)
	}
	if strings.Contains(a.Raw, "/approve/") {
		f.Fatalf("the agent's answer carries an approval link: %s", a.Raw)
	}
	if hits := f.s.Upstream.Hits(method + " " + path); len(hits) != 0 {
		f.Fatalf("upstream called before approval: %v", hits)
	}
	return id
}

// link waits for the confirmation.requested webhook and returns its link.
func (f *flow) link(id string) *url.URL {
	f.Helper()
	ev := f.s.Hooks.wait(f, "confirmation.requested", id, 30*time.Second)
	u := ev.link(f, approverName)
	f.Logf("webhook confirmation.requested: link %s", u.Path)
	return u
}

// page opens the approval link (GET) and returns the status and the page.
func (f *flow) page(link *url.URL) (int, string) {
	f.Helper()
	a := f.do(http.MethodGet, link.RequestURI(), nil, "")
	return a.Status, a.Raw
}

// decide presses a button of the page: POST the link's fields with decision.
func (f *flow) decide(link *url.URL, decision string) answer {
	f.Helper()
	form := link.Query()
	form.Set("decision", decision)
	return f.do(http.MethodPost, link.Path, http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"},
	}, form.Encode())
}

// status is GET /v1/confirmations/<id>'s status.
func (f *flow) status(id string) string {
	f.Helper()
	a := f.do(http.MethodGet, "/v1/confirmations/"+id, http.Header{"Authorization": {"Bearer " + askKey}}, "")
	if a.Status != http.StatusOK {
		f.Fatalf("GET /v1/confirmations/%s: %d %s", id, a.Status, a.Raw)
	}
	return a.str("status")
}

// execution waits for the execution of the machine (logical id) for the
// confirmation to end and checks its last state.
func (f *flow) execution(logical, id, last string, timeout time.Duration) {
	f.Helper()
	ex := f.s.waitExecution(f.ctx, f, f.s.machine(logical), id, timeout)
	f.Logf("execution of %s: %s", logical, ex)
	if ex.Status != "SUCCEEDED" || ex.Last() != last {
		f.Fatalf("execution of %s for %s: %s, want SUCCEEDED ending in %s", logical, id, ex, last)
	}
}

// upstreamOnce checks the upstream got exactly one request for the
// operation, with the confirmation's Idempotency-Key.
func (f *flow) upstreamOnce(method, path, id string) {
	f.Helper()
	want := fmt.Sprintf("%s %s key=%s", method, path, confirm.IdempotencyKey(id, 0))
	if hits := f.s.Upstream.Hits(method + " " + path); len(hits) != 1 || hits[0] != want {
		f.Fatalf("upstream got %q, want exactly [%s]", hits, want)
	}
	f.Logf("upstream: %s, once", want)
}

func approveThenRedeem(f *flow) {
	id := f.pause("DELETE", "/contacts/12")
	link := f.link(id)
	st, page := f.page(link)
	if st != http.StatusOK || !strings.Contains(page, "Approve this operation?") || !strings.Contains(page, "/contacts/12") {
		f.Fatalf("GET approval page: %d\n%s", st, page)
	}
	f.Logf("GET approval page: %d, shows DELETE /contacts/12", st)
	f.expect("redeem before the decision", f.call("DELETE", "/contacts/12", "confirmed_write", id), http.StatusConflict, "confirmation_pending")
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	f.expect("redeem another contact", f.call("DELETE", "/contacts/13", "confirmed_write", id), http.StatusForbidden, "confirmation_mismatch")
	f.expect("redeem", f.call("DELETE", "/contacts/12", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/12", id)
	f.expect("redeem again", f.call("DELETE", "/contacts/12", "confirmed_write", id), http.StatusConflict, "confirmation_used")
	f.upstreamOnce("DELETE", "/contacts/12", id)
	if got := f.status(id); got != "executed" {
		f.Fatalf("status after redeem: %s, want executed", got)
	}
	f.s.Hooks.wait(f, "confirmation.decided", id, 10*time.Second)
	me := f.do(http.MethodGet, "/v1/credentials/me", http.Header{"Authorization": {"Bearer " + askKey}}, "")
	if lc, _ := me.Body["last_client"].(map[string]any); me.Status != http.StatusOK || lc["name"] != "awstest" {
		f.Fatalf("GET /v1/credentials/me: %d %s, want last_client awstest", me.Status, me.Raw)
	}
	f.expect("POST approve again", f.decide(link, "approve"), http.StatusConflict, "confirmation_decided")
}

// restAsync is the handshake over the REST pass-through (docs/api.md, REST pass-through).
func restAsync(f *flow) {
	auth := http.Header{"Authorization": {"Bearer " + askKey}}
	f.expect("DELETE /v1/rest/crm/contacts/15", f.do(http.MethodDelete, "/v1/rest/crm/contacts/15", auth, ""), http.StatusForbidden, "requires_confirmation")
	a := f.do(http.MethodDelete, "/v1/rest/crm/contacts/15", http.Header{"Authorization": auth["Authorization"], "Prefer": {"respond-async"}}, "")
	f.expect("DELETE /v1/rest/crm/contacts/15 with Prefer: respond-async", a, http.StatusAccepted, "confirmation_required")
	c, _ := a.Body["confirmation"].(map[string]any)
	id, _ := c["id"].(string)
	if id == "" {
		f.Fatalf("no confirmation id in %s", a.Raw)
	}
	link := f.link(id)
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	redeem := http.Header{"Authorization": auth["Authorization"], "Countersign-Confirmation": {id}}
	if a := f.do(http.MethodDelete, "/v1/rest/crm/contacts/15", redeem, ""); a.Status != http.StatusNoContent {
		f.Fatalf("redeem over REST: %d, want the upstream's 204\n%s", a.Status, a.Raw)
	}
	f.Logf("redeem over REST: 204 from the upstream")
	f.upstreamOnce("DELETE", "/contacts/15", id)
	f.expect("redeem over REST again", f.do(http.MethodDelete, "/v1/rest/crm/contacts/15", redeem, ""), http.StatusConflict, "confirmation_used")
}

func reject(f *flow) {
	id := f.pause("DELETE", "/contacts/21")
	link := f.link(id)
	f.expect("POST reject", f.decide(link, "reject"), http.StatusOK, "rejected")
	f.execution("ConfirmStateMachine", id, "Rejected", 30*time.Second)
	f.expect("redeem", f.call("DELETE", "/contacts/21", "confirmed_write", id), http.StatusForbidden, "confirmation_rejected")
	if got := f.status(id); got != "rejected" {
		f.Fatalf("status: %s, want rejected", got)
	}
	if hits := f.s.Upstream.Hits("DELETE /contacts/21"); len(hits) != 0 {
		f.Fatalf("upstream called after a rejection: %v", hits)
	}
}

func expire(f *flow) {
	id := f.pause("DELETE", "/contacts/31")
	link := f.link(id)
	f.execution("ConfirmStateMachine", id, "Expired", 30*time.Second)
	if got := f.status(id); got != "expired" {
		f.Fatalf("status: %s, want expired", got)
	}
	f.s.Hooks.wait(f, "confirmation.expired", id, 10*time.Second)
	f.Logf("webhook confirmation.expired")
	if st, _ := f.page(link); st != http.StatusGone {
		f.Fatalf("GET approval page after expiry: %d, want 410", st)
	}
	f.expect("POST approve after expiry", f.decide(link, "approve"), http.StatusGone, "confirmation_expired")
	f.expect("redeem", f.call("DELETE", "/contacts/31", "confirmed_write", id), http.StatusGone, "confirmation_expired")
	if hits := f.s.Upstream.Hits("DELETE /contacts/31"); len(hits) != 0 {
		f.Fatalf("upstream called after expiry: %v", hits)
	}
}

// approvedTaskLost: the approve function records the approval but cannot
// reach Step Functions, so the wait times out with the record approved.
// The workflow must not call that expired, and the agent can still redeem.
func approvedTaskLost(f *flow) {
	approve := f.s.emulator("approve").aws
	approve.fail("states:SendTaskSuccess", true)
	defer approve.fail("states:SendTaskSuccess", false)
	id := f.pause("DELETE", "/contacts/41")
	link := f.link(id)
	f.expect("POST approve (Step Functions unreachable)", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	if got := f.status(id); got != "approved" {
		f.Fatalf("status: %s, want approved", got)
	}
	f.expect("redeem", f.call("DELETE", "/contacts/41", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/41", id)
}

// rejectedTaskLost: as approvedTaskLost, for a rejection.
func rejectedTaskLost(f *flow) {
	approve := f.s.emulator("approve").aws
	approve.fail("states:SendTaskFailure", true)
	defer approve.fail("states:SendTaskFailure", false)
	id := f.pause("DELETE", "/contacts/45")
	link := f.link(id)
	f.expect("POST reject (Step Functions unreachable)", f.decide(link, "reject"), http.StatusOK, "rejected")
	f.execution("ConfirmStateMachine", id, "Rejected", 30*time.Second)
	f.expect("redeem", f.call("DELETE", "/contacts/45", "confirmed_write", id), http.StatusForbidden, "confirmation_rejected")
}

// startBatch submits a script to POST /v1/scripts whose one call needs a
// person: the gateway journals the run, creates the script batch and starts
// the batch state machine; the script's result is the call's answer.
func (f *flow) startBatch(method, path, contact string) string {
	f.Helper()
	body, _ := json.Marshal(map[string]any{"script": fmt.Sprintf("const r = call('crm', %q, %q); ({contact: %q, answer: r})", method, path, contact)})
	a := f.do(http.MethodPost, "/v1/scripts", http.Header{"Authorization": {"Bearer " + askKey}, "Content-Type": {"application/json"}}, string(body))
	f.expect("POST /v1/scripts", a, http.StatusAccepted, "confirmation_required")
	c, _ := a.Body["confirmation"].(map[string]any)
	id, _ := c["id"].(string)
	if id == "" || strings.Contains(a.Raw, "/approve/") {
		f.Fatalf("script answer without a confirmation id, or with a link: %s", a.Raw)
	}
	if hits := f.s.Upstream.Hits(method + " " + path); len(hits) != 0 {
		f.Fatalf("upstream called before approval: %v", hits)
	}
	return id
}

// startGatewayRun stores a pending confirmation of kind that the gateway
// runs itself once approved, and starts machine for it.
func (f *flow) startGatewayRun(kind countersign.Kind, machine, method, path, contact string) string {
	f.Helper()
	op, err := confirm.NewOperation(askCredential, "crm", method, path, "/contacts/{id}", countersign.Args{Path: map[string]string{"id": contact}})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now().UTC()
	seconds := f.s.settings.ScriptSeconds
	if kind == countersign.KindCall {
		seconds = f.s.settings.CallSeconds
	}
	wait := time.Duration(seconds) * time.Second
	c := &countersign.Confirmation{
		ID: confirm.NewID(), Kind: kind, Credential: askCredential, Status: countersign.StatusPending,
		Reason: "awstest " + string(kind), CreatedAt: now, ExpiresAt: now.Add(wait), Operations: []countersign.Operation{op},
		GatewayRuns: kind == countersign.KindCall, TTL: now.Add(wait + 24*time.Hour).Unix(),
	}
	if err := f.s.Store.CreateConfirmation(f.ctx, c); err != nil {
		f.Fatal(err)
	}
	input, _ := json.Marshal(map[string]any{"confirmation_id": c.ID, "timeout_seconds": seconds})
	_, err = f.s.sfn.StartExecution(f.ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(f.s.machine(machine).ARN), Name: aws.String(c.ID), Input: aws.String(string(input)),
	})
	if err != nil {
		f.Fatalf("start %s execution: %v", machine, err)
	}
	f.Logf("%s %s started on %s: %s %s", kind, c.ID, machine, method, path)
	return c.ID
}

func batchExecuted(f *flow) {
	id := f.startBatch("DELETE", "/contacts/51", "51")
	link := f.link(id)
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("BatchStateMachine", id, "Executed", 30*time.Second)
	f.upstreamOnce("DELETE", "/contacts/51", id)
	if got := f.status(id); got != "executed" {
		f.Fatalf("status: %s, want executed", got)
	}
	f.s.Hooks.wait(f, "confirmation.executed", id, 10*time.Second)
	f.Logf("webhook confirmation.executed")
}

// batchTaskLost: as approvedTaskLost for a batch, which nobody redeems: the
// workflow itself must run the approved operations.
func batchTaskLost(f *flow) {
	approve := f.s.emulator("approve").aws
	approve.fail("states:SendTaskSuccess", true)
	defer approve.fail("states:SendTaskSuccess", false)
	id := f.startBatch("DELETE", "/contacts/61", "61")
	link := f.link(id)
	f.expect("POST approve (Step Functions unreachable)", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("BatchStateMachine", id, "Executed", 30*time.Second)
	f.upstreamOnce("DELETE", "/contacts/61", id)
	if got := f.status(id); got != "executed" {
		f.Fatalf("status: %s, want executed", got)
	}
}

// cardTaskLost: a call the gateway runs itself (the MCP card's mode),
// approved on the approver's page while Step Functions is unreachable.
// Nobody redeems it, so when the wait times out the confirm machine must
// run it itself.
func cardTaskLost(f *flow) {
	approve := f.s.emulator("approve").aws
	approve.fail("states:SendTaskSuccess", true)
	defer approve.fail("states:SendTaskSuccess", false)
	id := f.startGatewayRun(countersign.KindCall, "ConfirmStateMachine", "DELETE", "/contacts/73", "73")
	link := f.link(id)
	f.expect("POST approve (Step Functions unreachable)", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Executed", 30*time.Second)
	f.upstreamOnce("DELETE", "/contacts/73", id)
	if got := f.status(id); got != "executed" {
		f.Fatalf("status: %s, want executed", got)
	}
}

// coldStart: the gateway's first invocation reads the configuration from
// the bucket and its secrets, and makes no call to the table: no
// credentials.json is seeded (there is none in the bucket either).
func coldStart(f *flow) {
	gw := f.s.emulator("gateway").aws
	before := gw.count()
	a := f.do(http.MethodGet, "/healthz", nil, "")
	if a.Status != http.StatusOK {
		f.Fatalf("GET /healthz: %d %s", a.Status, a.Raw)
	}
	after := gw.count()
	var calls []string
	for action, n := range after {
		if d := n - before[action]; d > 0 {
			calls = append(calls, fmt.Sprintf("%s×%d", action, d))
			if strings.HasPrefix(action, "dynamodb:") {
				f.Errorf("the gateway's cold start called %s %d times: it must write nothing to the table", action, d)
			}
		}
	}
	slices.Sort(calls)
	f.Logf("gateway cold start and GET /healthz called %v", calls)
	if after["s3:ListBucket"] == before["s3:ListBucket"] || after["secretsmanager:GetSecretValue"]-before["secretsmanager:GetSecretValue"] < 2 {
		f.Fatalf("the gateway did not read its configuration from S3 and its secrets (calls %v)", calls)
	}
	out, err := f.s.s3.ListObjectsV2(f.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(f.s.bucket)})
	if err != nil {
		f.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), "credentials.json") {
			f.Fatalf("config push uploaded %s", aws.ToString(o.Key))
		}
	}
	f.Logf("the bucket holds %d objects, no credentials.json", len(out.Contents))
}

// emailApproval: the approval request reaches the e-mail approvers through
// the stack's SNS topic (read back from moto's store of published
// messages); the link it carries approves.
func emailApproval(f *flow) {
	id := f.pause("DELETE", "/contacts/71")
	msg := f.s.snsMessage(f, id, 30*time.Second)
	if want := "Approve DELETE /contacts/71 on crm? (awstest)"; msg.Subject != want {
		f.Fatalf("e-mail subject %q, want %q", msg.Subject, want)
	}
	var link *url.URL
	for _, line := range strings.Split(msg.Body, "\n") {
		if strings.Contains(line, "/approve/"+id+"?") {
			link, _ = url.Parse(strings.TrimSpace(line))
		}
	}
	if link == nil || link.Query().Get("a") != "email" || !strings.Contains(msg.Body, "The request expires at ") {
		f.Fatalf("no e-mail approver link in the message:\n%s", msg.Body)
	}
	f.Logf("SNS e-mail %q: link %s (a=email)", msg.Subject, link.Path)
	if st, page := f.page(link); st != http.StatusOK || !strings.Contains(page, "/contacts/71") {
		f.Fatalf("GET approval page from the e-mail: %d", st)
	}
	f.expect("POST approve from the e-mail's link", f.decide(link, "approve"), http.StatusOK, "approved")
	// The approve function mails the decision to the e-mail approvers too.
	followUp := f.s.snsMessageWhere(f, "the decision's follow-up for "+id, func(m snsMail) bool {
		return strings.Contains(m.Body, "confirmation "+id+" was approved")
	}, 30*time.Second)
	if want := "Approved: DELETE /contacts/71 on crm (awstest)"; followUp.Subject != want {
		f.Fatalf("follow-up subject %q, want %q:\n%s", followUp.Subject, want, followUp.Body)
	}
	f.Logf("SNS e-mail follow-up %q", followUp.Subject)
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	f.expect("redeem", f.call("DELETE", "/contacts/71", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/71", id)
}

// configChange: a tier changed and pushed to the bucket decides the calls
// of the running functions within the refresh bound, without a restart; a
// configuration that fails validation (written to the bucket by hand, past
// config push's own check) is refused and the one in force keeps serving.
func configChange(f *flow) {
	read := func(contact string) answer {
		return f.call("GET", "/contacts/"+contact, "read", "")
	}
	f.expect("GET /contacts/81 (auto)", read("81"), http.StatusOK, "executed")
	out, err := f.s.push(f.s.configDir(f.s.settings, map[string]any{"GET": "never"}))
	if err != nil {
		f.Fatalf("config push: %v\n%s", err, out)
	}
	f.Logf("config push (GET /contacts/{id} now never):\n%s", strings.TrimSpace(out))
	pushed := time.Now()
	// The bound: the refresh interval, plus the 2 s the functions let a
	// push's writes settle, plus a second of slack for this machine.
	bound := time.Duration(refreshSeconds)*time.Second + 2*time.Second + 2*time.Second
	for {
		a := read("82")
		if a.Status == http.StatusForbidden && a.str("code") == "blocked" {
			f.Logf("GET /contacts/82: 403 blocked, %s after the push (bound %s)", time.Since(pushed).Round(time.Millisecond), bound)
			break
		}
		if a.Status != http.StatusOK {
			f.Fatalf("GET /contacts/82 while the change settles: %d %s", a.Status, a.Raw)
		}
		if time.Since(pushed) > bound {
			f.Fatalf("the new tier was not in force %s after the push", bound)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An invalid policy written straight to the bucket.
	key := "config/connections/crm/policy.json"
	bad := `{"base_url": "` + f.s.Upstream.URL + `", "endpoints": [{"method": "GET", "path": "/contacts/{id}", "confirm": false}]}`
	if _, err := f.s.s3.PutObject(f.ctx, &s3.PutObjectInput{Bucket: aws.String(f.s.bucket), Key: aws.String(key), Body: strings.NewReader(bad)}); err != nil {
		f.Fatal(err)
	}
	time.Sleep(bound)
	f.expect("GET /contacts/83 after an invalid configuration was written", read("83"), http.StatusForbidden, "blocked")
	if log := f.s.emulator("gateway").logTail(20000); !strings.Contains(log, "configuration change refused") || !strings.Contains(log, "endpoints[0].confirm: false is not allowed") {
		f.Fatalf("the gateway did not log the refusal:\n%s", log)
	}
	f.Logf("the gateway refused it (logged \"configuration change refused ... endpoints[0].confirm: false is not allowed\") and kept the configuration in force")

	// Back to the flows' configuration.
	if out, err := f.s.push(f.s.configDir(f.s.settings, nil)); err != nil {
		f.Fatalf("config push: %v\n%s", err, out)
	}
	deadline := time.Now().Add(bound)
	for read("84").Status != http.StatusOK {
		if time.Now().After(deadline) {
			f.Fatal("the configuration pushed back was not in force within the bound")
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.Logf("configuration pushed back: GET auto again")
	if hits := f.s.Upstream.Hits("GET /contacts/83"); len(hits) != 0 {
		f.Fatalf("a blocked GET reached the upstream: %v", hits)
	}
}

// keyRevoked: a key made with `countersign keys create` works at once and
// is refused from the call after `countersign keys revoke`.
func keyRevoked(f *flow) {
	store := []string{"--table", f.s.table, "--endpoint", f.s.dynamoURL, "--region", region}
	out, errOut, err := f.s.tool(append([]string{"keys", "create", "--id", "awstest-runner", "--choice", "run_without_asking"}, store...)...)
	if err != nil {
		f.Fatalf("countersign keys create: %v\n%s", err, errOut)
	}
	key := strings.TrimSpace(out)
	f.Logf("countersign keys create: %s", strings.TrimSpace(strings.Split(errOut, "\n")[0]))
	get := func(contact string) answer {
		b := `{"connection":"crm","method":"GET","path":"/contacts/` + contact + `","intent":"read"}`
		return f.do(http.MethodPost, "/v1/calls", http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}, b)
	}
	f.expect("GET with the new key", get("91"), http.StatusOK, "executed")
	if _, errOut, err := f.s.tool(append([]string{"keys", "revoke", "--id", "awstest-runner"}, store...)...); err != nil {
		f.Fatalf("countersign keys revoke: %v\n%s", err, errOut)
	}
	f.expect("GET with the revoked key, the next call", get("92"), http.StatusUnauthorized, "unauthenticated")
	if hits := f.s.Upstream.Hits("GET /contacts/92"); len(hits) != 0 {
		f.Fatalf("the revoked key reached the upstream: %v", hits)
	}
}

func (s *stack) functionNames() []string {
	var out []string
	for _, fn := range s.fns {
		out = append(out, fn.Short)
	}
	return out
}

func (s *stack) machineNames() []string {
	var out []string
	for _, m := range s.machines {
		out = append(out, m.Name)
	}
	return out
}

func (s *stack) routeKeys() []string {
	var out []string
	for _, r := range s.routes {
		out = append(out, r.routeKey()+"→"+strings.TrimPrefix(r.Function, stackName+"-"))
	}
	return out
}

// reviewRun: a review-tier call is queued; a non-operator key is refused
// by the operator function; the operator runs the item, once, and the
// agent reads the outcome.
func reviewRun(f *flow) {
	a := f.call("POST", "/contacts/12/close", "write", "")
	f.expect("review-tier call", a, http.StatusForbidden, "review_required")
	rv, _ := a.Body["review"].(map[string]any)
	id, _ := rv["id"].(string)
	agent := http.Header{"Authorization": {"Bearer " + askKey}, "Content-Type": {"application/json"}}
	op := http.Header{"Authorization": {"Bearer " + operatorKey}, "Content-Type": {"application/json"}}
	f.expect("GET /v1/operator/reviews as an agent", f.do(http.MethodGet, "/v1/operator/reviews", agent, ""), http.StatusForbidden, "forbidden")
	list := f.do(http.MethodGet, "/v1/operator/reviews", op, "")
	f.expect("GET /v1/operator/reviews", list, http.StatusOK, "")
	if !strings.Contains(list.Raw, id) {
		f.Fatalf("review %s not listed: %s", id, list.Raw)
	}
	f.expect("run the review item", f.do(http.MethodPost, "/v1/operator/reviews/"+id, op, `{"decision":"run"}`), http.StatusOK, "executed")
	f.expect("run it again", f.do(http.MethodPost, "/v1/operator/reviews/"+id, op, `{"decision":"run"}`), http.StatusConflict, "confirmation_decided")
	f.upstreamOnce("POST", "/contacts/12/close", id)
	if got := f.status(id); got != "executed" {
		f.Fatalf("agent's status of %s: %s, want executed", id, got)
	}
	page := f.do(http.MethodGet, "/operator", nil, "")
	if page.Status != http.StatusOK || !strings.Contains(page.Raw, "Operator sign-in") {
		f.Fatalf("GET /operator: %d\n%s", page.Status, page.Raw)
	}
	f.Logf("GET /operator: %d, the sign-in form", page.Status)
}
