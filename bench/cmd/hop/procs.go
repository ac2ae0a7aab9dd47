package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/infra/local/democrm"
	"github.com/countersign/countersign/shared/upstream"
)

// listening is the line a role prints once it accepts connections.
const listening = "listening on "

// serveUpstream runs the demo CRM, recording nothing (a long run would
// keep every request).
func serveUpstream(addr string) error {
	crm := democrm.New()
	crm.SetRecording(false)
	return serve(addr, crm)
}

// serveProxy runs a bare reverse proxy to target on http.Transport with the
// pool settings of the gateway's upstream client (upstream.NewTransport).
// The gateway sends a plain-HTTP call on the handler's own goroutine
// instead (shared/upstream's directTransport); the proxy is left as
// httputil.ReverseProxy runs by default, the baseline the targets name.
func serveProxy(addr, target string) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-target %q: not a URL", target)
	}
	p := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: upstream.NewTransport(),
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	return serve(addr, p)
}

// serve listens on addr, announces the address on stdout, and serves h
// until stdin closes (the parent went away) or a signal arrives.
func serve(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("%shttp://%s\n", listening, ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes the pipe
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// child is a process the harness started; stop ends it by its pid.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	URL   string
	log   *os.File
	done  chan error
}

// startChild runs name with args, its stderr in logPath, and waits (at
// most 30 s) for the line on stdout that matches addrRe: its first group is
// the URL it serves.
func startChild(ctx context.Context, name, logPath string, addrRe *regexp.Regexp, path string, args ...string) (*child, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, log: logf, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { c.done <- cmd.Wait() }()
	select {
	case c.URL = <-found:
		return c, nil
	case err := <-c.done:
		c.done <- err
		c.stop()
		return nil, fmt.Errorf("%s exited before listening (%v); its log: %s", name, err, tail(logPath))
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not listen within 30 s; its log: %s", name, tail(logPath))
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
}

// stop asks the child to end (interrupt, stdin closed), then kills it
// after 10 s; only this child's pid is signalled.
func (c *child) stop() {
	_ = c.stdin.Close()
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-c.done:
		c.done <- err
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.log.Close()
}

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
