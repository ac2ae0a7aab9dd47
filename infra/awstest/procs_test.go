package awstest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/lambdabuild"
)

// rieModule is the Lambda runtime interface emulator, built from its Go
// module (go install pkg@version: the module proxy and the checksum
// database pin it, and it stays out of go.mod).
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// proc is a process the test started, in its own process group so that
// stop ends it with its children (an emulator's bootstrap).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs cmd in its own process group, its output kept for the log, and
// registers its end with tb.Cleanup. The process is killed if the test
// binary dies (Pdeathsig).
func start(tb testing.TB, name string, cmd *exec.Cmd) *proc {
	tb.Helper()
	p := &proc{name: name, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	tb.Cleanup(p.stop)
	return p
}

// stop ends the process group: SIGTERM, then SIGKILL after two seconds.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Children that outlived the leader.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n bytes of the process's output.
func (p *proc) tail(n int) string {
	s := p.log.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// givenPorts are the ports freePort has handed out in this process.
var givenPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// freePort returns a loopback port nothing listens on right now, and that
// it never returned before: the kernel may hand out a port it just freed
// again, and two emulators given the same port would both pass waitTCP
// (the one that failed to bind finds the other listening), one of them
// answering for the other.
func freePort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		givenPorts.Lock()
		fresh := !givenPorts.m[port]
		givenPorts.m[port] = true
		givenPorts.Unlock()
		if fresh {
			return port
		}
	}
	tb.Fatal("no loopback port that was not handed out before in 100 tries")
	return 0
}

// waitHTTP polls url until it answers (any status) or the process exits.
func waitHTTP(tb testing.TB, p *proc, url string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		if p.exited() {
			tb.Fatalf("%s exited before answering on %s:\n%s", p.name, url, p.tail(4000))
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("%s did not answer on %s within %s:\n%s", p.name, url, timeout, p.tail(4000))
}

// waitTCP polls addr until it accepts a connection or the process exits.
func waitTCP(tb testing.TB, p *proc, addr string, timeout time.Duration) {
	tb.Helper()
	if err := listening(p, addr, timeout); err != nil {
		tb.Fatal(err)
	}
}

// listening is waitTCP's wait, reporting instead of failing.
func listening(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited before listening on %s:\n%s", p.name, addr, p.tail(4000))
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			if p.exited() { // another process listens there
				return fmt.Errorf("%s exited, and another process listens on %s:\n%s", p.name, addr, p.tail(4000))
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %s:\n%s", p.name, addr, timeout, p.tail(4000))
}

// buildLambdas builds the functions' bootstraps as the Makefile does for
// sam build, but for this machine's linux/amd64, into dir/<name>/bootstrap,
// the operator's tool into dir/countersign and the emulator into
// dir/aws-lambda-rie. Both go commands run at once.
func buildLambdas(ctx context.Context, root, dir string, names []string) error {
	bin := filepath.Join(dir, "bin")
	pkgs := []string{"./infra/countersign"}
	for _, n := range names {
		pkgs = append(pkgs, "./functions/"+n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	run := func(env []string, args ...string) {
		defer wg.Done()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs <- fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The bootstraps are built as make lambdas builds them: goja patched
	// to show a script no Go method (scripts/goja-patched.sh).
	modfile, err := lambdabuild.PatchedModfile(ctx, root, filepath.Join(dir, "goja-patched"))
	if err != nil {
		return err
	}
	wg.Add(2)
	go run([]string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"},
		append([]string{"build", "-modfile=" + modfile, "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin + "/"}, pkgs...)...)
	go run([]string{"GOBIN=" + dir, "CGO_ENABLED=0"}, "install", rieModule)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if err := os.Rename(filepath.Join(bin, "countersign"), filepath.Join(dir, "countersign")); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(bin, n), filepath.Join(dir, n, "bootstrap")); err != nil {
			return err
		}
	}
	return nil
}
