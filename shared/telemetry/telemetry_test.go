package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestOffAllocatesNothing: with tracing and metrics off, the helpers on the
// auto path (the call span, the decision, the upstream span, its end, the
// trace context) allocate nothing.
func TestOffAllocatesNothing(t *testing.T) {
	MetricsOff()
	EnableTracing(false)
	ctx := context.Background()
	h := http.Header{}
	n := testing.AllocsPerRun(1000, func() {
		cctx, sp := StartCall(ctx, "crm", "GET")
		Decided(sp, "auto", "execute", "rule-1", false)
		uctx, usp, began := StartUpstream(cctx, "crm", "GET", "http://127.0.0.1:1")
		Inject(uctx, h)
		usp.EndUpstream("crm", began, 200, "", nil)
		_ = TraceParent(cctx)
		sp.EndCall("executed", "", nil)
	})
	if n != 0 {
		t.Errorf("off path allocates %v times per call, want 0", n)
	}
}

// emfDoc is one EMF line as the specification describes it.
type emfDoc struct {
	AWS struct {
		Timestamp         *int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

// emfUnits are the units CloudWatch accepts (MetricDatum.Unit).
var emfUnits = map[string]bool{"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true,
	"Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true,
	"Terabits": true, "Percent": true, "Count": true, "Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true,
	"Gigabytes/Second": true, "Terabytes/Second": true, "Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
	"Gigabits/Second": true, "Terabits/Second": true, "Count/Second": true, "None": true}

// checkEMF checks one line against the Embedded Metric Format
// specification: a JSON object whose _aws member holds a numeric Timestamp
// (ms) and CloudWatchMetrics directives, each with a Namespace, at most 100
// metric definitions whose Name is a root member holding a number or an
// array of at most 100 numbers, and dimension sets of at most 30 keys,
// each a root member holding a non-empty string.
func checkEMF(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(line, &root); err != nil {
		t.Fatalf("EMF line is not a JSON object: %v: %s", err, line)
	}
	var d emfDoc
	if err := json.Unmarshal(line, &d); err != nil {
		t.Fatalf("_aws: %v", err)
	}
	if d.AWS.Timestamp == nil || *d.AWS.Timestamp < 1e12 {
		t.Errorf("_aws.Timestamp missing or not in milliseconds: %s", line)
	}
	if len(d.AWS.CloudWatchMetrics) == 0 {
		t.Errorf("no CloudWatchMetrics: %s", line)
	}
	for _, dir := range d.AWS.CloudWatchMetrics {
		if dir.Namespace == "" || len(dir.Namespace) > 255 {
			t.Errorf("Namespace %q", dir.Namespace)
		}
		if len(dir.Metrics) == 0 || len(dir.Metrics) > emfMaxMetrics {
			t.Errorf("%d metric definitions, want 1 to 100", len(dir.Metrics))
		}
		for _, m := range dir.Metrics {
			if m.Name == "" || len(m.Name) > 255 || (m.Unit != "" && !emfUnits[m.Unit]) {
				t.Errorf("metric definition %+v", m)
			}
			switch v := root[m.Name].(type) {
			case float64:
			case []any:
				if len(v) > emfMaxValues {
					t.Errorf("%s has %d values, over 100", m.Name, len(v))
				}
			default:
				t.Errorf("metric %s is not a root member holding a number: %v", m.Name, root[m.Name])
			}
		}
		if dir.Dimensions == nil {
			t.Errorf("Dimensions missing: %s", line)
		}
		for _, set := range dir.Dimensions {
			if len(set) > emfMaxDimensions {
				t.Errorf("dimension set of %d keys, over 30", len(set))
			}
			for _, k := range set {
				if s, ok := root[k].(string); !ok || strings.TrimSpace(s) == "" {
					t.Errorf("dimension %s is not a root member holding a non-empty string: %v", k, root[k])
				}
			}
		}
	}
	return root
}

// TestEMFLinesFollowTheSpecification records every instrument once and
// checks each line written against the specification.
func TestEMFLinesFollowTheSpecification(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	UseEMF(&EMF{W: &buf, Namespace: "Countersign", Properties: map[string]string{"FunctionName": "gateway"}, Now: func() time.Time { return at }})
	t.Cleanup(MetricsOff)

	Decided(Span{}, "confirm", "pause", "", false)
	Paused(context.Background(), "call", "cf_1")
	Approved(context.Background(), at, "", "cf_1", true, at.Add(-30*time.Second))
	Finalized(context.Background(), "call", "expired")
	Span{}.Redeemed("executed", nil)
	_, sp, began := StartUpstream(context.Background(), "crm", "GET", "http://127.0.0.1:1")
	sp.EndUpstream("crm", began, 503, "", nil)
	AuditVerified(2)
	MCPServed("tools/call", "crm__get", "", 3*time.Millisecond)

	want := map[string]bool{"Decisions": false, "Pauses": false, "ApproverDecisions": false, "TimeToDecision": false, "Expirations": false,
		"Redemptions": false, "UpstreamLatency": false, "UpstreamErrors": false, "AuditVerifyFailures": false, "McpServerOperationDuration": false}
	sc := bufio.NewScanner(&buf)
	lines := 0
	for sc.Scan() {
		lines++
		root := checkEMF(t, sc.Bytes())
		if root["FunctionName"] != "gateway" {
			t.Errorf("line lacks the FunctionName property: %s", sc.Bytes())
		}
		if ts := root["_aws"].(map[string]any)["Timestamp"]; ts != float64(at.UnixMilli()) {
			t.Errorf("Timestamp %v, want %d", ts, at.UnixMilli())
		}
		for name := range want {
			if _, ok := root[name]; ok {
				want[name] = true
			}
		}
		if root["Decisions"] != nil && root["Rule"] != "none" {
			t.Errorf("an empty rule must be sent as a non-empty dimension value: %s", sc.Bytes())
		}
		if v, ok := root["UpstreamErrors"]; ok && (v != float64(1) || root["ErrorType"] != "http_5xx") {
			t.Errorf("a 503 answer: %s", sc.Bytes())
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no EMF line for %s", name)
		}
	}
	if lines != 10 { // one per measurement; the pending level is not sent as EMF
		t.Errorf("%d lines, want 10:\n%s", lines, buf.String())
	}
}

// TestPrometheusTextParses: /metrics parses with Prometheus' text parser,
// and counters, histograms and the gauge hold what was recorded, label
// values with quotes, backslashes and newlines included.
func TestPrometheusTextParses(t *testing.T) {
	UsePrometheus()
	t.Cleanup(MetricsOff)
	Decided(Span{}, "auto", "execute", `odd "rule"\with`+"\nnewline", false)
	Decided(Span{}, "auto", "execute", `odd "rule"\with`+"\nnewline", false)
	Paused(context.Background(), "call", "cf_1")
	_, sp, began := StartUpstream(context.Background(), "crm", "GET", "")
	sp.EndUpstream("crm", began, 200, "", nil)

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, m := range All {
		// A family with labels and no series yet has no sample to parse.
		if fams[m.Name] == nil && len(m.Labels) == 0 {
			t.Errorf("%s missing", m.Name)
		}
	}
	d := fams["countersign_decisions_total"].GetMetric()
	if len(d) != 1 || d[0].GetCounter().GetValue() != 2 {
		t.Fatalf("decisions = %v", d)
	}
	for _, l := range d[0].Label {
		if l.GetName() == "rule" && l.GetValue() != `odd "rule"\with`+"\nnewline" {
			t.Errorf("rule label read back as %q", l.GetValue())
		}
		if l.GetName() == "verdict" && l.GetValue() != "allow" {
			t.Errorf("verdict %q, want allow", l.GetValue())
		}
	}
	if g := fams["countersign_confirmations_pending"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 1 {
		t.Errorf("pending = %v, want 1", g)
	}
	hist := fams["countersign_upstream_duration_seconds"].GetMetric()
	if len(hist) != 1 || hist[0].GetHistogram().GetSampleCount() != 1 || len(hist[0].GetHistogram().GetBucket()) != len(durationBuckets)+1 {
		t.Errorf("upstream histogram = %v", hist)
	}
	rec = httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", rec.Code)
	}
}

// TestSeriesAreBounded: a label with unexpected cardinality folds into one
// series past maxSeries instead of growing the registry.
func TestSeriesAreBounded(t *testing.T) {
	UsePrometheus()
	t.Cleanup(MetricsOff)
	for i := range maxSeries + 50 {
		Redemptions.record(1, labels{strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	Redemptions.mu.Lock()
	n := len(Redemptions.series)
	Redemptions.mu.Unlock()
	if n != maxSeries+1 {
		t.Errorf("%d series, want %d (the overflow series included)", n, maxSeries+1)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct{ tier, outcome, want string }{
		{"auto", "execute", "allow"}, {"confirm", "execute", "escalate"}, {"confirm", "pause", "escalate"},
		{"never", "deny", "deny"}, {"auto", "deny", "deny"}, {"review", "deny", "deny"},
	} {
		if got := Verdict(c.tier, c.outcome); got != c.want {
			t.Errorf("Verdict(%s, %s) = %s, want %s", c.tier, c.outcome, got, c.want)
		}
	}
}

func TestStartLambdaRefusesUnknownSetting(t *testing.T) {
	t.Cleanup(MetricsOff)
	t.Setenv("COUNTERSIGN_METRICS", "statsd")
	if err := StartLambda(); err == nil || !strings.Contains(err.Error(), "want emf or off") {
		t.Errorf("StartLambda with COUNTERSIGN_METRICS=statsd: %v", err)
	}
	t.Setenv("COUNTERSIGN_METRICS", "off")
	if err := StartLambda(); err != nil || Measuring() {
		t.Errorf("off: err %v, measuring %v", err, Measuring())
	}
	t.Setenv("COUNTERSIGN_METRICS", "")
	if err := StartLambda(); err != nil || !Measuring() {
		t.Errorf("default: err %v, measuring %v; want EMF on", err, Measuring())
	}
}

// BenchmarkAutoPathOff is what the auto path gains with tracing and
// metrics off: the helpers a call and its upstream call run.
func BenchmarkAutoPathOff(b *testing.B) {
	MetricsOff()
	EnableTracing(false)
	benchAutoPath(b)
}

// BenchmarkAutoPathPrometheus is the same with the local stack's
// registry on (a counter and a histogram per call).
func BenchmarkAutoPathPrometheus(b *testing.B) {
	UsePrometheus()
	b.Cleanup(MetricsOff)
	EnableTracing(false)
	benchAutoPath(b)
}

func benchAutoPath(b *testing.B) {
	ctx := context.Background()
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		cctx, sp := StartCall(ctx, "crm", "GET")
		Decided(sp, "auto", "execute", "rule-1", false)
		uctx, usp, began := StartUpstream(cctx, "crm", "GET", "http://127.0.0.1:1")
		Inject(uctx, h)
		usp.EndUpstream("crm", began, 200, "", nil)
		sp.EndCall("executed", "", nil)
	}
}

// TestInjectKeepsAnExistingTraceparent: with tracing on, Inject adds the
// span's traceparent to an upstream request that has none, and leaves a
// forwarded or configured one as it was approved.
func TestInjectKeepsAnExistingTraceparent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	otel.SetTracerProvider(tp)
	EnableTracing(true)
	t.Cleanup(func() { EnableTracing(false); _ = tp.Shutdown(context.Background()) })

	ctx, sp, _ := StartUpstream(context.Background(), "crm", "GET", "http://127.0.0.1:1")
	defer sp.End("", nil)
	h := http.Header{}
	Inject(ctx, h)
	if got, want := h.Get("traceparent"), TraceParent(ctx); got == "" || got != want {
		t.Errorf("traceparent = %q, want the upstream span's %q", got, want)
	}
	approved := "00-11111111111111111111111111111111-2222222222222222-01"
	h = http.Header{"Traceparent": {approved}}
	Inject(ctx, h)
	if got := h.Values("traceparent"); len(got) != 1 || got[0] != approved {
		t.Errorf("traceparent = %v, want the approved %s alone", got, approved)
	}
}
