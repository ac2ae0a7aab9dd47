package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/awsenv/awsfake"
)

// pushEnv is an S3 bucket (awsfake) and a configuration directory.
type pushEnv struct {
	aws *awsfake.Server
	url string
	dir string
}

func newPushEnv(t *testing.T) *pushEnv {
	t.Helper()
	fake := awsfake.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRETTEST")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	e := &pushEnv{aws: fake, url: srv.URL, dir: t.TempDir()}
	e.write(t, "settings.json", `{"approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`)
	e.write(t, "credentials.json", `[{"id": "chat-user", "key": "cs_plain_key", "choice": "ask_person"}]`)
	e.write(t, "connections/crm/policy.json", `{"base_url": "https://crm.example", "headers": {"Authorization": "Bearer ${secretsmanager:countersign/crm}"},
	  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`)
	e.write(t, "connections/crm/tools/README.md", "notes")
	return e
}

func (e *pushEnv) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *pushEnv) push(t *testing.T, extra ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"config", "push", e.dir, "--bucket", "cfg", "--endpoint", e.url}, extra...)
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestConfigPush(t *testing.T) {
	e := newPushEnv(t)
	code, out, errOut := e.push(t)
	if code != exitOK {
		t.Fatalf("push: %d\n%s%s", code, out, errOut)
	}
	want := []string{"config/connections/crm/policy.json", "config/settings.json"}
	if got := e.aws.Keys("cfg"); !slices.Equal(got, want) {
		t.Fatalf("bucket holds %q, want %q (no credentials.json, no README)", got, want)
	}
	if !strings.Contains(out, "upload s3://cfg/config/settings.json\ns3://cfg/config/: 2 uploaded, 0 deleted, 0 unchanged") {
		t.Errorf("stdout:\n%s", out)
	}
	for _, w := range []string{"credentials.json: not uploaded: deployed credentials live in the table", "webhook ops reads secretsmanager:countersign/ops-hook"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if b, _ := e.aws.Object("cfg", "config/settings.json"); !strings.Contains(string(b), "countersign/ops-hook") {
		t.Errorf("settings.json uploaded as %q", b)
	}

	// Again: nothing to do.
	if code, out, _ := e.push(t); code != exitOK || !strings.Contains(out, "s3://cfg/config/ is up to date (2 files)") {
		t.Fatalf("second push: %d %s", code, out)
	}

	// A change uploads that file only; a file removed is deleted.
	e.write(t, "connections/crm/policy.json", `{"base_url": "https://crm.example", "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": "never"}]}`)
	e.write(t, "connections/billing/policy.json", `{"base_url": "https://billing.example", "endpoints": [{"method": "GET", "path": "/invoices"}]}`)
	if code, out, errOut := e.push(t, "--dry-run"); code != exitOK || !strings.Contains(out, "dry run: 2 to upload, 0 to delete, 1 unchanged") {
		t.Fatalf("dry run: %d\n%s%s", code, out, errOut)
	}
	if got := e.aws.Keys("cfg"); len(got) != 2 {
		t.Fatalf("a dry run changed the bucket: %q", got)
	}
	if code, out, _ := e.push(t); code != exitOK || !strings.Contains(out, "2 uploaded, 0 deleted, 1 unchanged") {
		t.Fatalf("push of a change: %d %s", code, out)
	}
	os.RemoveAll(filepath.Join(e.dir, "connections", "billing"))
	if code, out, _ := e.push(t); code != exitOK || !strings.Contains(out, "delete s3://cfg/config/connections/billing/policy.json") {
		t.Fatalf("push of a removal: %d %s", code, out)
	}
}

func TestConfigPushRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, e *pushEnv)
		extra []string
		want  string
	}{
		{name: "an invalid configuration", edit: func(t *testing.T, e *pushEnv) {
			e.write(t, "connections/crm/policy.json", `{"base_url": "https://crm.example", "endpoints": [{"method": "DELETE", "path": "/x", "confirm": false}]}`)
		}, want: "policy.json: endpoints[0].confirm: false is not allowed"},
		{name: "a header from the environment", edit: func(t *testing.T, e *pushEnv) {
			e.write(t, "connections/crm/policy.json", `{"base_url": "https://crm.example", "headers": {"X": "${env:CRM_TOKEN}"}, "endpoints": [{"method": "GET", "path": "/x"}]}`)
		}, want: "the deployed functions read no environment variable for headers"},
		{name: "plain keys", extra: []string{"--with-credentials"}, want: "credentials.json: [0].key: a plain key is not uploaded"},
		{name: "no bucket", extra: []string{"--bucket", ""}, want: "--bucket is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPushEnv(t)
			t.Setenv("CRM_TOKEN", "set on this machine")
			if tc.edit != nil {
				tc.edit(t, e)
			}
			code, _, errOut := e.push(t, tc.extra...)
			if code == exitOK || !strings.Contains(errOut, tc.want) {
				t.Fatalf("push: %d, stderr %q; want a failure saying %q", code, errOut, tc.want)
			}
			if got := e.aws.Keys("cfg"); len(got) != 0 {
				t.Errorf("a refused push uploaded %q", got)
			}
		})
	}
}

