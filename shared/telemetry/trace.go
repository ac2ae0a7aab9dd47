package telemetry

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of countersign's spans.
const ScopeName = "github.com/countersign/countersign"

// tracingOn is set once a TracerProvider that exports is installed
// (package telemetry/otlp, or a test): until then no span is started.
var tracingOn atomic.Bool

// EnableTracing says whether spans are started. The otlp package sets it
// after installing the SDK; tests set it around a recording provider.
func EnableTracing(on bool) { tracingOn.Store(on) }

// Tracing reports whether spans are started.
func Tracing() bool { return tracingOn.Load() }

// propagator is W3C Trace Context: traceparent and tracestate.
var propagator = propagation.TraceContext{}

// Span is a span that may be off: the zero value, which every helper
// returns while tracing is off, does nothing and costs nothing.
type Span struct{ s trace.Span }

// Recording reports whether the span records.
func (s Span) Recording() bool { return s.s != nil && s.s.IsRecording() }

// End ends the span; a non-nil err sets its status to Error and
// error.type to errType (or "error" when errType is empty).
func (s Span) End(errType string, err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		if errType == "" {
			errType = "error"
		}
		s.s.SetAttributes(attribute.String("error.type", errType))
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}

func start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, Span) {
	ctx, s := otel.Tracer(ScopeName).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// Start starts an internal span named name when tracing is on.
func Start(ctx context.Context, name string) (context.Context, Span) {
	if !tracingOn.Load() {
		return ctx, Span{}
	}
	return start(ctx, name, trace.SpanKindInternal)
}

// TraceParent is the W3C traceparent of ctx's span, "" when tracing is off
// or ctx holds none. A confirmation keeps it so that the approval, the
// workflow's tasks and the redemption, which run in other requests and
// other processes, join the trace of the call that paused.
func TraceParent(ctx context.Context) string {
	if !tracingOn.Load() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// resume starts a span of name whose parent is the stored traceparent, and
// which links to ctx's own span when that is another trace: the request
// that runs it (an approver's click, a task, the agent's redemption) is
// part of the paused call's story. A zero began starts it now.
func resume(ctx context.Context, name, traceparent string, kind trace.SpanKind, began time.Time, attrs ...attribute.KeyValue) (context.Context, Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	if !began.IsZero() {
		opts = append(opts, trace.WithTimestamp(began))
	}
	current := trace.SpanContextFromContext(ctx)
	if traceparent != "" {
		stored := trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
		if stored.IsValid() && stored.TraceID() != current.TraceID() {
			if current.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: current}))
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, stored)
		}
	}
	ctx, s := otel.Tracer(ScopeName).Start(ctx, name, opts...)
	return ctx, Span{s}
}

// FromHeaders returns ctx carrying the remote span context of an incoming
// request's traceparent and tracestate (API Gateway gives header names in
// lower case), when tracing is on.
func FromHeaders(ctx context.Context, headers map[string]string) context.Context {
	if !tracingOn.Load() {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range [...]string{"traceparent", "tracestate"} {
		if v, ok := headers[k]; ok {
			c[k] = v
		} else if v, ok := headers[http.CanonicalHeaderKey(k)]; ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, c)
}

// FromHTTP is FromHeaders for a net/http request's headers.
func FromHTTP(ctx context.Context, h http.Header) context.Context {
	if !tracingOn.Load() {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromMeta returns ctx carrying the span context of an MCP request's
// params._meta traceparent and tracestate (the MCP semantic conventions),
// when tracing is on and they are strings.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if !tracingOn.Load() || meta == nil {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range [...]string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, c)
}

// since is the seconds from start to now; 0 for a zero start.
func since(start time.Time) float64 {
	if start.IsZero() {
		return 0
	}
	return time.Since(start).Seconds()
}

// flushers run after each Lambda invocation (the otlp package registers
// the SDK's ForceFlush): a frozen execution environment sends nothing.
var flushers atomic.Pointer[[]func(context.Context) error]

// OnFlush registers f to run by Flush.
func OnFlush(f func(context.Context) error) {
	for {
		old := flushers.Load()
		var fs []func(context.Context) error
		if old != nil {
			fs = append(fs, *old...)
		}
		fs = append(fs, f)
		if flushers.CompareAndSwap(old, &fs) {
			return
		}
	}
}

// Flush runs the registered flushers, bounded by ctx.
func Flush(ctx context.Context) {
	if fs := flushers.Load(); fs != nil {
		for _, f := range *fs {
			_ = f(ctx)
		}
	}
}
