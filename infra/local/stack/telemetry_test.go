package stack

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/countersign/countersign/shared/telemetry"
	"github.com/countersign/countersign/shared/telemetry/otlp"
)

// otlpReceiver is an OTLP/HTTP traces receiver: it decodes each export
// with the official OTLP protobuf types and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	// service is the service.name of the last export's resource.
	service string
	bad     []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	fail := func(format string) {
		r.mu.Lock()
		r.bad = append(r.bad, format)
		r.mu.Unlock()
		http.Error(w, format, http.StatusBadRequest)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		fail("want POST /v1/traces application/x-protobuf, got " + req.Method + " " + req.URL.Path + " " + req.Header.Get("Content-Type"))
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, 8<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			fail("gzip: " + err.Error())
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		fail("read: " + err.Error())
		return
	}
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &ex); err != nil {
		fail("decode: " + err.Error())
		return
	}
	r.mu.Lock()
	for _, rs := range ex.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// inTrace returns the received spans of trace id by name.
func (r *otlpReceiver) inTrace(traceID []byte) map[string][]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*tracepb.Span{}
	for _, s := range r.spans {
		if bytes.Equal(s.TraceId, traceID) {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// startTracing points the SDK at a receiver started here, as
// OTEL_EXPORTER_OTLP_ENDPOINT would, and turns metrics' registry on.
func startTracing(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "countersign-e2e", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
	shutdown, err := otlp.Start(context.Background(), &otlp.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !telemetry.Tracing() {
		t.Fatal("otlp.Start with an endpoint did not turn tracing on")
	}
	t.Cleanup(func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return rcv
}

// TestConfirmedCallIsOneTrace: with an OTLP endpoint set, a confirmed call
// through the local stack (call -> 202 -> approve -> redeem -> upstream)
// reaches a real OTLP receiver as one trace holding the call with its
// decision, the pause, the workflow's notify task, the approval, the
// redemption and the upstream call; the upstream gets the upstream span's
// traceparent; /metrics counts the same story.
func TestConfirmedCallIsOneTrace(t *testing.T) {
	rcv := startTracing(t)
	h := newHarness(t, harnessOptions{})

	// The agent's own trace: the call joins it (HTTP traceparent).
	traceHex, parentHex := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := h.call("cs_test_ask", deleteContact12, "traceparent", "00-"+traceHex+"-"+parentHex+"-01")
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	expect(t, h.post(h.approvalLink(id), "approve", nil, "application/json"), http.StatusOK, "")
	// The redemption carries no traceparent: it joins through the record.
	expect(t, h.call("cs_test_ask", redeemOf(deleteContact12, id)), http.StatusOK, "")

	traceID, _ := hex.DecodeString(traceHex)
	want := []string{"countersign.call", "countersign.pause", "countersign.task notify", "countersign.approve", "countersign.redeem", "DELETE"}
	var got map[string][]*tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for {
		telemetry.Flush(context.Background())
		got = rcv.inTrace(traceID)
		missing := []string{}
		for _, n := range want {
			if len(got[n]) == 0 {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			rcv.mu.Lock()
			t.Fatalf("trace %s lacks %v after 10 s; received %d spans, receiver errors %v", traceHex, missing, len(rcv.spans), rcv.bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rcv.service != "countersign-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's countersign-e2e", rcv.service)
	}

	call := got["countersign.call"][0]
	if hex.EncodeToString(call.ParentSpanId) != parentHex {
		t.Errorf("call span's parent = %x, want the agent's span %s", call.ParentSpanId, parentHex)
	}
	for k, v := range map[string]string{"countersign.decision.tier": "confirm", "countersign.decision.outcome": "pause",
		"countersign.decision.verdict": "escalate", "countersign.call.action": "confirmation_required", "countersign.connection": "crm"} {
		if a := attr(call, k); a.GetStringValue() != v {
			t.Errorf("call span %s = %v, want %q", k, a, v)
		}
	}
	if a := attr(call, "countersign.decision.rule"); a.GetStringValue() == "" {
		t.Error("call span has no countersign.decision.rule")
	}
	pause := got["countersign.pause"][0]
	if !bytes.Equal(pause.ParentSpanId, call.SpanId) {
		t.Error("the pause is not the call's child")
	}
	for _, name := range []string{"countersign.approve", "countersign.redeem", "countersign.task notify"} {
		if s := got[name][0]; !bytes.Equal(s.ParentSpanId, pause.SpanId) {
			t.Errorf("%s's parent = %x, want the pause %x", name, s.ParentSpanId, pause.SpanId)
		}
	}
	if a := attr(got["countersign.approve"][0], "countersign.approval.outcome"); a.GetStringValue() != "approved" {
		t.Errorf("approve span outcome = %v", a)
	}
	redeem := got["countersign.redeem"][0]
	if len(redeem.Links) != 1 {
		t.Errorf("redeem span links = %d, want 1 (the redeeming request's own call span)", len(redeem.Links))
	}
	up := got["DELETE"][0]
	if up.Kind != tracepb.Span_SPAN_KIND_CLIENT || !bytes.Equal(up.ParentSpanId, redeem.SpanId) {
		t.Errorf("upstream span kind %v parent %x, want a client span under the redemption %x", up.Kind, up.ParentSpanId, redeem.SpanId)
	}
	if a := attr(up, "http.response.status_code"); a.GetIntValue() != http.StatusNoContent {
		t.Errorf("upstream span status code = %v", a)
	}

	// The upstream received the upstream span's traceparent, nothing else added.
	var sent string
	for _, rec := range h.upstream.Requests() {
		if rec.Method == "DELETE" && rec.Path == "/contacts/12" {
			sent = rec.Header.Get("traceparent")
		}
	}
	if wantTP := "00-" + traceHex + "-" + hex.EncodeToString(up.SpanId) + "-01"; sent != wantTP {
		t.Errorf("upstream traceparent = %q, want %q", sent, wantTP)
	}

	// /metrics tells the same story, in the Prometheus text format.
	fams := scrape(t, h)
	for _, c := range []struct {
		family string
		labels map[string]string
	}{
		{"countersign_decisions_total", map[string]string{"tier": "confirm", "outcome": "pause", "verdict": "escalate"}},
		{"countersign_pauses_total", map[string]string{"kind": "call"}},
		{"countersign_approver_decisions_total", map[string]string{"outcome": "approved"}},
		{"countersign_redemptions_total", map[string]string{"outcome": "executed"}},
		{"countersign_time_to_decision_seconds", map[string]string{"outcome": "approved"}},
		{"countersign_upstream_duration_seconds", map[string]string{"connection": "crm"}},
	} {
		if n := sample(fams[c.family], c.labels); n < 1 {
			t.Errorf("/metrics %s%v = %v, want at least 1", c.family, c.labels, n)
		}
	}
	if fams["countersign_confirmations_pending"].GetType() != dto.MetricType_GAUGE {
		t.Errorf("countersign_confirmations_pending is not a gauge")
	}
}

// scrape reads /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, h *harness) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(h.stack.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sample sums the counter values, or histogram counts, of the series
// holding labels.
func sample(f *dto.MetricFamily, labels map[string]string) float64 {
	var n float64
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range labels {
			ok = ok && have[k] == v
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			n += m.Counter.GetValue()
		case m.Histogram != nil:
			n += float64(m.Histogram.GetSampleCount())
		case m.Gauge != nil:
			n += m.Gauge.GetValue()
		}
	}
	return n
}

// TestTracingOffSendsNothingUpstream: with no OTLP endpoint the upstream
// gets the call exactly as decided, with no traceparent, even when the
// agent sent one.
func TestTracingOffSendsNothingUpstream(t *testing.T) {
	if telemetry.Tracing() {
		t.Fatal("tracing is on with no endpoint set")
	}
	h := newHarness(t, harnessOptions{})
	r := h.call("cs_test_ask", map[string]any{"connection": "crm", "method": "GET", "path": "/contacts/12", "intent": "read"},
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	expect(t, r, http.StatusOK, "")
	for _, rec := range h.upstream.Requests() {
		if v := rec.Header.Get("traceparent"); v != "" {
			t.Errorf("upstream got traceparent %q with tracing off", v)
		}
	}
}

// TestMCPToolCallSpan: an MCP tools/call whose params._meta carries a
// traceparent is a server span "tools/call {tool}" in that trace, with the
// MCP semantic conventions' attributes, and the call's span is its child.
func TestMCPToolCallSpan(t *testing.T) {
	rcv := startTracing(t)
	h := newHarness(t, harnessOptions{})
	s := h.mcpSession("cs_test_ask", clientKind{}, nil)
	traceHex := "0af7651916cd43dd8448eb211c80319c"
	r := callToolParams(t, s, &mcp.CallToolParams{Name: "crm__get_contacts_by_id", Arguments: map[string]any{"id": "12"},
		Meta: mcp.Meta{"traceparent": "00-" + traceHex + "-b7ad6b7169203331-01"}}, nil)
	if r.IsError {
		t.Fatalf("tools/call: %s", text(r))
	}
	traceID, _ := hex.DecodeString(traceHex)
	var got map[string][]*tracepb.Span
	for deadline := time.Now().Add(10 * time.Second); ; {
		telemetry.Flush(context.Background())
		if got = rcv.inTrace(traceID); len(got["tools/call crm__get_contacts_by_id"]) > 0 && len(got["countersign.call"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: got %d span names, want tools/call crm__get_contacts_by_id and its call", traceHex, len(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
	sp := got["tools/call crm__get_contacts_by_id"][0]
	if sp.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("MCP span kind %v, want server", sp.Kind)
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "crm__get_contacts_by_id", "gen_ai.operation.name": "execute_tool"} {
		if a := attr(sp, k); a.GetStringValue() != v {
			t.Errorf("MCP span %s = %v, want %q", k, a, v)
		}
	}
	if call := got["countersign.call"][0]; !bytes.Equal(call.ParentSpanId, sp.SpanId) {
		t.Error("the call span is not the MCP span's child")
	}
	if n := sample(scrape(t, h)["mcp_server_operation_duration_seconds"], map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "crm__get_contacts_by_id"}); n < 1 {
		t.Errorf("mcp_server_operation_duration_seconds count = %v, want at least 1", n)
	}
}

// TestMCPWithoutParamsTraced: with tracing on, an MCP request without
// params (tools/list sent bare, which the SDK holds as a typed nil) is
// served and traced, not a crash.
func TestMCPWithoutParamsTraced(t *testing.T) {
	rcv := startTracing(t)
	h := newHarness(t, harnessOptions{})
	r := h.raw(rawMCP{key: "cs_test_run", protocol: "2025-06-18", body: `{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}`})
	if r.status != http.StatusOK || !strings.Contains(r.body, `"tools"`) {
		t.Fatalf("tools/list without params: %d %s", r.status, r.body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		telemetry.Flush(context.Background())
		rcv.mu.Lock()
		found := false
		for _, s := range rcv.spans {
			found = found || s.Name == "tools/list"
		}
		rcv.mu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no tools/list span received")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMetricsLoopbackOnly: /metrics answers loopback clients that name a
// loopback host; a request naming another host (a page rebound to
// 127.0.0.1) is refused by the stack's one Host rule (403).
func TestMetricsLoopbackOnly(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	req, err := http.NewRequest(http.MethodGet, h.stack.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "countersign_") {
		t.Errorf("/metrics with Host evil.example: %d %s, want 403", resp.StatusCode, body)
	}
	if fams := scrape(t, h); fams["countersign_confirmations_pending"] == nil {
		t.Error("/metrics from loopback lacks countersign_confirmations_pending")
	}
}