func TestConfigPushCredentialsHashed(t *testing.T) {
	e := newPushEnv(t)
	e.write(t, "credentials.json", `[{"id": "ops", "key_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]`)
	e.write(t, "settings.json", `{"public_url": "http://127.0.0.1:8080", "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": "s"}]}}`)
	code, out, errOut := e.push(t, "--with-credentials")
	if code != exitOK {
		t.Fatalf("push: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "public_url http://127.0.0.1:8080, a loopback address") {
		t.Errorf("no note about a loopback public_url:\n%s", errOut)
	}
	if _, ok := e.aws.Object("cfg", "config/credentials.json"); !ok {
		t.Error("credentials.json was not uploaded")
	}
}

// TestConfigPushCandidateCredentials: a candidate configuration's
// credentials.json (candidate_config) is held back like the live one's,
// and with --with-credentials its plain keys are refused.
func TestConfigPushCandidateCredentials(t *testing.T) {
	e := newPushEnv(t)
	e.write(t, "settings.json", `{"candidate_config": "candidate", "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`)
	e.write(t, "candidate/settings.json", `{"approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`)
	e.write(t, "candidate/credentials.json", `[{"id": "chat-user", "key": "cs_plain_candidate", "choice": "ask_person"}]`)
	e.write(t, "candidate/connections/crm/policy.json", `{"base_url": "https://crm.example", "headers": {"Authorization": "Bearer ${secretsmanager:countersign/crm}"},
	  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": "never"}]}`)
	code, out, errOut := e.push(t)
	if code != exitOK {
		t.Fatalf("push: %d\n%s%s", code, out, errOut)
	}
	want := []string{"config/candidate/connections/crm/policy.json", "config/candidate/settings.json", "config/connections/crm/policy.json", "config/settings.json"}
	if got := e.aws.Keys("cfg"); !slices.Equal(got, want) {
		t.Fatalf("bucket holds %q, want %q (no credentials.json of either)", got, want)
	}
	if !strings.Contains(errOut, filepath.Join("candidate", "credentials.json")+": not uploaded") {
		t.Errorf("push does not say the candidate's credentials.json was held back:\n%s", errOut)
	}
	e.write(t, "credentials.json", `[{"id": "ops", "key_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]`)
	if code, _, errOut := e.push(t, "--with-credentials"); code == exitOK || !strings.Contains(errOut, filepath.Join("candidate", "credentials.json")+": [0].key: a plain key is not uploaded") {
		t.Fatalf("--with-credentials and a candidate's plain key: exit %d\n%s", code, errOut)
	}
}

// TestConfigPushRefusesLinkedDirectory: a directory of the configuration
// that is a symbolic link (here the crm connection's tools) was validated
// through the link but not walked, so push uploaded a configuration
// without it and said it was fine. It is refused, naming the link, and
// nothing is uploaded.
func TestConfigPushRefusesLinkedDirectory(t *testing.T) {
	e := newPushEnv(t)
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "archive_contact.json"), []byte(`{"name": "archive_contact", "description": "Archive a contact",
  "exposure": {"kind": "requires-confirmation", "prompt": "Archive this contact?"}, "call": {"method": "POST", "path": "/contacts/{id}/archive"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(e.dir, "connections", "crm", "tools")
	if err := os.RemoveAll(tools); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, tools); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := e.push(t)
	if code == exitOK || !strings.Contains(errOut, filepath.Join("crm", "tools")+" is a symbolic link to a directory") {
		t.Fatalf("push: %d\n%s%s; want the link refused (bucket %q)", code, out, errOut, e.aws.Keys("cfg"))
	}
	if got := e.aws.Keys("cfg"); len(got) != 0 {
		t.Errorf("a refused push uploaded %q", got)
	}
}
