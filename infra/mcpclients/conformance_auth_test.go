package mcpclients

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/testenv"
)

// TestConformanceAuthorization runs the conformance suite's authorization
// server scenarios against the local stack: its RFC 8414 metadata
// (authorization-server-metadata-endpoint) and the authorization code
// grant with PKCE (authorization-code-grant). The suite prints the
// authorization URL and waits on its own loopback callback; the test is
// the person, signing in on the development sign-in page and allowing the
// client, and the browser then arrives at the suite's callback. Every
// check must pass.
func TestConformanceAuthorization(t *testing.T) {
	need(t)
	node, why := node22()
	if node == "" {
		testenv.Missing(t, testenv.MCPClients, why)
	}
	e := startStack(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	callback := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	resp, err := http.Post(e.stack.URL+"/oauth/register", "application/json",
		strings.NewReader(`{"client_name": "conformance", "redirect_uris": ["`+callback+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if reg.ClientID == "" {
		t.Fatalf("registration: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "node_modules/conformance/dist/index.js", "authorization", "--url", e.stack.URL,
		"--client-id", reg.ClientID, "--resource", e.mcpURL, "-p", strconv.Itoa(port))
	cmd.Env = append(cmd.Environ(), "BROWSER=/bin/true")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	authRe := regexp.MustCompile(regexp.QuoteMeta(e.stack.URL) + `/oauth/authorize\?[^\s\x00-\x1f\x7f]+`)
	sc := bufio.NewScanner(out)
	signedIn := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if u := authRe.FindString(line); u != "" && !signedIn {
			signedIn = true
			go func() {
				// The suite starts its callback server after printing the URL.
				time.Sleep(500 * time.Millisecond)
				redirect := formSignIn(t, u, "ada@example.com")
				if r, err := http.Get(redirect); err == nil {
					r.Body.Close()
				} else {
					t.Errorf("the suite's callback: %v", err)
				}
			}()
		}
	}
	err = cmd.Wait()
	text := log.String()
	if !signedIn || err != nil || strings.Contains(text, "FAILURE") || !regexp.MustCompile(`Total: [1-9]\d* passed, 0 failed`).MatchString(text) {
		t.Fatalf("the suite's authorization scenarios (signed in: %v, exit: %v):\n%s\nstderr: %s", signedIn, err, text, stderr.String())
	}
	for _, want := range []string{"authorization-server-metadata", "authorization-code-grant"} {
		if !strings.Contains(text, want) {
			t.Errorf("the suite did not run %s:\n%s", want, text)
		}
	}
}
