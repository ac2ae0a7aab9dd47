package telemetry

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Namespace is the CloudWatch namespace of countersign's metrics unless
// COUNTERSIGN_METRICS_NAMESPACE names another.
const Namespace = "Countersign"

// StartLambda turns on what a Lambda function records: EMF lines on stdout
// (CloudWatch Logs makes them metrics in COUNTERSIGN_METRICS_NAMESPACE),
// unless COUNTERSIGN_METRICS is off. Any other value than emf or off is a
// configuration mistake, reported so that the function does not start.
func StartLambda() error {
	switch v := os.Getenv("COUNTERSIGN_METRICS"); v {
	case "", "emf":
	case "off":
		return nil
	default:
		return fmt.Errorf("COUNTERSIGN_METRICS=%q: want emf or off", v)
	}
	ns := os.Getenv("COUNTERSIGN_METRICS_NAMESPACE")
	if ns == "" {
		ns = Namespace
	}
	props := map[string]string{}
	if fn := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
		props["FunctionName"] = fn
	}
	UseEMF(&EMF{W: os.Stdout, Namespace: ns, Properties: props})
	return nil
}

// FlushTimeout bounds the flush after each invocation.
const FlushTimeout = 2 * time.Second

// Wrap runs h and then Flush, so that the spans of an invocation are sent
// before Lambda freezes the execution environment.
func Wrap[In, Out any](h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		out, err := h(ctx, in)
		if flushers.Load() != nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
			Flush(fctx)
			cancel()
		}
		return out, err
	}
}
