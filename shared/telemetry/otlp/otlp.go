// Package otlp installs the OpenTelemetry SDK with an OTLP/HTTP (protobuf)
// span exporter when the standard environment asks for one, and leaves
// the global no-op provider in place otherwise. It is apart from package
// telemetry so that a binary that never exports does not link the SDK.
//
// Tracing is on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. FromEnv reads the other OTEL_EXPORTER_OTLP_*
// variables (headers, timeout, compression); the SDK reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG. Only http/protobuf is built in: a protocol
// of grpc or http/json is refused at start with a clear error.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/countersign/countersign/shared/telemetry"
)

// Options are what a process says of itself; nil means defaults.
type Options struct {
	// Service is the service.name when OTEL_SERVICE_NAME is not set
	// (default "countersign").
	Service string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Enabled reports whether the environment asks for traces to be exported.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Start installs the SDK when Enabled, turns telemetry's spans on and
// registers the flush run after each Lambda invocation. It returns the
// shutdown, which sends what is buffered; with tracing off it installs
// nothing and the shutdown does nothing.
func Start(ctx context.Context, o *Options) (shutdown func(context.Context) error, err error) {
	if o == nil {
		o = &Options{}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	none := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return none, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(k); p != "" {
			if p != "http/protobuf" {
				return none, fmt.Errorf("%s=%q: countersign exports OTLP over http/protobuf only", k, p)
			}
			break
		}
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return none, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", e)
	}
	exp, err := FromEnv(getenv)
	if err != nil {
		return none, err
	}
	// The SDK's default resource (host, SDK version, OTEL_RESOURCE_ATTRIBUTES);
	// service.name is OTEL_SERVICE_NAME, else one OTEL_RESOURCE_ATTRIBUTES
	// gives, else the process's own name for itself.
	res := resource.Default()
	service := getenv("OTEL_SERVICE_NAME")
	if service == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		if service = o.Service; service == "" {
			service = "countersign"
		}
	}
	if service != "" {
		if res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(service))); err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
			return none, fmt.Errorf("otlp resource: %w", err)
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	telemetry.OnFlush(tp.ForceFlush)
	telemetry.EnableTracing(true)
	return func(ctx context.Context) error {
		telemetry.EnableTracing(false)
		return tp.Shutdown(ctx)
	}, nil
}
