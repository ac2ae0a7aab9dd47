package app_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/app"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/tasks"
	"github.com/countersign/countersign/shared/workflow"
)

type nopWorkflow struct{}

func (nopWorkflow) Start(context.Context, workflow.Machine, string, []byte) (string, error) {
	return "exec", nil
}
func (nopWorkflow) SendTaskSuccess(context.Context, string, []byte) error         { return nil }
func (nopWorkflow) SendTaskFailure(context.Context, string, string, string) error { return nil }

// channel records the links it is sent.
type channel struct {
	name  string
	mu    sync.Mutex
	links []string
}

func (c *channel) Name() string { return c.name }

func (c *channel) Send(_ context.Context, ev notify.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range ev.Links {
		c.links = append(c.links, l.URL)
	}
	return nil
}

func (c *channel) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.links...)
}

func load(tb testing.TB, settings string) *config.Config {
	tb.Helper()
	dir := tb.TempDir()
	for rel, content := range map[string]string{
		"settings.json":               settings,
		"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:9", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// TestApply: what Apply puts in force is what the next confirmation, the
// next notification and the next approval page use.
func TestApply(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	signer, err := links.NewSigner(links.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	before := &channel{name: "ops"}
	first := load(t, `{"workspace": {"name": "First"}, "public_url": "https://first.example", "timeouts": {"call_seconds": 600}}`)
	a := app.New(first, app.Adapters{Store: st, Workflow: nopWorkflow{}, Signer: signer, Channels: []notify.Channel{before}}, app.Options{})
	if a.LinkBase() != "https://first.example" || a.Live() != first {
		t.Fatalf("before Apply: link base %q", a.LinkBase())
	}

	after := &channel{name: "email"}
	second := load(t, `{"workspace": {"name": "Second"}, "timeouts": {"call_seconds": 30}}`)
	a.Apply(app.Live{Config: second, Channels: []notify.Channel{after}, PublicURL: "https://api.example"})
	if a.Live() != second || a.Calls.Current() != second {
		t.Fatal("the calls do not see the configuration applied")
	}
	if a.LinkBase() != "https://api.example" {
		t.Fatalf("link base %q, want the one given", a.LinkBase())
	}

	op, err := confirm.NewOperation("chat-user", "crm", "DELETE", "/contacts/1", "/contacts/{id}", countersign.Args{Path: map[string]string{"id": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Confirm.Create(ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Operations: []countersign.Operation{op}})
	if err != nil {
		t.Fatal(err)
	}
	if wait := c.ExpiresAt.Sub(c.CreatedAt); wait != 30*time.Second {
		t.Errorf("the new confirmation waits %s, want the applied 30s", wait)
	}

	if _, err := a.NotifyTask().Handle(ctx, tasks.NotifyInput{ConfirmationID: c.ID, TaskToken: "tok"}); err != nil {
		t.Fatal(err)
	}
	if got := before.got(); len(got) != 0 {
		t.Errorf("the replaced channel was sent %q", got)
	}
	got := after.got()
	if len(got) != 1 || !strings.HasPrefix(got[0], "https://api.example/approve/"+c.ID+"?a=email") {
		t.Fatalf("the applied channel got %q, want one link on https://api.example for approver email", got)
	}

	u, _ := url.Parse(got[0])
	req := events.APIGatewayV2HTTPRequest{RawPath: u.Path, RawQueryString: u.RawQuery}
	req.RequestContext.HTTP.Method, req.RequestContext.HTTP.Path = "GET", u.Path
	resp, err := httpapi.Lambda(a.Approver())(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, "Second") || strings.Contains(resp.Body, "First") {
		t.Errorf("approval page: %d, want the applied workspace name Second\n%s", resp.StatusCode, resp.Body)
	}

	// Without a PublicURL, settings.public_url (its default here) is the base.
	a.Apply(app.Live{Config: first, Channels: []notify.Channel{after}})
	if a.LinkBase() != "https://first.example" {
		t.Errorf("link base %q, want settings.public_url", a.LinkBase())
	}
}

// TestConfigLoadsRecorded: a configuration read from S3 (an fs.FS named
// s3://...) is named by its digest like a directory, so the trail records
// its load before the first record; a changed configuration put in force
// by Apply is recorded before the next record, an unchanged one is not.
func TestConfigLoadsRecorded(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := fstest.MapFS{
		"settings.json":               {Data: []byte(`{}`)},
		"connections/crm/policy.json": {Data: []byte(`{"base_url": "http://127.0.0.1:9", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`)},
	}
	loadS3 := func() *config.Config {
		cfg, err := config.LoadFS(files, "s3://bucket/config", nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	first := loadS3()
	a := app.New(first, app.Adapters{Store: st, Workflow: nopWorkflow{}}, app.Options{})
	loads := func() []string {
		recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.Config, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var digests []string
		for _, r := range recs {
			digests = append(digests, r.Subject)
		}
		return digests
	}
	record := func() {
		if _, err := a.Audit.Append(ctx, countersign.AuditRecord{Chain: "system", Action: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	record()
	if got := loads(); len(got) != 1 || got[0] != first.Digest || !strings.HasPrefix(first.Digest, "sha256:") {
		t.Fatalf("config.loaded records %q, want the S3 configuration's digest %q", got, first.Digest)
	}
	a.Apply(app.Live{Config: loadS3()})
	record()
	if got := loads(); len(got) != 1 {
		t.Fatalf("an unchanged configuration applied was recorded again: %q", got)
	}
	files["settings.json"] = &fstest.MapFile{Data: []byte(`{"workspace": {"name": "Changed"}}`)}
	second := loadS3()
	a.Apply(app.Live{Config: second})
	record()
	if got := loads(); len(got) != 2 || got[1] != second.Digest || second.Digest == first.Digest {
		t.Fatalf("config.loaded records %q, want %q then %q", got, first.Digest, second.Digest)
	}
}
