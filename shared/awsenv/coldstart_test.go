package awsenv_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/countersign/countersign/shared/app/gatewayapp"
	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/awsenv/awsfake"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/notify/snsmail"
	"github.com/countersign/countersign/shared/passkey"
)

// The flags of TestColdStartSteps, a measurement run by hand (one cold
// start per process; docs/performance.md, Sizes and cold start):
//
//	go test -c -o /tmp/awsenv.test ./shared/awsenv
//	for i in $(seq 100); do /tmp/awsenv.test -test.run TestColdStartSteps \
//	    -coldstart approve -coldstart.cpuprofile /tmp/cold.$i.pprof; done
//	go tool pprof -top /tmp/awsenv.test /tmp/cold.*.pprof
var (
	coldStart        = flag.String("coldstart", "", "TestColdStartSteps: the function whose main to run once (gateway, scripts, approve, operator, notify, execute, finalize)")
	coldStartProfile = flag.String("coldstart.cpuprofile", "", "TestColdStartSteps: write a CPU profile (sampled at 2 kHz) of the cold start here")
	coldStartLatency = flag.Duration("coldstart.latency", 0, "TestColdStartSteps: hold each answer of the fake this long (a round trip to AWS), to see which reads wait for which")
)

// coldMains are the functions' mains up to lambda.Start: what a cold start
// runs after package initialisation. Each returns what its first
// invocation is handed, for serve.
var coldMains = map[string]func() (http.Handler, error){
	"gateway": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.NeedOAuth|awsenv.MaySeedCredentials, awsenv.WithSignIn())
		if err != nil {
			return nil, err
		}
		return d.HTTP(), nil
	},
	"scripts": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.NeedOAuth)
		if err != nil {
			return nil, err
		}
		_ = gatewayapp.Function(d.App)
		return nil, nil
	},
	"approve": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), awsenv.NeedWorkflow|awsenv.NeedSigningKey|awsenv.NeedOAuth, awsenv.WithEmail(snsmail.Deployed), awsenv.WithSignIn())
		if err != nil {
			return nil, err
		}
		d.App.UsePasskeys(passkey.New(d.App.PasskeyDeps()))
		return d.ApproverHTTP(), nil
	},
	"operator": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), awsenv.NeedSigningKey|awsenv.NeedOAuth, awsenv.WithSignIn())
		if err != nil {
			return nil, err
		}
		return d.Operator(), nil
	},
	"notify": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), awsenv.NeedSigningKey, awsenv.WithEmail(snsmail.Deployed))
		if err != nil {
			return nil, err
		}
		_ = d.NotifyTask()
		return nil, nil
	},
	"execute": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), 0)
		if err != nil {
			return nil, err
		}
		_ = d.ExecuteTask()
		return nil, nil
	},
	"finalize": func() (http.Handler, error) {
		d, err := awsenv.Load(context.Background(), 0)
		if err != nil {
			return nil, err
		}
		_ = d.FinalizeTask()
		return nil, nil
	},
}

// TestColdStartSteps runs one function's main (-coldstart) once, in this
// process, against awsfake holding BenchmarkInit's configuration
// (infra/awstest), and logs when each request reached the fake and when
// each step ended, from the start of Load: where a cold start's time goes
// after package initialisation. With -coldstart.cpuprofile it profiles
// the run. A process runs one cold start only (the SDK's and the JSON
// codec's caches are warm after it), so a profile is built up from many
// runs (see the flags above).
//
// Without -coldstart it runs every function's main once, each in a
// subtest: each must load the deployment from the fake and answer its
// first invocation (the steps are logged, not measured).
func TestColdStartSteps(t *testing.T) {
	if *coldStart != "" {
		main, ok := coldMains[*coldStart]
		if !ok {
			t.Fatalf("-coldstart %q: no such function", *coldStart)
		}
		coldStartSteps(t, *coldStart, main)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(coldMains)) {
		t.Run(name, func(t *testing.T) { coldStartSteps(t, name, coldMains[name]) })
	}
}

