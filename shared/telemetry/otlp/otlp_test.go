package otlp

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Enabled(env(c.env)); got != c.want {
				t.Errorf("Enabled = %v, want %v", got, c.want)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	e, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.URL != "https://collector:4318/v1/traces" || e.Headers["api-key"] != "a b" || e.Headers["x"] != "1" || e.Timeout != 2500*time.Millisecond || !e.Gzip {
		t.Errorf("exporter = %+v", e)
	}
	e, err = FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom"}))
	if err != nil || e.URL != "http://b:4318/custom" {
		t.Errorf("the traces endpoint is used as given: %+v %v", e, err)
	}
	for _, c := range []struct{ name, key, value, want string }{
		{"not a URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "want an http or https URL"},
		{"bad header", "OTEL_EXPORTER_OTLP_HEADERS", "novalue", "is not name=value"},
		{"bad timeout", "OTEL_EXPORTER_OTLP_TIMEOUT", "soon", "positive number of milliseconds"},
		{"bad compression", "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "want gzip or none"},
		{"certificate", "OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem", "not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", c.key: c.value}
			if _, err := FromEnv(env(m)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestStartRefusesGRPC(t *testing.T) {
	_, err := Start(context.Background(), &Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})})
	if err == nil || !strings.Contains(err.Error(), "http/protobuf only") {
		t.Errorf("grpc protocol: %v", err)
	}
}

// TestEncodeDecodesWithOfficialTypes: what Encode writes reads back with
// the official OTLP types, every attribute type, the status, the kind,
// the parent and the links included.
func TestEncodeDecodesWithOfficialTypes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("scope-a")
	ctx, parent := tr.Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(trace.Link{SpanContext: parent.SpanContext()}),
		trace.WithAttributes(attribute.String("s", "v"), attribute.Bool("b", true), attribute.Int64("i", -3), attribute.Float64("f", 1.5),
			attribute.StringSlice("ss", []string{"x", "y"})))
	child.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 1)))
	child.SetStatus(codes.Error, "boom")
	child.End()
	parent.SetStatus(codes.Ok, "")
	parent.End()

	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(Encode(rec.Ended()), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 || req.ResourceSpans[0].ScopeSpans[0].Scope.GetName() != "scope-a" {
		t.Fatalf("grouping: %v", &req)
	}
	spans := map[string]*tracepb.Span{}
	for _, s := range req.ResourceSpans[0].ScopeSpans[0].Spans {
		spans[s.Name] = s
	}
	c, p := spans["child"], spans["parent"]
	if c == nil || p == nil {
		t.Fatalf("spans: %v", spans)
	}
	pid := parent.SpanContext().SpanID()
	if string(c.ParentSpanId) != string(pid[:]) || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("child parent %x kind %v, parent kind %v", c.ParentSpanId, c.Kind, p.Kind)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "boom" || p.Status.GetCode() != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("status child %v parent %v", c.Status, p.Status)
	}
	got := map[string]string{}
	for _, kv := range c.Attributes {
		got[kv.Key] = kv.Value.String()
	}
	for k, want := range map[string]string{"s": `string_value:"v"`, "b": "bool_value:true", "i": "int_value:-3", "f": "double_value:1.5"} {
		if strings.ReplaceAll(got[k], "  ", " ") != want {
			t.Errorf("attribute %s = %s, want %s", k, got[k], want)
		}
	}
	if vs := c.Attributes[4].Value.GetArrayValue().GetValues(); len(vs) != 2 || vs[1].GetStringValue() != "y" {
		t.Errorf("string slice = %v", c.Attributes[4])
	}
	if len(c.Links) != 1 || len(c.Events) != 1 || c.Events[0].Name != "ev" || c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("links %v events %v times %d-%d", c.Links, c.Events, c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
}
