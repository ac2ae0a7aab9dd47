package calls_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// countingStore counts the velocity writes (AddCount).
type countingStore struct {
	testStore
	adds atomic.Int64
}

func (s *countingStore) AddCount(ctx context.Context, key string, until time.Time) (int64, error) {
	s.adds.Add(1)
	return s.testStore.AddCount(ctx, key, until)
}

// instances is two pipelines (two gateway instances) over one store.
type instances struct {
	*env
	st  *countingStore
	two [2]*calls.Service
}

func newInstances(t *testing.T, open func(now func() time.Time) testStore) *instances {
	t.Helper()
	up := &recorder{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json":    `{"approvers": {"console": true}}`,
		"credentials.json": testCredentials,
		"connections/crm/policy.json": fmt.Sprintf(`{
  "base_url": %q,
  "endpoints": [
    {"method": "GET",    "path": "/contacts/{id}", "escalate": [{"rate": {"calls": 20, "per_seconds": 600}, "escalate": "review"}]},
    {"method": "GET",    "path": "/notes"},
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "approval": {"remember": {"max_minutes": 10, "max_calls": 3}}},
    {"method": "POST",   "path": "/notes", "confirm": true},
    {"method": "POST",   "path": "/payouts", "confirm": true, "approval": {"required": 2, "remember": {"max_minutes": 10, "max_calls": 3}}},
    {"method": "POST",   "path": "/refunds", "confirm": true, "approval": {"remember": {"max_minutes": 10, "max_calls": 3}},
     "escalate": [{"field": "body.amount", "above": 100, "escalate": "review"}]}
  ]
}`, srv.URL),
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := loadPipeline(t, dir, open)
	e.up = up
	cfg, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := &instances{env: e, st: &countingStore{testStore: e.st}}
	for i := range in.two {
		conf := &confirm.Service{Store: in.st, Workflow: nopWorkflow{}, Now: e.clock.Now}
		in.two[i] = (&calls.Service{Store: in.st, Confirm: conf, Now: e.clock.Now}).WithConfig(cfg)
	}
	e.svc = in.two[0]
	return in
}

func (in *instances) upstream(method, prefix string) int {
	n := 0
	for _, r := range in.up.seen() {
		if r.Method == method && strings.HasPrefix(r.URI, prefix) {
			n++
		}
	}
	return n
}

// TestVelocityAcrossInstances: a rate rule counts one credential's calls
// of the endpoint on every instance in one store count: the 21st call in
// the window, whichever instance takes it, is escalated (denied, the rule
// named) and never reaches the upstream; another credential has its own
// count; the next window starts again; an endpoint without a rate rule
// writes nothing to the store.
func TestVelocityAcrossInstances(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			in := newInstances(t, open)
			// At the start of a window, so that the calls below fall in one.
			in.clock.Advance(time.Duration(600-in.clock.Now().Unix()%600) * time.Second)
			get := func(i int, cred string, id int) *calls.Result {
				t.Helper()
				res, err := in.two[i%2].Do(in.ctx, in.creds[cred], &calls.Call{Connection: "crm", Method: "GET", Path: fmt.Sprintf("/contacts/%d", id), Intent: policy.IntentRead}, calls.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			for i := range 20 {
				if res := get(i, "runner", i); res.Outcome != calls.Executed {
					t.Fatalf("call %d: %s %s", i+1, res.Outcome, res.Reason)
				}
			}
			res := get(20, "runner", 20)
			if res.Outcome != calls.Denied || res.Code != fault.ReviewRequired || !res.Decision.Escalated ||
				!strings.Contains(res.Decision.Rule, "endpoints[0].escalate[0] rate 20 calls per 600 s: review") {
				t.Fatalf("21st call: %s %s escalated=%v rule %q (%s)", res.Outcome, res.Code, res.Decision.Escalated, res.Decision.Rule, res.Reason)
			}
			if n := in.upstream("GET", "/contacts/"); n != 20 {
				t.Errorf("the upstream saw %d reads, want 20", n)
			}
			if res := get(21, "agent", 1); res.Outcome != calls.Executed {
				t.Errorf("another credential's first call: %s %s", res.Outcome, res.Reason)
			}
			in.clock.Advance(600 * time.Second)
			if res := get(22, "runner", 1); res.Outcome != calls.Executed {
				t.Errorf("first call of the next window: %s %s", res.Outcome, res.Reason)
			}

			before := in.st.adds.Load()
			r, err := in.two[1].Do(in.ctx, in.creds["runner"], &calls.Call{Connection: "crm", Method: "GET", Path: "/notes", Intent: policy.IntentRead}, calls.Options{})
			if err != nil || r.Outcome != calls.Executed {
				t.Fatalf("GET /notes: %v %v", r, err)
			}
			if n := in.st.adds.Load() - before; n != 0 {
				t.Errorf("a call without a rate rule counted %d times in the store", n)
			}
		})
	}
}

