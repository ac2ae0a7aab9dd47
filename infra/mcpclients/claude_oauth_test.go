package mcpclients

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/internal/testenv"
)

// formSignIn is the person's browser without a screen: it follows an
// authorization URL through the development sign-in page (as email) and
// the consent page (allow), and returns the URL the server redirects to
// at the end, without loading it.
func formSignIn(t *testing.T, authURL, email string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	field := func(name, body string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.NewReplacer("&amp;", "&", "&#43;", "+").Replace(m[1])
	}
	next := authURL
	for range 8 {
		resp, err := c.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		base, _ := url.Parse(next)
		var post url.Values
		switch {
		case resp.StatusCode/100 == 3:
			loc, _ := base.Parse(resp.Header.Get("Location"))
			next = loc.String()
			continue
		case field("csrf", body) != "":
			post = url.Values{"csrf": {field("csrf", body)}, "return_to": {field("return_to", body)}, "email": {email}}
		case field("request", body) != "":
			post = url.Values{"request": {field("request", body)}, "decision": {"allow"}}
		default:
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, body)
		}
		resp, err = c.PostForm(base.String(), post)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := base.Parse(resp.Header.Get("Location"))
		if post.Get("decision") != "" {
			return loc.String()
		}
		next = loc.String()
	}
	t.Fatal("sign-in took too many steps")
	return ""
}

// TestClaudeCodeOAuth: Claude Code with no header reports the stack's
// /mcp as needing authentication; `claude mcp login` (on a terminal that
// script(1) provides) walks OAuth discovery, registers (it stopped here
// before, at "Dynamic Client Registration rejected (HTTP 404)") and opens
// the authorization URL in the "browser" (a script that writes it down);
// the person signs in on the development sign-in page and allows Claude
// Code, the browser arrives at Claude Code's loopback callback, and Claude
// Code then reports the server connected with its token.
func TestClaudeCodeOAuth(t *testing.T) {
	need(t)
	claude, err := filepath.Abs("node_modules/.bin/claude")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned @anthropic-ai/claude-code did not install its claude binary: %v", err)
	}
	// Claude Code names itself with a metadata document at claude.ai when
	// the server fetches them; this machine has no internet access, so the
	// stack has them off and Claude Code registers (RFC 7591).
	e := startStack(t, func(o *stack.Options) { o.NoClientDocuments = true })
	home := t.TempDir()
	env := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "ANTHROPIC_API_KEY="}
	ctx := context.Background()
	if out, _, err := runCmd(ctx, 30*time.Second, env, claude, "mcp", "add", "--scope", "user", "--transport", "http", "countersign", e.mcpURL); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}
	if out, _, err := runCmd(ctx, 60*time.Second, env, claude, "mcp", "get", "countersign"); err != nil || !strings.Contains(out, "Needs authentication") {
		t.Fatalf("claude mcp get before signing in: %v\n%s", err, out)
	}

	// The browser Claude Code opens is a script that writes the URL down;
	// the test is the person in that browser.
	opened := filepath.Join(home, "opened-url")
	browser := filepath.Join(home, "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Claude Code signs in only on a terminal: script(1) gives it one.
	script, err := exec.LookPath("script")
	if err != nil {
		testenv.Missing(t, testenv.Script, "script(1) is missing (it gives claude mcp login a terminal); run: apt-get install -y bsdutils")
	}
	cmd := exec.CommandContext(lctx, script, "-qec", claude+" mcp login countersign", "/dev/null")
	cmd.Env = append(os.Environ(), append(env, "BROWSER="+browser)...)
	cmd.WaitDelay = 5 * time.Second
	var printed syncBuffer
	cmd.Stdout, cmd.Stderr = &printed, &printed
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The terminal output may wrap the URL in an OSC 8 hyperlink
	// (ESC ] 8 ;; URL BEL text ESC ] 8 ;; BEL): a URL ends at a control
	// character as well as at a space.
	authRe := regexp.MustCompile(regexp.QuoteMeta(e.stack.URL) + `/oauth/authorize\?[^\s\x00-\x1f\x7f]+`)
	authURL := ""
	for deadline := time.Now().Add(30 * time.Second); authURL == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(opened)
		authURL = authRe.FindString(string(b) + " " + printed.String())
	}
	if authURL == "" {
		t.Fatalf("claude mcp login opened no authorization URL of the stack:\n%s", printed.String())
	}
	redirect := formSignIn(t, authURL, "ada@example.com")
	if !strings.Contains(redirect, "code=") || !strings.Contains(redirect, "iss=") {
		t.Fatalf("the consent did not redirect with a code and iss: %s", redirect)
	}
	// The browser arrives at Claude Code's callback.
	resp, err := http.Get(redirect)
	if err != nil {
		t.Fatalf("Claude Code's callback %s: %v\n%s", redirect, err, printed.String())
	}
	resp.Body.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("claude mcp login: %v\n%s", err, printed.String())
	}
	got, _, err := runCmd(ctx, 60*time.Second, env, claude, "mcp", "get", "countersign")
	if err != nil || !connectedRe.MatchString(got) {
		t.Fatalf("claude mcp get after signing in: %v\n%s\nlogin printed:\n%s", err, got, printed.String())
	}
}
