package s3config

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/config"
)

// fakeS3 is one bucket in memory: ListObjectsV2 (pages of two, to
// exercise pagination) and GetObject with If-Match, as S3 answers them.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string]fakeObject
	lists   int
	gets    []string
	failing error
	// beforeGet runs before a GetObject answers (a writer racing a read).
	beforeGet func(key string)
}

type fakeObject struct {
	data     []byte
	etag     string
	modified time.Time
}

func newFakeS3() *fakeS3 { return &fakeS3{objects: map[string]fakeObject{}} }

func (f *fakeS3) put(key, data string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum := md5.Sum([]byte(data))
	f.objects[key] = fakeObject{data: []byte(data), etag: `"` + hex.EncodeToString(sum[:]) + `"`, modified: at}
}

func (f *fakeS3) ListObjectsV2(_ context.Context, in *awslite.ListObjectsV2Input) (*awslite.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.failing != nil {
		return nil, f.failing
	}
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, in.Prefix) && k > in.ContinuationToken {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := &awslite.ListObjectsV2Output{}
	for i, k := range keys {
		if i == 2 {
			out.IsTruncated, out.NextContinuationToken = true, keys[1]
			break
		}
		o := f.objects[k]
		out.Contents = append(out.Contents, awslite.Object{Key: k, ETag: o.etag, Size: int64(len(o.data)), LastModified: o.modified})
	}
	return out, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *awslite.GetObjectInput) (*awslite.GetObjectOutput, error) {
	key := in.Key
	if f.beforeGet != nil {
		f.beforeGet(key)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, key)
	o, ok := f.objects[key]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}
	}
	if in.IfMatch != "" && in.IfMatch != o.etag {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	return &awslite.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(o.data)), ETag: o.etag}, nil
}

func (f *fakeS3) counts() (lists int, gets []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := append([]string(nil), f.gets...)
	f.gets = nil
	return f.lists, g
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const policyTemplate = `{"base_url": "https://crm.example", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": %s}]}`

func crmPolicy(tier string) string { return strings.Replace(policyTemplate, "%s", tier, 1) }

type env struct {
	s3    *fakeS3
	clock *clock
	logs  *bytes.Buffer
	src   *Source
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{s3: newFakeS3(), clock: &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, logs: &bytes.Buffer{}}
	old := e.clock.Now().Add(-time.Hour)
	e.s3.put("config/settings.json", `{"workspace": {"name": "Acme"}}`, old)
	e.s3.put("config/connections/crm/policy.json", crmPolicy("true"), old)
	e.s3.put("config/connections/crm/tools/archive.json", `{"name": "archive_contact", "call": {"method": "POST", "path": "/contacts/{id}/archive"}}`, old)
	e.s3.put("other/settings.json", `not even JSON`, old)
	e.s3.put("config/folder/", ``, old)
	e.src = New(e.s3, Options{Bucket: "cfg-bucket", Prefix: "config", Now: e.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		Load: func(_ context.Context, fsys fs.FS, name string) (*config.Config, error) {
			return config.LoadFS(fsys, name, nil)
		}})
	return e
}

func tierOf(cfg *config.Config) string {
	m, ok := cfg.Policy.Resolve("crm", "DELETE", "/contacts/1")
	if !ok {
		return "unresolved"
	}
	return m.Endpoint.Tier.String()
}

func TestLoadAndCheck(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	cfg, err := e.src.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Dir != "s3://cfg-bucket/config/" || tierOf(cfg) != "confirm" || len(cfg.Connections["crm"].Tools) != 1 {
		t.Fatalf("loaded %s, tier %s", cfg.Dir, tierOf(cfg))
	}
	if _, gets := e.s3.counts(); len(gets) != 3 {
		t.Fatalf("Load read %q, want the three objects under the prefix", gets)
	}

	// Within Every nothing is even listed.
	e.clock.add(DefaultEvery - time.Second)
	if _, changed := e.src.Check(ctx); changed {
		t.Fatal("Check changed the configuration before Every")
	}
	if lists, _ := e.s3.counts(); lists != 2 { // Load's listing: two pages
		t.Fatalf("%d list calls, want none since Load's", lists-2)
	}

	// A change is picked up at the first check after Every; only the
	// changed object is read.
	e.s3.put("config/connections/crm/policy.json", crmPolicy(`"never"`), e.clock.Now().Add(-10*time.Second))
	e.clock.add(time.Second)
	next, changed := e.src.Check(ctx)
	if !changed || tierOf(next) != "never" || e.src.Current() != next {
		t.Fatalf("Check = %v, changed %v; want the new tier never", next, changed)
	}
	if _, gets := e.s3.counts(); len(gets) != 1 || gets[0] != "config/connections/crm/policy.json" {
		t.Errorf("the check read %q, want only the changed object", gets)
	}

	// Nothing changed: a listing, no read, no new configuration.
	e.clock.add(DefaultEvery)
	if _, changed := e.src.Check(ctx); changed {
		t.Error("Check reported a change when nothing changed")
	}
	if _, gets := e.s3.counts(); len(gets) != 0 {
		t.Errorf("an unchanged configuration was read again: %q", gets)
	}
	if !strings.Contains(e.logs.String(), `"msg":"configuration change put in force"`) {
		t.Errorf("the change was not logged:\n%s", e.logs)
	}
}

func TestRefusedChangeKeepsTheConfigurationInForce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	good, err := e.src.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.s3.counts()
	e.s3.put("config/connections/crm/policy.json", crmPolicy("false"), e.clock.Now())
	for range 3 {
		e.clock.add(DefaultEvery)
		if _, changed := e.src.Check(ctx); changed {
			t.Fatal("an invalid configuration was put in force")
		}
	}
	if e.src.Current() != good || tierOf(e.src.Current()) != "confirm" {
		t.Fatal("the configuration in force changed")
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "configuration change refused"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, logs)
	}
	for _, want := range []string{`"level":"ERROR"`, "s3://cfg-bucket/config/connections/crm/policy.json: endpoints[0].confirm: false is not allowed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the refusal log lacks %s:\n%s", want, logs)
		}
	}
	if _, gets := e.s3.counts(); len(gets) != 1 {
		t.Errorf("the refused object was read %d times, want once", len(gets))
	}

	// Fixing it puts the fix in force.
	e.s3.put("config/connections/crm/policy.json", crmPolicy(`"review"`), e.clock.Now())
	e.clock.add(DefaultEvery)
	if next, changed := e.src.Check(ctx); !changed || tierOf(next) != "review" {
		t.Fatalf("the fixed configuration was not put in force: %v", changed)
	}
}