// approveRemember pauses a DELETE of contact id for chat-user and
// approves it with remember (minutes), returning the grant.
func (in *instances) approveRemember(t *testing.T, cred string, id, minutes int) *countersign.ApprovalGrant {
	t.Helper()
	res, err := in.svc.Do(in.ctx, in.creds[cred], del(id), calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("pause: %+v, %v", res, err)
	}
	if _, _, err := in.svc.Confirm.AttachToken(in.ctx, res.Confirmation.ID, "tok"); err != nil {
		t.Fatal(err)
	}
	c, g, err := in.svc.AnswerRemember(in.ctx, res.Confirmation.ID, confirm.Answer{Approve: true, Approver: "ops", Remember: minutes})
	if err != nil || g == nil || c.Status != countersign.StatusApproved {
		t.Fatalf("approve with remember: %v, %+v, %v", c, g, err)
	}
	return g
}

func del(id int) *calls.Call {
	return &calls.Call{Connection: "crm", Method: "DELETE", Path: fmt.Sprintf("/contacts/%d", id), Intent: policy.IntentWrite}
}

// TestApproveAndRemember: an approval with remember creates a grant for
// the credential and endpoint; the next max_calls calls that would pause
// run at once under it, on either instance, each a use; then calls pause
// again. Another credential, another endpoint, an expired grant and a
// revoked one cover nothing.
func TestApproveAndRemember(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			in := newInstances(t, open)
			g := in.approveRemember(t, "chat-user", 1, 10)
			if !strings.HasPrefix(g.ID, "gr_") || g.CallsLeft != 3 || g.MaxCalls != 3 || g.Endpoint != "/contacts/{id}" ||
				!g.ExpiresAt.Equal(in.clock.Now().Add(10*time.Minute)) || g.GrantedBy != "ops" {
				t.Fatalf("grant %+v", g)
			}
			for i := range 3 {
				res, err := in.two[i%2].Do(in.ctx, in.creds["chat-user"], del(10+i), calls.Options{})
				if err != nil || res.Outcome != calls.Executed || res.ApprovalGrant == nil || res.ApprovalGrant.ID != g.ID || res.ApprovalGrant.CallsLeft != 2-i {
					t.Fatalf("call %d under the grant: %+v, %v", i+1, res, err)
				}
			}
			res, err := in.svc.Do(in.ctx, in.creds["chat-user"], del(13), calls.Options{})
			if err != nil || res.Outcome != calls.Paused {
				t.Fatalf("4th call: %+v, %v; want paused", res, err)
			}
			if n := in.upstream("DELETE", "/contacts/"); n != 3 {
				t.Errorf("the upstream saw %d deletes, want 3", n)
			}

			// Another credential (same endpoint), another endpoint.
			in.approveRemember(t, "chat-user", 2, 10)
			if res, err := in.svc.Do(in.ctx, in.creds["ops-key"], del(20), calls.Options{}); err != nil || res.Outcome == calls.Executed {
				t.Errorf("another credential: %+v, %v", res, err)
			}
			note := &calls.Call{Connection: "crm", Method: "POST", Path: "/notes", Intent: policy.IntentWrite, Body: []byte(`{}`), ContentType: "application/json"}
			if res, err := in.svc.Do(in.ctx, in.creds["chat-user"], note, calls.Options{}); err != nil || res.Outcome != calls.Paused {
				t.Errorf("another endpoint: %+v, %v", res, err)
			}
			// Expired, whatever the store's TTL did.
			in.clock.Advance(10 * time.Minute)
			if res, err := in.svc.Do(in.ctx, in.creds["chat-user"], del(21), calls.Options{}); err != nil || res.Outcome != calls.Paused {
				t.Errorf("after the grant's time: %+v, %v", res, err)
			}
			// Revoked: the next call on the other instance pauses.
			g3 := in.approveRemember(t, "chat-user", 3, 5)
			if _, err := in.two[0].RevokeGrant(in.ctx, in.creds["chat-user"], g3.ID); fault.CodeOf(err) != fault.Forbidden {
				t.Errorf("revoked by a credential that is no operator: %v", err)
			}
			op := &countersign.Credential{ID: "root", Operator: true}
			if _, err := in.two[0].RevokeGrant(in.ctx, op, g3.ID); err != nil {
				t.Fatal(err)
			}
			if res, err := in.two[1].Do(in.ctx, in.creds["chat-user"], del(22), calls.Options{}); err != nil || res.Outcome != calls.Paused {
				t.Errorf("after revocation: %+v, %v", res, err)
			}
			if _, err := in.two[1].RevokeGrant(in.ctx, op, g3.ID); fault.CodeOf(err) != fault.NotFound {
				t.Errorf("revoked twice: %v", err)
			}
		})
	}
}

