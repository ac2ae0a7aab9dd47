package awstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
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

	"github.com/countersign/countersign/internal/lambdabuild"
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

// initSplit adds, for each function, a bootstrap that links and
// initialises the same packages but whose main is the empty handler's
// (-init.split): its init is the floor the function's own init work sits
// on (package initialisation and the larger binary), the rest is main's.
var initSplit = flag.Bool("init.split", false, "BenchmarkInit: also start each function's packages with an empty main (imports-init-ms, imports-ratio)")

// initBaseline is a directory of bootstraps built elsewhere (another
// commit), <dir>/<function>/bootstrap, started in the same pairs as this
// tree's (-init.baseline): before and after in one run, under the same
// load (baseline-init-ms, baseline-ratio).
var initBaseline = flag.String("init.baseline", "", "BenchmarkInit: a directory of another build's bootstraps (<dir>/<function>/bootstrap) to start beside this tree's")

// initGODEBUG is GODEBUG for every bootstrap BenchmarkInit starts
// (-init.godebug, e.g. inittrace=1,gctrace=1); the output of each
// function's starts is written beside its bootstrap (the emulator's too: it
// is a Go program that gets the same environment).
var initGODEBUG = flag.String("init.godebug", "", "BenchmarkInit: GODEBUG for the bootstraps; each function's starts' output is written beside its bootstrap")

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
		// One directory per work tree: two trees benchmarked at once do
		// not overwrite each other's bootstraps.
		dir := filepath.Join(cache, "countersign-initbench", fmt.Sprintf("%x", sha256.Sum256([]byte(root)))[:12])
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
		defer os.RemoveAll(filepath.Join(root, "infra", "awstest", "testdata", "initsplit")) // writeImportsOnly's
		pkgs := map[string]string{"empty": "./infra/awstest/testdata/emptyhandler"}
		for _, f := range functions {
			pkgs[f] = "./functions/" + f
			if *initSplit {
				pkg, err := writeImportsOnly(root, f)
				if err != nil {
					initBuild.err = err
					return
				}
				pkgs[f+"-imports"] = pkg
			}
		}
		modfile, err := lambdabuild.PatchedModfile(context.Background(), root, filepath.Join(dir, "goja-patched"))
		if err != nil {
			initBuild.err = err
			return
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

// writeImportsOnly writes a command (in the module, removed after the
// build) that imports every package function's main imports and runs the
// empty handler, and returns its package path: the packages are linked and
// initialised, main does nothing of the function's.
func writeImportsOnly(root, function string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "functions", function, "main.go"), nil, parser.ImportsOnly)
	if err != nil {
		return "", err
	}
	var imports strings.Builder
	for _, spec := range f.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p != "context" && p != "github.com/aws/aws-lambda-go/lambda" {
			fmt.Fprintf(&imports, "\t_ %s\n", spec.Path.Value)
		}
	}
	src := strings.Replace(emptyHandler, "\"github.com/aws/aws-lambda-go/lambda\"\n", "\"github.com/aws/aws-lambda-go/lambda\"\n\n"+imports.String(), 1)
	pkg := "infra/awstest/testdata/initsplit/" + function
	dir := filepath.Join(root, filepath.FromSlash(pkg))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return "./" + pkg, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
}

// initReport is the emulator's account of an init phase, from its start to
// the runtime's first request for an invocation; invokeReport its account
// of an invocation, from the runtime's receiving the event to its posting
// the response.
var (
	initReport   = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	invokeReport = regexp.MustCompile(`INVOKE RTDONE\(status: [a-z]+, produced bytes: [0-9]+, duration: ([0-9.]+)ms\)`)
)

// emulatedStart is what the emulator reports of a cold start.
type emulatedStart struct {
	init, invoke time.Duration // the init phase, the first invocation
	log          string        // the emulator's and the bootstrap's output
}

