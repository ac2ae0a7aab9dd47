// Package telemetry is countersign's observability: OpenTelemetry spans
// for the call, the decision, the pause, the approval, the redemption, the
// upstream call, the workflow tasks and MCP requests, and the counters and
// histograms an operator watches (decisions by tier and outcome, pauses,
// approvers' decisions, time to decision, expirations, redemptions,
// upstream latency and errors, pending confirmations).
//
// Both are off until a process turns them on, and free while off: the
// helpers check one atomic flag and return before building an attribute,
// a span or a label, so the auto path allocates nothing more than it did.
//
// Traces go to the global OpenTelemetry TracerProvider. This package only
// uses the API; package telemetry/otlp installs the SDK with an OTLP/HTTP
// exporter when the standard OTEL_EXPORTER_OTLP_* variables ask for it, so
// a binary that never exports does not link the SDK.
//
// Metrics have two sinks, chosen by the process: CloudWatch Embedded
// Metric Format lines on a writer (stdout on Lambda; UseEMF), and an
// in-process registry served in the Prometheus text format (the local
// stack's /metrics; UsePrometheus and Handler).
//
// The helpers named after lifecycle facts (Decided, Paused, Approved,
// Redeemed, Expired, Upstream, MCP) are the only calls the rest of the code
// makes, so that each wiring point is one or two lines.
package telemetry