// TestGrantUsedExactly: 20 concurrent calls against a grant of 3 calls
// run exactly 3 upstream writes; the others pause.
func TestGrantUsedExactly(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			in := newInstances(t, open)
			in.approveRemember(t, "chat-user", 1, 10)
			var wg sync.WaitGroup
			var ran, paused atomic.Int64
			for i := range 20 {
				wg.Go(func() {
					res, err := in.two[i%2].Do(in.ctx, in.creds["chat-user"], del(100+i), calls.Options{})
					switch {
					case err != nil:
						t.Error(err)
					case res.Outcome == calls.Executed:
						ran.Add(1)
					case res.Outcome == calls.Paused:
						paused.Add(1)
					}
				})
			}
			wg.Wait()
			if ran.Load() != 3 || paused.Load() != 17 || in.upstream("DELETE", "/contacts/") != 3 {
				t.Errorf("ran %d, paused %d, upstream deletes %d; want 3, 17, 3", ran.Load(), paused.Load(), in.upstream("DELETE", "/contacts/"))
			}
		})
	}
}

// TestRememberRefused: a remember the policy does not allow is refused
// with invalid_remember and decides nothing: past max_minutes, on an
// endpoint without remember, where a quorum is the rule, with a rejection.
func TestRememberRefused(t *testing.T) {
	in := newInstances(t, nil)
	pause := func(c *calls.Call) string {
		t.Helper()
		res, err := in.svc.Do(in.ctx, in.creds["chat-user"], c, calls.Options{})
		if err != nil || res.Outcome != calls.Paused {
			t.Fatalf("pause: %+v, %v", res, err)
		}
		if _, _, err := in.svc.Confirm.AttachToken(in.ctx, res.Confirmation.ID, "tok"); err != nil {
			t.Fatal(err)
		}
		return res.Confirmation.ID
	}
	note := &calls.Call{Connection: "crm", Method: "POST", Path: "/notes", Intent: policy.IntentWrite, Body: []byte(`{}`), ContentType: "application/json"}
	payout := &calls.Call{Connection: "crm", Method: "POST", Path: "/payouts", Intent: policy.IntentWrite, Body: []byte(`{}`), ContentType: "application/json"}
	for _, c := range []struct {
		name   string
		call   *calls.Call
		answer confirm.Answer
		want   string
	}{
		{"past max_minutes", del(1), confirm.Answer{Approve: true, Approver: "ops", Remember: 11}, "past the 10"},
		{"negative", del(2), confirm.Answer{Approve: true, Approver: "ops", Remember: -1}, "from 1"},
		{"endpoint without remember", note, confirm.Answer{Approve: true, Approver: "ops", Remember: 5}, "offers no remember"},
		{"quorum", payout, confirm.Answer{Approve: true, Approver: "ops", Remember: 5, Required: 2,
			Person: &countersign.Person{Issuer: "i", Subject: "s"}}, "more than one person"},
		{"with a rejection", del(3), confirm.Answer{Approve: false, Approver: "ops", Remember: 5}, "goes with approve"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := pause(c.call)
			_, g, err := in.svc.AnswerRemember(in.ctx, id, c.answer)
			if fault.CodeOf(err) != fault.InvalidRemember || g != nil || !strings.Contains(fault.ReasonOf(err), c.want) {
				t.Fatalf("got %v, %+v; want invalid_remember saying %q", err, g, c.want)
			}
			if conf, err := in.svc.Lookup(in.ctx, id); err != nil || conf.Status != countersign.StatusPending || len(conf.Approvals) != 0 {
				t.Errorf("after the refusal: %+v, %v; want pending, nothing decided", conf, err)
			}
		})
	}
	if gs, err := in.svc.GrantsOf(in.ctx, in.creds["chat-user"]); err != nil || len(gs) != 0 {
		t.Errorf("grants after refusals: %v, %v", gs, err)
	}
}

