package awstest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/awsenv/awsfake"
)

// emptyHandler is the baseline of BenchmarkInit: an aws-lambda-go handler
// that does nothing, built as the functions are.
const emptyHandler = `package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, in map[string]any) (map[string]any, error) { return nil, nil })
}
`

// initFunctions are the functions BenchmarkInit starts (-init.functions).
var initFunctions = flag.String("init.functions", "gateway,scripts,approve,operator,notify,execute,finalize",
	"the functions BenchmarkInit compares with the empty handler, comma-separated")

// initBuild holds the bootstraps BenchmarkInit compares and the emulator,
// built once per process under the user's cache (overwritten each time).
var initBuild struct {
	once     sync.Once
	dir, rie string
	err      error
}

// initBootstrap is where buildInitBench put name's bootstrap ("empty" for
// the empty handler).
func initBootstrap(name string) string { return filepath.Join(initBuild.dir, name, "bootstrap") }

// buildInitBench builds the empty handler and every function as make
// lambdas builds them (goja patched, the AWS SDK without inlining,
// stripped), for this machine's linux/amd64, and the emulator.
func buildInitBench(root string, functions []string) error {
	initBuild.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			initBuild.err = err
			return
		}
		dir := filepath.Join(cache, "countersign-initbench")
		src := filepath.Join(root, "infra", "awstest", "testdata", "emptyhandler")
		for _, d := range []string{dir, src} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				initBuild.err = err
				return
			}
		}
		// The empty handler lives in the module for the build (go build
		// needs its go.mod) and is removed after.
		if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(emptyHandler), 0o644); err != nil {
			initBuild.err = err
			return
		}
		defer os.RemoveAll(src)
		modfile, err := gojaPatched(context.Background(), root, filepath.Join(dir, "goja-patched"))
		if err != nil {
			initBuild.err = err
			return
		}
		pkgs := map[string]string{"empty": "./infra/awstest/testdata/emptyhandler"}
		for _, f := range functions {
			pkgs[f] = "./functions/" + f
		}
		for name, pkg := range pkgs {
			cmd := exec.Command("go", "build", "-modfile="+modfile, "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w",
				"-gcflags=github.com/aws/...=-l", "-o", filepath.Join(dir, name, "bootstrap"), pkg)
			cmd.Dir, cmd.Env = root, append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				initBuild.err = fmt.Errorf("build %s: %v\n%s", pkg, err, out)
				return
			}
		}
		cmd := exec.Command("go", "install", rieModule)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			initBuild.err = fmt.Errorf("build the emulator: %v\n%s", err, out)
			return
		}
		initBuild.dir = dir
		initBuild.rie = filepath.Join(dir, "aws-lambda-rie")
	})
	return initBuild.err
}