func coldStartSteps(t *testing.T, name string, main func() (http.Handler, error)) {
	// BenchmarkInit's account: settings.json, one connection, two secrets.
	fake := awsfake.New()
	old := time.Now().Add(-time.Hour)
	fake.PutObject(bucket, "config/settings.json", []byte(`{"workspace": {"name": "bench"},
	  "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "countersign/ops-hook"}}]}}`), old)
	fake.PutObject(bucket, "config/connections/crm/policy.json", []byte(`{"base_url": "https://crm.example", "endpoints": [
	  {"method": "GET", "path": "/contacts/{id}"}, {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`), old)
	fake.PutSecret("countersign/ops-hook", "whsec_bench")
	fake.PutSecret("countersign/signing-key", signingKey)
	vars := map[string]string{
		"COUNTERSIGN_TABLE": "countersign-Table", "COUNTERSIGN_CONFIG_BUCKET": bucket, "COUNTERSIGN_CONFIG_PREFIX": "config/",
		"COUNTERSIGN_SECRETS_PREFIX": "countersign/", "COUNTERSIGN_SIGNING_KEY_SECRET": "countersign/signing-key",
		"COUNTERSIGN_PUBLIC_URL":                "https://abc.execute-api.us-east-1.amazonaws.com",
		"COUNTERSIGN_CONFIRM_STATE_MACHINE_ARN": confirmARN, "COUNTERSIGN_BATCH_STATE_MACHINE_ARN": batchARN,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
	}
	var (
		mu    sync.Mutex
		t0    time.Time
		steps []string
	)
	mark := func(format string, args ...any) {
		at := time.Since(t0)
		mu.Lock()
		steps = append(steps, fmt.Sprintf("%7.3f ms  %s", float64(at)/float64(time.Millisecond), fmt.Sprintf(format, args...)))
		mu.Unlock()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what := r.Method + " " + r.URL.Path
		if target := r.Header.Get("X-Amz-Target"); target != "" {
			what = target
		}
		mark("fake: %s", what)
		time.Sleep(*coldStartLatency)
		fake.ServeHTTP(w, r)
		mark("fake: %s answered", what)
	}))
	t.Cleanup(srv.Close)
	for _, svc := range []string{"DYNAMODB", "SFN", "SECRETSMANAGER", "S3", "SNS"} {
		vars["COUNTERSIGN_"+svc+"_ENDPOINT"] = srv.URL
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	if *coldStartProfile != "" {
		f, err := os.Create(*coldStartProfile)
		if err != nil {
			t.Fatal(err)
		}
		runtime.SetCPUProfileRate(2000) // StartCPUProfile's 100 Hz would see a few samples per run
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	awsenv.SetStep(func(s string) { mark("%s", s) })
	defer awsenv.SetStep(func(string) {})
	cpu0 := processCPU()
	t0 = time.Now()
	h, err := main()
	if err != nil {
		t.Fatal(err)
	}
	mark("main done (lambda.Start next); CPU time of the process (the fake's included) %.3f ms", float64(processCPU()-cpu0)/float64(time.Millisecond))
	if h != nil {
		// The first invocation: GET /healthz through the Lambda adapter, as
		// BenchmarkInit's.
		ev := `{"version":"2.0","routeKey":"GET /healthz","rawPath":"/healthz","headers":{},"requestContext":{"http":{"method":"GET","path":"/healthz"},"requestId":"bench"}}`
		var in events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal([]byte(ev), &in); err != nil {
			t.Fatal(err)
		}
		if _, err := httpapi.Lambda(h)(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		mark("first invocation (GET /healthz) answered; CPU time since the start %.3f ms", float64(processCPU()-cpu0)/float64(time.Millisecond))
	}
	t.Logf("%s cold start, after package initialisation:\n%s", name, strings.Join(steps, "\n"))
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
