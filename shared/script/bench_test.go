package script_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/script"
	upstreamapi "github.com/countersign/countersign/shared/upstream"
)

// compare runs baseline and candidate alternately b.N times and reports
// each one's time per run and their ratio (x-baseline), so that both are
// measured in the same run under the same load. perRun divides the
// difference into a per-call overhead (0: none reported).
func compare(b *testing.B, perRun int, baseline, candidate func()) {
	b.Helper()
	compareAfter(b, perRun, nil, baseline, candidate)
}

// compareAfter is compare with idle, when set, run before each pair with
// the clocks stopped.
func compareAfter(b *testing.B, perRun int, idle, baseline, candidate func()) {
	b.Helper()
	b.ReportAllocs()
	var base, cand time.Duration
	for i := 0; i < b.N; i++ {
		if idle != nil {
			b.StopTimer()
			idle()
			b.StartTimer()
		}
		t0 := time.Now()
		baseline()
		t1 := time.Now()
		candidate()
		t2 := time.Now()
		base += t1.Sub(t0)
		cand += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cand.Nanoseconds())/n, "script-ns/op")
	b.ReportMetric(float64(base.Nanoseconds())/n, "baseline-ns/op")
	b.ReportMetric(float64(cand)/float64(base), "x-baseline")
	if perRun > 0 {
		b.ReportMetric(float64((cand-base).Nanoseconds())/n/float64(perRun), "overhead-ns/call")
	}
}

func mustRunBench(b *testing.B, e *env, src string) {
	res, err := e.svc.Run(e.ctx, e.creds["runner"], script.Request{Source: src})
	if err != nil || res.Status != script.Completed {
		b.Fatalf("run: %+v, %v", res, err)
	}
}

// directCalls makes n reads through the pipeline, as the script does.
func directCalls(b *testing.B, e *env, n int) {
	for i := 1; i <= n; i++ {
		c := &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/" + strconv.Itoa(i), Intent: policy.IntentRead}
		res, err := e.calls.Do(e.ctx, e.creds["runner"], c, calls.Options{})
		if err != nil || res.Outcome != calls.Executed {
			b.Fatalf("call: %+v, %v", res, err)
		}
	}
}

func callsScript(n int) string {
	return fmt.Sprintf("const out = []; for (let i = 1; i <= %d; i++) out.push(call('crm', 'GET', '/contacts/' + i).status); out", n)
}

// BenchmarkTenAutoCalls: a script of 10 auto-tier reads against a local
// upstream, against the same 10 calls made through the pipeline directly.
func BenchmarkTenAutoCalls(b *testing.B) {
	e := newEnv(b, script.DefaultLimits)
	src := callsScript(10)
	compare(b, 10, func() { directCalls(b, e, 10) }, func() { mustRunBench(b, e, src) })
}

// memorySender answers every call at once, so that only the gateway's own
// work is measured.
type memorySender struct{}

func (memorySender) Do(context.Context, upstreamapi.Request) (*upstreamapi.Response, error) {
	return &upstreamapi.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":1,"name":"Ada"}`)}, nil
}

// BenchmarkCallOverhead: the runner's own cost per call() (argument
// reading, binding, journal entry, the value back into JavaScript): 100
// calls in a script against the same 100 calls made directly, both
// against an upstream that answers in memory.
func BenchmarkCallOverhead(b *testing.B) {
	e := newEnv(b, script.Limits{Calls: 1000})
	e.calls.Upstream = memorySender{}
	src := callsScript(100)
	compare(b, 100, func() { directCalls(b, e, 100) }, func() { mustRunBench(b, e, src) })
}

// BenchmarkScriptOverhead: the runner's own cost per script that calls
// nothing (a sandbox, the compiled program, the watchdog, the result's
// encoding), against the least goja can do: a new runtime running the
// same compiled program. warm: the run finds a sandbox built ahead (the
// timer stops while the service builds the next ones), the latency a
// script sees when scripts do not arrive back to back; cold: runs back to
// back, so each one's sandbox is built while it waits; uncompiled: cold,
// and a script never seen before.
func BenchmarkScriptOverhead(b *testing.B) {
	const src = "({ok: true, n: [1, 2, 3]})"
	prg := goja.MustCompile("script.js", src, false)
	bare := func() {
		v, err := goja.New().RunProgram(prg)
		if err != nil || v.Export() == nil {
			b.Fatal(err)
		}
	}
	b.Run("warm", func(b *testing.B) {
		e := newEnv(b, script.DefaultLimits)
		mustRunBench(b, e, src)
		compareAfter(b, 0, e.svc.WaitWarm, bare, func() { mustRunBench(b, e, src) })
	})
	b.Run("cold", func(b *testing.B) {
		e := newEnv(b, script.DefaultLimits)
		compare(b, 0, bare, func() { mustRunBench(b, e, src) })
	})
	b.Run("uncompiled", func(b *testing.B) {
		e := newEnv(b, script.DefaultLimits)
		i := 0
		compare(b, 0, bare, func() {
			i++
			mustRunBench(b, e, src+"\n// "+strconv.Itoa(i))
		})
	})
}