// emulatedColdStart starts bootstrap under the emulator with env, invokes
// it once with payload and returns the durations the emulator reports of
// the init and of that first invocation.
func emulatedColdStart(tb testing.TB, bootstrap string, env []string, payload string) emulatedStart {
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
		log := p.log.String()
		i, v := initReport.FindStringSubmatch(log), invokeReport.FindStringSubmatch(log)
		if i != nil && v != nil {
			return emulatedStart{init: parseMs(i[1]), invoke: parseMs(v[1]), log: log}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no INIT REPORT and INVOKE RTDONE in the emulator's log:\n%s", p.tail(3000))
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
// and cold start; the target is 1.3), and beside it the init and first
// invocation together, against the empty handler's (init+first-ratio):
// work made lazy must shrink that sum, not move into it. The AWS services are awsfake in this
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
			// The first invocation's duration beside the init's: work made
			// lazy leaves the init for the first invocation, so init plus
			// first invocation is the figure that shows it was cut, not moved.
			emptyFirst := make([]time.Duration, 0, b.N)
			fnFirst := make([]time.Duration, 0, b.N)
			firstRatios := make([]float64, 0, b.N)
			emptyEnv, env := base, fnEnv
			if *initGODEBUG != "" {
				emptyEnv, env = append(slices.Clone(base), "GODEBUG="+*initGODEBUG), append(slices.Clone(fnEnv), "GODEBUG="+*initGODEBUG)
			}
			var logs strings.Builder
			var imports, baseline []time.Duration
			var importsRatios, baselineRatios []float64
			for i := range b.N {
				e := emulatedColdStart(b, initBootstrap("empty"), emptyEnv, `{}`)
				// The baseline's start comes before the function's in one
				// pair, after it in the next: neither always follows the
				// empty handler.
				var o emulatedStart
				if *initBaseline != "" && i%2 == 0 {
					o = emulatedColdStart(b, filepath.Join(*initBaseline, f, "bootstrap"), env, in)
				}
				d := emulatedColdStart(b, initBootstrap(f), env, in)
				if *initBaseline != "" && i%2 == 1 {
					o = emulatedColdStart(b, filepath.Join(*initBaseline, f, "bootstrap"), env, in)
				}
				empty, fn, ratios = append(empty, e.init), append(fn, d.init), append(ratios, ms(d.init)/ms(e.init))
				emptyFirst, fnFirst = append(emptyFirst, e.init+e.invoke), append(fnFirst, d.init+d.invoke)
				firstRatios = append(firstRatios, ms(d.init+d.invoke)/ms(e.init+e.invoke))
				if *initGODEBUG != "" {
					logs.WriteString(d.log)
				}
				if *initBaseline != "" {
					baseline, baselineRatios = append(baseline, o.init), append(baselineRatios, ms(o.init)/ms(e.init))
				}
				if *initSplit {
					i := emulatedColdStart(b, initBootstrap(f+"-imports"), env, in)
					imports, importsRatios = append(imports, i.init), append(importsRatios, ms(i.init)/ms(e.init))
				}
			}
			if *initGODEBUG != "" {
				// The testing package truncates a benchmark's log: the
				// output goes to a file beside the bootstrap.
				out := filepath.Join(filepath.Dir(initBootstrap(f)), "starts.log")
				if err := os.WriteFile(out, []byte(logs.String()), 0o644); err != nil {
					b.Fatal(err)
				}
				b.Logf("%s's cold starts with GODEBUG=%s: %s", f, *initGODEBUG, out)
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
			slices.Sort(firstRatios)
			ratio, firstRatio := ratios[len(ratios)/2], firstRatios[len(firstRatios)/2]
			b.ReportMetric(ms(median(empty)), "empty-init-ms")
			b.ReportMetric(ms(median(fn)), "init-ms")
			b.ReportMetric(ratio, "ratio")
			b.ReportMetric(ms(median(emptyFirst)), "empty-init+first-ms")
			b.ReportMetric(ms(median(fnFirst)), "init+first-ms")
			b.ReportMetric(firstRatio, "init+first-ratio")
			if *initBaseline != "" {
				slices.Sort(baselineRatios)
				b.ReportMetric(ms(median(baseline)), "baseline-init-ms")
				b.ReportMetric(baselineRatios[len(baselineRatios)/2], "baseline-ratio")
			}
			if *initSplit {
				slices.Sort(importsRatios)
				b.ReportMetric(ms(median(imports)), "imports-init-ms")
				b.ReportMetric(importsRatios[len(importsRatios)/2], "imports-ratio")
			}
			b.ReportMetric(load1(), "load1")
			if b.N == 1 {
				return // the testing package's first, single-iteration run
			}
			verdict := "within"
			if ratio > 1.3 {
				verdict = "OVER"
			}
			b.Logf("%d pairs: %s init median %s (p90 %s), empty handler %s (p90 %s); median of the ratios %.2fx, %s the 1.3x target; "+
				"init and first invocation %s, empty handler %s, median of the ratios %.2fx",
				b.N, f, median(fn).Round(10*time.Microsecond), p90(fn).Round(10*time.Microsecond),
				median(empty).Round(10*time.Microsecond), p90(empty).Round(10*time.Microsecond), ratio, verdict,
				median(fnFirst).Round(10*time.Microsecond), median(emptyFirst).Round(10*time.Microsecond), firstRatio)
		})
	}
}

// parseMs is the duration of the emulator's milliseconds.
func parseMs(s string) time.Duration {
	ms, _ := strconv.ParseFloat(s, 64)
	return time.Duration(ms * float64(time.Millisecond))
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