func TestChangeWaitsForItsWritesToSettle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.add(DefaultEvery)
	e.s3.put("config/connections/crm/policy.json", crmPolicy(`"review"`), e.clock.Now().Add(-time.Second))
	if _, changed := e.src.Check(ctx); changed {
		t.Fatal("a change written a second ago was put in force")
	}
	e.clock.add(time.Second) // now DefaultSettle after the write: no need to wait Every
	if next, changed := e.src.Check(ctx); !changed || tierOf(next) != "review" {
		t.Fatal("the settled change was not put in force")
	}
}

func TestCheckSurvivesS3(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	e.s3.failing = errors.New("ServiceUnavailable: slow down")
	e.clock.add(DefaultEvery)
	if _, changed := e.src.Check(ctx); changed || e.src.Current() == nil {
		t.Fatal("a failing S3 changed the configuration")
	}
	if !strings.Contains(e.logs.String(), "configuration not checked") {
		t.Errorf("the failure was not logged:\n%s", e.logs)
	}
	// It tries again a second later, not a whole Every.
	e.s3.failing = nil
	e.s3.put("config/connections/crm/policy.json", crmPolicy(`"never"`), e.clock.Now().Add(-time.Minute))
	e.clock.add(time.Second)
	if next, changed := e.src.Check(ctx); !changed || tierOf(next) != "never" {
		t.Fatal("the change was not picked up once S3 answered again")
	}
}

func TestObjectChangedWhileRead(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	e.s3.put("config/connections/crm/policy.json", crmPolicy(`"review"`), e.clock.Now().Add(-time.Minute))
	raced := false
	e.s3.beforeGet = func(key string) {
		if !raced {
			raced = true
			e.s3.put(key, crmPolicy(`"never"`), e.clock.Now().Add(-time.Minute))
		}
	}
	e.clock.add(DefaultEvery)
	if _, changed := e.src.Check(ctx); changed {
		t.Fatal("a configuration read while it changed was put in force")
	}
	// The next invocation looks again at once and gets the latest.
	if next, changed := e.src.Check(ctx); !changed || tierOf(next) != "never" {
		t.Fatal("the latest configuration was not put in force")
	}
}

func TestLoadFailures(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.src.o.Prefix = "missing/"
	if _, err := e.src.Load(ctx); err == nil || !strings.Contains(err.Error(), "no configuration under s3://cfg-bucket/missing/: push one with `countersign config push DIR --bucket cfg-bucket --prefix missing/`") {
		t.Errorf("Load of an empty prefix: %v", err)
	}
	e = newEnv(t)
	e.s3.put("config/settings.json", `{"workspace": 7}`, e.clock.Now())
	if _, err := e.src.Load(ctx); err == nil || !strings.Contains(err.Error(), "s3://cfg-bucket/config/settings.json: workspace: want a JSON object") {
		t.Errorf("Load of a bad configuration: %v", err)
	}
	e = newEnv(t)
	e.s3.put("config/connections/crm/big.bin", strings.Repeat("x", MaxObjectBytes+1), e.clock.Now())
	if _, err := e.src.Load(ctx); err == nil || !strings.Contains(err.Error(), "more than a configuration file may hold") {
		t.Errorf("Load with a huge object: %v", err)
	}
}

func TestMemFS(t *testing.T) {
	m := memFS{
		"settings.json":                      []byte(`{}`),
		"connections/crm/policy.json":        []byte(`{"x":1}`),
		"connections/crm/tools/archive.json": []byte(`{}`),
		"connections/billing/policy.json":    []byte(`{}`),
	}
	if err := fstest.TestFS(m, "settings.json", "connections/crm/policy.json", "connections/crm/tools/archive.json", "connections/billing/policy.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir(m, "connections/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir of a missing directory: %v", err)
	}
	if _, err := fs.ReadFile(m, "connections"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory: %v", err)
	}
}
