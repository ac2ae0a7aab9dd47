package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/infra/local/stack"
)

// lockedBuffer is the console the stack prints approval links to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var approveLinkRe = regexp.MustCompile(`https?://\S+/approve/\S+`)

// Issue 15 finding 14: a code-mode batch is on the trail like a single
// call: its creation, the person's decision, the approved operation's run
// and the batch's end are records of the credential's chain, and
// countersign audit --verify passes over them (and fails once one of them
// is deleted).
func TestAuditScriptBatchIsOnTheTrail(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): it starts the local stack")
	}
	dir := t.TempDir()
	console := &lockedBuffer{}
	s, err := stack.Start(context.Background(), stack.Options{ConfigDir: "../config", Addr: "127.0.0.1:0", DataDir: dir,
		DemoUpstream: "127.0.0.1:0", Stdout: console})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	do := func(method, path, key, contentType, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}

	src := `const c = call('crm', 'GET', '/contacts/1'); const d = call('crm', 'DELETE', '/contacts/3'); ({name: c.body.name, deleted: d.status})`
	body, _ := json.Marshal(map[string]string{"script": src})
	status, ans := do("POST", "/v1/scripts", "cs_demo_ask", "application/json", string(body))
	conf, _ := ans["confirmation"].(map[string]any)
	if status != http.StatusAccepted || conf == nil {
		t.Fatalf("script: %d %v", status, ans)
	}
	id, _ := conf["id"].(string)

	var link string
	for deadline := time.Now().Add(10 * time.Second); link == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range approveLinkRe.FindAllString(console.String(), -1) {
			if strings.Contains(console.String(), id) {
				link = l
			}
		}
	}
	if link == "" {
		t.Fatalf("no approval link printed:\n%s", console.String())
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", "approve")
	if status, ans := do("POST", u.Path, "", "application/x-www-form-urlencoded", form.Encode()); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, ans)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, st := do("GET", "/v1/confirmations/"+id, "cs_demo_ask", "application/json", "")
		if st["status"] == "executed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch did not run: %v", st)
		}
	}
	stop()

	r := runCmd(t, "audit", "--verify", "--data", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "ok: ") {
		t.Fatalf("audit --verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "audit", "--json", "--chain", "cred:chat-user", "--data", dir)
	var actions []string
	var operation countersign.AuditRecord
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec countersign.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit --json line %q: %v", line, err)
		}
		actions = append(actions, rec.Action+" "+rec.Outcome)
		if rec.Action == "script.operation" {
			operation = rec
		}
	}
	want := "script.paused pending|confirmation.approved approved|script.operation 204 No Content|script.finished executed (204)"
	if strings.Join(actions, "|") != want {
		t.Fatalf("chat-user's chain:\n%s\nwant\n%s", strings.Join(actions, "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
	if operation.Subject != id+"#0" || operation.Method != "DELETE" || operation.Path != "/contacts/3" || operation.Binding == "" {
		t.Fatalf("operation record %+v", operation)
	}

	boltTamperer{path: filepath.Join(dir, "countersign.db")}.remove(t, "cred:chat-user", operation.Seq)
	r = runCmd(t, "audit", "--verify", "--data", dir)
	if r.code != exitFail || !strings.Contains(r.stdout, "BROKEN chain cred:chat-user") {
		t.Fatalf("audit --verify after deleting the operation's record: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
