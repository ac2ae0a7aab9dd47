package script_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/script"
	"github.com/countersign/countersign/shared/store/embedded"
	upstreamapi "github.com/countersign/countersign/shared/upstream"
	"github.com/countersign/countersign/shared/workflow/local"
	"github.com/countersign/countersign/statemachines"
)

// sender is an in-memory upstream (a real one would do network I/O, which
// a synctest bubble cannot wait on).
type sender struct {
	mu   sync.Mutex
	seen []string
}

func (s *sender) Do(_ context.Context, r upstreamapi.Request) (*upstreamapi.Response, error) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.Path)
	s.mu.Unlock()
	if r.Method == http.MethodDelete {
		return &upstreamapi.Response{Status: http.StatusNoContent, Header: http.Header{}}, nil
	}
	return &upstreamapi.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)}, nil
}

func (s *sender) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// channel records approver events.
type channel struct{ events }

func (c *channel) Name() string { return "ops" }
func (c *channel) Send(ctx context.Context, ev notify.Event) error {
	return c.NotifyWait(ctx, ev)
}

// stack is the graph as the local stack wires it (the real batch state
// machine in the local engine, the real tasks), in a synctest bubble.
type stack struct {
	a      *app.App
	st     *embedded.Store
	engine *local.Engine
	up     *sender
	ch     *channel
	svc    *script.Service
	cred   *countersign.Credential
}

func newStack(t *testing.T) *stack {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json":    `{"approvers": {"console": false}}`,
		"credentials.json": `[{"id": "chat-user", "key": "k_ask", "choice": "ask_person"}]`,
		"connections/crm/policy.json": `{"base_url": "http://crm.invalid", "endpoints": [
  {"method": "GET", "path": "/contacts/{id}"}, {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st.DB().NoSync = true
	signer, err := links.NewSigner(links.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{st: st, up: &sender{}, ch: &channel{}}
	s.a = app.New(cfg, app.Adapters{Store: st, Signer: signer, Channels: []notify.Channel{s.ch}, Upstream: s.up}, app.Options{})
	if _, err := s.a.SeedCredentials(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.cred = &cfg.Credentials[0]
	invoke := func(handler any) local.LambdaFunc {
		h := lambda.NewHandler(handler)
		return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			return h.Invoke(ctx, payload)
		}
	}
	defs, err := statemachines.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	s.engine, err = local.New(local.Options{DB: st.DB(), Definitions: defs,
		Substitutions: map[string]string{"NotifyFunctionArn": "notify", "ExecuteFunctionArn": "execute", "FinalizeFunctionArn": "finalize"},
		Functions: map[string]local.LambdaFunc{
			"notify":   invoke(s.a.NotifyTask().Handle),
			"execute":  invoke(gatewayapp.ExecuteTask(s.a).Handle),
			"finalize": invoke(s.a.FinalizeTask().Handle),
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.a.SetWorkflow(s.engine)
	s.svc = gatewayapp.Scripts(s.a)
	return s
}

func (s *stack) close(t *testing.T) {
	t.Helper()
	if err := s.engine.Close(); err != nil {
		t.Error(err)
	}
	if err := s.a.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if err := s.st.Close(); err != nil {
		t.Error(err)
	}
}

func (s *stack) status(t *testing.T, id string) countersign.Status {
	t.Helper()
	c, err := s.st.GetConfirmation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return confirm.Effective(c, time.Now())
}

const expirySource = "const r = call('crm', 'GET', '/contacts/1'); const d = call('crm', 'DELETE', '/contacts/1'); d"

// TestBatchExpires: a script's batch waits 30 minutes (the batch state
// machine's timer, run by the local engine) and then expires; nothing it
// collected ever runs, and a resubmission says it expired.
func TestBatchExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t)
		defer s.close(t)
		ctx := context.Background()
		res, err := s.svc.Run(ctx, s.cred, script.Request{Source: expirySource})
		if err != nil || res.Status != script.ConfirmationRequired {
			t.Fatalf("run: %+v, %v", res, err)
		}
		id := res.Confirmation.ID
		if got := res.Confirmation.ExpiresAt.Sub(res.Confirmation.CreatedAt); got != 30*time.Minute {
			t.Errorf("the batch waits %v, want 30m", got)
		}
		synctest.Wait()
		if n := s.ch.count(notify.TypeRequested, id); n != 1 {
			t.Fatalf("%d requested events", n)
		}
		time.Sleep(30*time.Minute - time.Second)
		synctest.Wait()
		if st := s.status(t, id); st != countersign.StatusPending {
			t.Fatalf("status a second before the end: %s", st)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		c, _ := s.st.GetConfirmation(ctx, id)
		if c.Status != countersign.StatusExpired || s.ch.count(notify.TypeExpired, id) != 1 {
			t.Fatalf("stored status %s after 30 minutes, %d expired events", c.Status, s.ch.count(notify.TypeExpired, id))
		}
		if _, err := s.a.Calls.Answer(ctx, id, confirm.Answer{Approve: true, Approver: "ops"}); fault.CodeOf(err) != fault.ConfirmationExpired {
			t.Errorf("a late approval: %v", err)
		}
		if _, err := s.svc.Run(ctx, s.cred, script.Request{Source: expirySource, ConfirmationID: id}); fault.CodeOf(err) != fault.ConfirmationExpired {
			t.Errorf("resubmission: %v", err)
		}
		if _, err := s.svc.Rerun(ctx, id); fault.CodeOf(err) != fault.ConfirmationExpired {
			t.Errorf("rerun: %v", err)
		}
		if got := s.up.calls(); len(got) != 1 || got[0] != "GET /contacts/1" {
			t.Errorf("upstream saw %v, want the read only", got)
		}
	})
}

// TestBatchApprovedLate: approved a minute before it would expire, the
// batch's workflow routes to its Execute task, which runs the script again.
func TestBatchApprovedLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t)
		defer s.close(t)
		ctx := context.Background()
		res, err := s.svc.Run(ctx, s.cred, script.Request{Source: expirySource})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Confirmation.ID
		time.Sleep(29 * time.Minute)
		synctest.Wait()
		if _, err := s.a.Calls.Answer(ctx, id, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := s.status(t, id); st != countersign.StatusExecuted {
			t.Fatalf("status %s after approval, want executed", st)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if st := s.status(t, id); st != countersign.StatusExecuted {
			t.Fatalf("status %s after the timer would have fired", st)
		}
		done, err := s.svc.Run(ctx, s.cred, script.Request{Source: expirySource, ConfirmationID: id})
		if err != nil || string(done.Value) != `{"status":204,"body":null}` {
			t.Fatalf("resubmission %+v, %v", done, err)
		}
		if got := s.up.calls(); len(got) != 2 || got[1] != "DELETE /contacts/1" {
			t.Errorf("upstream saw %v", got)
		}
		if n := s.ch.count(notify.TypeExecuted, id); n != 1 {
			t.Errorf("%d executed events", n)
		}
	})
}
