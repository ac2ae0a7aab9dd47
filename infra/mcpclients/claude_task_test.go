package mcpclients

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// taskKey is the demo configuration's ask_person key without
// ask_in_client: a program's key, whose calls its approvers decide.
const taskKey = "cs_demo_ask"

// claudeSession is Claude Code's interactive session in a tmux pane of
// its own server (a socket in the test's directory), with a temporary
// HOME and the scripted model as its API.
type claudeSession struct {
	t      testing.TB
	tmux   string
	socket string
}

// screen is what the pane shows now.
func (s *claudeSession) screen() string {
	out, _ := exec.Command(s.tmux, "-S", s.socket, "capture-pane", "-p", "-t", "cc").CombinedOutput()
	return string(out)
}

func (s *claudeSession) keys(keys ...string) {
	args := append([]string{"-S", s.socket, "send-keys", "-t", "cc"}, keys...)
	if out, err := exec.Command(s.tmux, args...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// startClaude starts `claude` on a terminal with the countersign server
// added for key, and prompt as the person's first message.
func startClaude(t *testing.T, e *env, model *scriptedModel, key, prompt string, allowed ...string) *claudeSession {
	t.Helper()
	claude, err := filepath.Abs("node_modules/.bin/claude")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned @anthropic-ai/claude-code did not install its claude binary: %v", err)
	}
	tmux := aptTool(t, "tmux") // it gives Claude Code's interactive session a terminal
	// Not t.TempDir: Claude Code writes to its directory until its last
	// process ends, which the cleanup below waits for.
	home, err := os.MkdirTemp("", "countersign-claude-")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	apiKey := "sk-ant-api03-scripted-model-for-countersign-tests-0123456789"
	env := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"ANTHROPIC_BASE_URL=" + model.url, "ENABLE_TOOL_SEARCH=false", "MCP_CONNECTION_NONBLOCKING=false", "ANTHROPIC_API_KEY=" + apiKey, "TERM=xterm-256color"}
	ctx := context.Background()
	if out, _, err := runCmd(ctx, 30*time.Second, env, claude, "mcp", "add", "--scope", "user", "--transport", "http",
		"countersign", e.mcpURL, "--header", "Authorization: Bearer "+key); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}
	// The first start's questions (theme, this API key, trusting the
	// folder) are answered in the configuration, as a person who used
	// Claude Code before has them.
	cfgPath := filepath.Join(home, ".claude", ".claude.json")
	cfg := map[string]any{}
	if b, err := os.ReadFile(cfgPath); err == nil {
		_ = json.Unmarshal(b, &cfg)
	} else {
		t.Fatalf("claude mcp add wrote no %s: %v", cfgPath, err)
	}
	cfg["hasCompletedOnboarding"] = true
	cfg["theme"] = "dark"
	cfg["customApiKeyResponses"] = map[string]any{"approved": []string{apiKey[len(apiKey)-20:]}, "rejected": []string{}}
	cfg["projects"] = map[string]any{work: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(home, "run.sh")
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&script, "export %s=%q\n", k, v)
	}
	fmt.Fprintf(&script, "cd %q\nexec %q --allowedTools %q\n", work, claude, strings.Join(allowed, ","))
	if err := os.WriteFile(run, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &claudeSession{t: t, tmux: tmux, socket: filepath.Join(home, "tmux.sock")}
	if out, err := exec.Command(tmux, "-S", s.socket, "-f", "/dev/null", "new-session", "-d", "-s", "cc", "-x", "160", "-y", "50", run).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	pid := 0
	if out, err := exec.Command(tmux, "-S", s.socket, "display-message", "-p", "-t", "cc", "#{pane_pid}").Output(); err == nil {
		fmt.Sscan(string(out), &pid)
	}
	t.Cleanup(func() {
		_ = exec.Command(tmux, "-S", s.socket, "kill-server").Run()
		for i := 0; i < 100 && pid > 0; i++ {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		for i := 0; i < 20; i++ {
			if os.RemoveAll(home) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The person writes once Claude Code has connected to countersign
	// (its client is then the key's last client seen) and shows its prompt.
	connected := false
	for deadline := time.Now().Add(60 * time.Second); !connected && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		connected = e.lastClient(key) != "" && strings.Contains(s.screen(), "❯")
	}
	if !connected {
		t.Fatalf("Claude Code did not connect to countersign; the screen:\n%s", s.screen())
	}
	time.Sleep(2 * time.Second)
	t.Logf("connected; the screen:\n%s", s.screen())
	s.keys("-l", prompt)
	s.keys("Enter")
	return s
}

// lastClient is the name of the key's last MCP client seen, "" before any.
func (e *env) lastClient(key string) string {
	req, _ := http.NewRequest(http.MethodGet, e.stack.URL+"/v1/credentials/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var me struct {
		LastClient *struct {
			Name string `json:"name"`
		} `json:"last_client"`
	}
	if json.NewDecoder(resp.Body).Decode(&me) != nil || me.LastClient == nil {
		return ""
	}
	return me.LastClient.Name
}

var consoleIDRe = regexp.MustCompile(`countersign: (cf_[A-Za-z0-9_-]+) needs approval`)

// TestClaudeCodeTask: Claude Code 2.1.332 in an interactive session on
// a terminal (tmux), its model played by a script on loopback, with the
// demo key whose approvers decide (cs_demo_ask). The model calls
// deleteContact once; countersign answers with a task, which Claude Code
// moves to the background (the model reads Claude Code's notice that a
// server-side task started, not the upstream's answer) and polls with
// tasks/get. An approver decides through the console's signed link:
// approved, the DELETE runs once at the demo CRM and Claude Code hands
// the model the upstream's answer in a turn of its own; rejected, nothing
// runs and the model is told who rejected it. The model calls nothing
// else either way. (Claude Code's non-interactive mode, -p, declares no
// tasks extension on the call, so there it gets the paused notice and
// confirmation_status.)
func TestClaudeCodeTask(t *testing.T) {
	need(t)
	for _, tc := range []struct {
		decision, contact string
		// told is what the task notification must carry.
		told []string
		runs int
	}{
		{"approve", "5", []string{"<status>completed</status>", `\"status\":204`}, 1},
		// Claude Code reports a result with isError as a failed task,
		// with the result's text.
		{"reject", "6", []string{"<status>failed</status>", "Denied (confirmation_rejected): rejected by console; nothing ran"}, 0},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			e := startStack(t)
			path := "/contacts/" + tc.contact
			model := newScriptedModel(t, "mcp__countersign__deleteContact", map[string]any{"id": tc.contact})
			s := startClaude(t, e, model, taskKey, "Delete contact "+tc.contact+" in the CRM.", "mcp__countersign__deleteContact")

			var id string
			for deadline := time.Now().Add(60 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if m := consoleIDRe.FindStringSubmatch(e.console.String()); m != nil {
					id = m[1]
				}
			}
			if id == "" {
				t.Fatalf("no confirmation was made; the screen:\n%s\nconsole:\n%s", s.screen(), e.console.String())
			}
			// The call is a task in Claude Code's background, and the
			// model's turn after the call ended without the upstream's answer.
			waitFor(t, s, "1 MCP task")
			second := model.waitTurn(t, 2)
			// The upstream's answer would show as a status of 204; a bare
			// "204" may be part of the session's id in Claude Code's notice.
			if !strings.Contains(second, "server-side task") || strings.Contains(second, `status\":204`) || strings.Contains(second, `"status":204`) {
				t.Errorf("after the call the model read %q, want Claude Code's notice of a server-side task", second)
			}
			if n := e.upstreamCount("DELETE", path); n != 0 {
				t.Fatalf("DELETE ran %d times before anyone decided", n)
			}
			t.Logf("%s is a task in Claude Code's background; the screen:\n%s", id, s.screen())

			e.decide(e.approvalLink(id), tc.decision)
			// "completed", or "failed" for a result with isError.
			waitFor(t, s, "(countersign/deleteContact) ")
			third := model.waitTurn(t, 3)
			t.Logf("after the decision the model read: %s\nthe screen:\n%s", third, s.screen())
			// Claude Code hands the model the result (its structured
			// content when it has one) in a task notification.
			if !strings.Contains(third, "<task-notification>") || !strings.Contains(third, "(countersign/deleteContact)") {
				t.Errorf("the model was not handed the task's end in a task notification")
			}
			if tc.runs == 1 && !strings.Contains(third, id) {
				t.Errorf("the task notification does not name %s (the result's structured content does)", id)
			}
			for _, want := range tc.told {
				if !strings.Contains(third, want) {
					t.Errorf("the task notification does not say %s", want)
				}
			}
			if n := e.upstreamCount("DELETE", path); n != tc.runs {
				t.Errorf("DELETE ran %d times, want %d", n, tc.runs)
			}
			writes := 0
			for _, r := range e.stack.Demo.Requests() {
				if r.Method != "GET" { // the shipped policy's show reads are GETs of the contact
					writes++
				}
			}
			if writes != tc.runs {
				t.Errorf("the demo CRM saw %+v, want %d DELETE and no other write", e.stack.Demo.Requests(), tc.runs)
			}
		})
	}
}

// waitFor waits (bounded) until the screen shows want.
func waitFor(t *testing.T, s *claudeSession, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(s.screen(), want) {
			return
		}
	}
	t.Fatalf("the screen does not show %q:\n%s", want, s.screen())
}

// aptTool finds name on PATH, installing Debian's package of that name
// with apt-get when it is missing and this runs as root (as CI does, and
// as infra/local/stack does for Chromium); it skips, naming the command,
// only when it cannot.
func aptTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := exec.LookPath("apt-get"); err == nil && os.Geteuid() == 0 {
		t.Logf("%s is missing: running apt-get install -y %s", name, name)
		for _, args := range [][]string{{"install", "-y", name}, {"update"}, {"install", "-y", name}} {
			cmd := exec.Command("apt-get", args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
	}
	t.Skipf("%s is missing and could not be installed; run: apt-get install -y %s", name, name)
	return ""
}
