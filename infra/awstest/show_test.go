package awstest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
)

// showConnection's DELETE shows the contact as it is now and rechecks it.
const showConnection = "shown"

// current is GET /v1/confirmations/<id>'s operations[0].current.
func (f *flow) current(id string) map[string]any {
	f.Helper()
	a := f.do(http.MethodGet, "/v1/confirmations/"+id, http.Header{"Authorization": {"Bearer " + askKey}}, "")
	ops, _ := a.Body["operations"].([]any)
	if a.Status != http.StatusOK || len(ops) != 1 {
		f.Fatalf("GET /v1/confirmations/%s: %d %s", id, a.Status, a.Raw)
	}
	cur, _ := ops[0].(map[string]any)["current"].(map[string]any)
	return cur
}

// showRechecked: the notify task reads the contact (as the connection)
// before it sends the links, and the page shows it under Now; the
// contact changed before the redemption: 409 resource_changed, no write.
func showRechecked(f *flow) {
	id := f.pauseAs(askKey, showConnection, "DELETE", "/contacts/81")
	link := f.link(id)
	if reads := f.s.Upstream.Hits("GET /contacts/81"); len(reads) != 1 {
		f.Fatalf("reads before the links went out: %q, want one", reads)
	}
	cur := f.current(id)
	body, _ := cur["body"].(map[string]any)
	if cur["status"] != float64(200) || body["path"] != "/contacts/81" || cur["read_at"] == nil || cur["sha256"] != nil {
		f.Fatalf("operations[0].current: %v", cur)
	}
	f.Logf("the notify task stored operations[0].current: %v", cur)
	if st, page := f.page(link); st != http.StatusOK || !strings.Contains(page, ">Now<") || !strings.Contains(page, "/contacts/81") {
		f.Fatalf("GET approval page: %d, no Now section\n%s", st, page)
	}
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	f.s.Upstream.change("/contacts/81")
	f.expect("redeem after the contact changed", f.callAs(askKey, showConnection, "DELETE", "/contacts/81", "confirmed_write", id), http.StatusConflict, "resource_changed")
	if hits := f.s.Upstream.Hits("DELETE /contacts/81"); len(hits) != 0 {
		f.Fatalf("the upstream got %q for a contact that changed", hits)
	}
}

// showExecuteChanged and showExecuteUnchanged: the Execute task runs a
// call the gateway runs itself (a card's), approved on the page, only if
// the contact is as the notify task read it. One flow each: moto's Step
// Functions cannot start a second execution of a machine that ran one.
// Their contacts (382, 383) are read by no other flow: the configuration
// flow checks that its blocked GET /contacts/83 never reached the upstream.
func showExecuteChanged(f *flow) { f.showExecute("/contacts/382", "382", true) }

func showExecuteUnchanged(f *flow) { f.showExecute("/contacts/383", "383", false) }

func (f *flow) showExecute(path, contact string, changed bool) {
	f.Helper()
	id := f.startShownRun(path, contact)
	link := f.link(id)
	if reads := f.s.Upstream.Hits("GET " + path); len(reads) != 1 || f.current(id)["status"] != float64(200) {
		f.Fatalf("the notify task read %q and stored %v", reads, f.current(id))
	}
	if changed {
		f.s.Upstream.change(path)
	}
	f.expect("POST approve", f.decide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Executed", 30*time.Second)
	hits := f.s.Upstream.Hits("DELETE " + path)
	switch {
	case changed && len(hits) != 0:
		f.Fatalf("the Execute task sent %q for a contact that changed", hits)
	case changed && f.status(id) != "failed":
		f.Fatalf("status %s after the recheck stopped it, want failed", f.status(id))
	case !changed:
		f.upstreamOnce("DELETE", path, id)
	}
	if reads := f.s.Upstream.Hits("GET " + path); len(reads) != 2 {
		f.Fatalf("reads %q, want the notify task's and the Execute task's", reads)
	}
	f.Logf("Execute task, contact changed %v: %d DELETE, status %s", changed, len(hits), f.status(id))
}

// startShownRun starts a call the gateway runs itself (as the card's) on
// the show connection, as the gateway would store it: its operation
// carries the endpoint's show read.
func (f *flow) startShownRun(path, contact string) string {
	f.Helper()
	op, err := confirm.NewOperation(askCredential, showConnection, "DELETE", path, "/contacts/{id}", countersign.Args{Path: map[string]string{"id": contact}})
	if err != nil {
		f.Fatal(err)
	}
	op.Show = &countersign.Show{Path: path, Recheck: true}
	now := time.Now().UTC()
	wait := time.Duration(f.s.settings.CallSeconds) * time.Second
	c := &countersign.Confirmation{
		ID: confirm.NewID(), Kind: countersign.KindCall, Credential: askCredential, Status: countersign.StatusPending,
		Reason: "awstest show", CreatedAt: now, ExpiresAt: now.Add(wait), Operations: []countersign.Operation{op},
		GatewayRuns: true, TTL: now.Add(wait + 24*time.Hour).Unix(),
	}
	if err := f.s.Store.CreateConfirmation(f.ctx, c); err != nil {
		f.Fatal(err)
	}
	input, _ := json.Marshal(map[string]any{"confirmation_id": c.ID, "timeout_seconds": f.s.settings.CallSeconds})
	if _, err := f.s.sfn.StartExecution(f.ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(f.s.machine("ConfirmStateMachine").ARN), Name: aws.String(c.ID), Input: aws.String(string(input)),
	}); err != nil {
		f.Fatalf("start execution: %v", err)
	}
	return c.ID
}