// initReport is the emulator's account of an init phase, from its start to
// the runtime's first request for an invocation.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// emulatedColdStart starts bootstrap under the emulator with env, invokes it once
// with payload and returns the init duration the emulator reports.
func emulatedColdStart(tb testing.TB, bootstrap string, env []string, payload string) time.Duration {
	tb.Helper()
	port, rapi := freePort(tb), freePort(tb)
	cmd := exec.Command(initBuild.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", rapi), bootstrap)
	cmd.Dir, cmd.Env = filepath.Dir(bootstrap), env
	p := start(tb, "emulator", cmd)
	defer p.stop()
	waitTCP(tb, p, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", port), strings.NewReader(payload))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("invoke: %v\n%s", err, p.tail(3000))
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	// A task function may refuse the benchmark's empty input (the handler's
	// error is its answer, after init); a runtime error (Runtime.ExitError:
	// the bootstrap exited, init included) fails the benchmark.
	if resp.StatusCode != http.StatusOK || strings.Contains(body.String(), `"errorType":"Runtime.`) {
		tb.Fatalf("invoke: HTTP %d %s\n%s", resp.StatusCode, body.String(), p.tail(3000))
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if m := initReport.FindStringSubmatch(p.log.String()); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			return time.Duration(ms * float64(time.Millisecond))
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no INIT REPORT in the emulator's log:\n%s", p.tail(3000))
		}
	}
}

// BenchmarkInit measures cold starts under the Lambda runtime interface
// emulator: each function's init (everything its main does before it asks
// for the first invocation: the AWS configuration, its configuration from
// S3 with the secrets it names, the signing key, the graph) against an
// empty aws-lambda-go handler built the same way. One sub-benchmark per
// function; each of its b.N iterations is a pair, the empty handler's cold
// start then the function's, so a burst of load falls on both, and the
// figure is the median of the pairs' ratios (docs/performance.md, Sizes
// and cold start; the target is 1.3). The AWS services are awsfake in this
// process, answering in microseconds, so the numbers are the code's, not a
// network's. Each sub-benchmark reports the 1-minute load average at its
// end (load1).
//
//	go test -run '^$' -bench BenchmarkInit -benchtime 30x ./infra/awstest/
func BenchmarkInit(b *testing.B) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	functions := strings.Split(*initFunctions, ",")
	if err := buildInitBench(root, functions); err != nil {
		b.Fatal(err)
	}
	fake := awsfake.New()
	srv := httptest.NewServer(fake)
	b.Cleanup(srv.Close)
	old := time.Now().Add(-time.Hour)
	fake.PutObject("cfg", "config/settings.json", []byte(`{"workspace": {"name": "bench"},
	  "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`), old)
	fake.PutObject("cfg", "config/connections/crm/policy.json", []byte(`{"base_url": "https://crm.example", "endpoints": [
	  {"method": "GET", "path": "/contacts/{id}"}, {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`), old)
	fake.PutSecret("countersign/ops-hook", "whsec_bench")
	fake.PutSecret("countersign/signing-key", `{"kid":"k1","secret":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3"}`)

	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "TZ=UTC", "AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_NAME=bench", "AWS_LAMBDA_FUNCTION_TIMEOUT=29"}
	// Every function gets what the template gives the gateway, which needs
	// the most (the others ignore what they do not read).
	fnEnv := append(slices.Clone(base),
		"COUNTERSIGN_TABLE=countersign-Table", "COUNTERSIGN_CONFIG_BUCKET=cfg", "COUNTERSIGN_CONFIG_PREFIX=config/",
		"COUNTERSIGN_SECRETS_PREFIX=countersign/", "COUNTERSIGN_SIGNING_KEY_SECRET=countersign/signing-key",
		"COUNTERSIGN_PUBLIC_URL=https://abc.execute-api.us-east-1.amazonaws.com",
		"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:countersign-confirm",
		"COUNTERSIGN_BATCH_STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:countersign-batch")
	for _, svc := range []string{"DYNAMODB", "SFN", "SECRETSMANAGER", "S3", "SNS"} {
		fnEnv = append(fnEnv, "COUNTERSIGN_"+svc+"_ENDPOINT="+srv.URL)
	}
	// The HTTP functions get GET /healthz (an answer, 404 where there is no
	// such route, is enough: init is over by then); the task functions an
	// empty input, which they may refuse.
	healthz := `{"version":"2.0","routeKey":"GET /healthz","rawPath":"/healthz","headers":{},"requestContext":{"http":{"method":"GET","path":"/healthz"},"requestId":"bench"}}`
	payload := map[string]string{"gateway": healthz, "scripts": healthz, "approve": healthz, "operator": healthz}

	for _, f := range functions {
		b.Run(f, func(b *testing.B) {
			in := payload[f]
			if in == "" {
				in = `{}`
			}
			calls := len(fake.Calls())
			empty := make([]time.Duration, 0, b.N)
			fn := make([]time.Duration, 0, b.N)
			ratios := make([]float64, 0, b.N)
			for range b.N {
				e := emulatedColdStart(b, initBootstrap("empty"), base, `{}`)
				d := emulatedColdStart(b, initBootstrap(f), fnEnv, in)
				empty, fn, ratios = append(empty, e), append(fn, d), append(ratios, ms(d)/ms(e))
			}
			// What a cold start does before the first request reads S3 and
			// Secrets Manager, never the table (shared/awsenv); only the
			// HTTP functions' answers to /healthz are sure to read nothing.
			if payload[f] != "" {
				for _, c := range fake.Calls()[calls:] {
					if strings.HasPrefix(c, "dynamodb:") {
						b.Fatalf("a cold start of %s called %s", f, c)
					}
				}
			}
			slices.Sort(ratios)
			ratio := ratios[len(ratios)/2]
			b.ReportMetric(ms(median(empty)), "empty-init-ms")
			b.ReportMetric(ms(median(fn)), "init-ms")
			b.ReportMetric(ratio, "ratio")
			b.ReportMetric(load1(), "load1")
			if b.N == 1 {
				return // the testing package's first, single-iteration run
			}
			verdict := "within"
			if ratio > 1.3 {
				verdict = "OVER"
			}
			b.Logf("%d pairs: %s init median %s (p90 %s), empty handler %s (p90 %s); median of the ratios %.2fx, %s the 1.3x target",
				b.N, f, median(fn).Round(10*time.Microsecond), p90(fn).Round(10*time.Microsecond),
				median(empty).Round(10*time.Microsecond), p90(empty).Round(10*time.Microsecond), ratio, verdict)
		})
	}
}

// load1 is the 1-minute load average (0 where /proc/loadavg is missing).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func p90(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*9/10]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