// TestGrantNeverRunsAnEscalatedCall: a grant of POST /refunds runs a
// refund under the threshold, and a refund over it is escalated (denied,
// queued for review) without using the grant.
func TestGrantNeverRunsAnEscalatedCall(t *testing.T) {
	in := newInstances(t, nil)
	refund := func(amount int) *calls.Call {
		return &calls.Call{Connection: "crm", Method: "POST", Path: "/refunds", Intent: policy.IntentWrite,
			Body: []byte(fmt.Sprintf(`{"amount": %d}`, amount)), ContentType: "application/json"}
	}
	res, err := in.svc.Do(in.ctx, in.creds["chat-user"], refund(5), calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("pause: %+v, %v", res, err)
	}
	if _, _, err := in.svc.Confirm.AttachToken(in.ctx, res.Confirmation.ID, "tok"); err != nil {
		t.Fatal(err)
	}
	if _, g, err := in.svc.AnswerRemember(in.ctx, res.Confirmation.ID, confirm.Answer{Approve: true, Approver: "ops", Remember: 10}); err != nil || g == nil {
		t.Fatalf("approve with remember: %v", err)
	}
	res, err = in.svc.Do(in.ctx, in.creds["chat-user"], refund(5000), calls.Options{})
	if err != nil || res.Outcome != calls.Denied || res.Code != fault.ReviewRequired || !res.Decision.Escalated || res.ApprovalGrant != nil {
		t.Fatalf("an escalated refund: %+v, %v; want denied review_required without the grant", res, err)
	}
	res, err = in.svc.Do(in.ctx, in.creds["chat-user"], refund(7), calls.Options{})
	if err != nil || res.Outcome != calls.Executed || res.ApprovalGrant == nil || res.ApprovalGrant.CallsLeft != 2 {
		t.Fatalf("a refund under the threshold: %+v, %v; want executed with 2 calls left", res, err)
	}
	if n := in.upstream("POST", "/refunds"); n != 1 {
		t.Errorf("the upstream saw %d refunds, want 1", n)
	}
}
