package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/infra/local/stack"
)

// TestLinksCommand: `go run ./infra/local links` prints a pending
// confirmation's console link, asked of the running stack (which holds the
// store) and, once it stopped, read from the store with the key under
// --data; with nothing there it says no stack ran there.
func TestLinksCommand(t *testing.T) {
	data := t.TempDir()
	var console bytes.Buffer
	s, err := stack.Start(context.Background(), stack.Options{ConfigDir: "../config", Addr: "127.0.0.1:0", DataDir: data,
		DemoUpstream: "127.0.0.1:0", Stdout: &lockedWriter{w: &console}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Close(context.Background())
		}
	}()
	addr := strings.TrimPrefix(s.URL, "http://")
	req, _ := http.NewRequest("POST", s.URL+"/v1/calls", strings.NewReader(`{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`))
	req.Header.Set("Authorization", "Bearer cs_demo_ask")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	link := regexp.MustCompile(`http://\S+/approve/\S+`)
	pending, err := s.PendingLinks(context.Background())
	if err != nil || len(pending) != 1 || !link.MatchString(pending[0].Link) {
		t.Fatalf("pending: %+v, %v", pending, err)
	}
	want := pending[0].Link

	var running bytes.Buffer
	if err := runLinks([]string{"--config", "../config", "--data", data, "--addr", addr}, &running); err != nil {
		t.Fatalf("links while the stack runs: %v", err)
	}
	if !strings.Contains(running.String(), "1 confirmation(s) waiting for a person") || !strings.Contains(running.String(), want+"\n") {
		t.Errorf("links while the stack runs:\n%s\nwant %s", running.String(), want)
	}

	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped = true
	var after bytes.Buffer
	if err := runLinks([]string{"--config", "../config", "--data", data, "--addr", addr}, &after); err != nil {
		t.Fatalf("links after the stack stopped: %v", err)
	}
	if after.String() != running.String() {
		t.Errorf("links after the stack stopped:\n%s\nwant what the running stack gave:\n%s", after.String(), running.String())
	}

	// Nothing listens and nothing ran under this --data.
	free := freeAddr(t)
	err = runLinks([]string{"--config", "../config", "--data", t.TempDir(), "--addr", free}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no stack has run with --data") {
		t.Errorf("links on an empty data directory: %v", err)
	}
	if err := runLinks([]string{"extra"}, io.Discard); err == nil {
		t.Error("links with an argument: no error")
	}
}

// lockedWriter serialises writes from the stack's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
