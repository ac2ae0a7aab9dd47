package calls_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// newFourEyesEnv is the pipeline with one connection under four eyes.
func newFourEyesEnv(tb testing.TB) *env {
	tb.Helper()
	up := &recorder{}
	srv := httptest.NewServer(up)
	tb.Cleanup(srv.Close)
	dir := tb.TempDir()
	for rel, content := range map[string]string{
		"settings.json":    `{"approvers": {"console": true}}`,
		"credentials.json": testCredentials,
		"connections/crm/policy.json": fmt.Sprintf(`{"base_url": %q,
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"separate_approver": true}}`, srv.URL),
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	e := loadPipeline(tb, dir, nil)
	e.up = up
	return e
}

// TestCallerCannotApproveOwnFourEyesCall: whatever surface carries it, an
// answer given by the credential that made a four-eyes call is refused by
// the lifecycle, and nothing runs: the answer in the client's dialog
// (Grant) and the card's or a run_script answer (AnswerAndRun).
func TestCallerCannotApproveOwnFourEyesCall(t *testing.T) {
	del := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/9", Intent: policy.IntentWrite}
	t.Run("the dialog", func(t *testing.T) {
		e := newFourEyesEnv(t)
		asker := e.creds["chat-user"]
		op := collect(t, e, asker, del)
		cp := *del
		g := &calls.Grant{ID: confirm.NewID(), Binding: op.Binding, Approve: true, By: "client:test", ExpiresAt: e.clock.Now().Add(time.Minute)}
		if _, err := e.svc.Do(e.ctx, asker, &cp, calls.Options{Grant: g}); fault.CodeOf(err) != fault.Forbidden {
			t.Fatalf("the caller's own answer in the dialog: %v, want forbidden", err)
		}
		if n := len(e.up.seen()); n != 0 {
			t.Fatalf("the upstream was called %d times", n)
		}
	})
	t.Run("the card and run_script", func(t *testing.T) {
		e := newFourEyesEnv(t)
		asker := e.creds["chat-user"]
		cp := *del
		res, err := e.svc.Do(e.ctx, asker, &cp, calls.Options{Pause: calls.PauseGatewayRuns})
		if err != nil || res.Outcome != calls.Paused {
			t.Fatalf("pause: %+v, %v", res, err)
		}
		id := res.Confirmation.ID
		if _, _, err := e.svc.Confirm.AttachToken(e.ctx, id, "tok"); err != nil {
			t.Fatal(err)
		}
		a := confirm.Answer{Approve: true, Approver: "card", Person: asker.Person(), Credential: asker.ID}
		if _, err := e.svc.AnswerAndRun(e.ctx, id, a, nil); fault.CodeOf(err) != fault.Forbidden {
			t.Fatalf("the caller's own answer in the card: %v, want forbidden", err)
		}
		c, err := e.svc.Lookup(e.ctx, id)
		if err != nil || c.Status != countersign.StatusPending || len(e.up.seen()) != 0 {
			t.Fatalf("after a refused answer: %+v, %v, %d upstream calls; want pending, nothing run", c, err, len(e.up.seen()))
		}
		// Someone else, signed in on the page, approves it; it runs once.
		bob := &countersign.Person{Issuer: "https://idp.example.com", Subject: "bob", Email: "bob@example.com"}
		c, err = e.svc.AnswerAndRun(e.ctx, id, confirm.Answer{Approve: true, Approver: "ops", Person: bob}, nil)
		if err != nil || c.Status != countersign.StatusExecuted || len(e.up.seen()) != 1 {
			t.Fatalf("bob's approval: %+v, %v, %d upstream calls; want executed once", c, err, len(e.up.seen()))
		}
	})
}
