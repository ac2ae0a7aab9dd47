package telemetry

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The lifecycle's facts, one helper each, so that the code where a fact is
// known records it with one line. Each checks its flags first: with
// tracing and metrics off they return at once and allocate nothing.

// StartCall starts the span of one call through the pipeline
// ("countersign.call"), the parent of the decision's attributes, the pause
// and the upstream call.
func StartCall(ctx context.Context, connection, method string) (context.Context, Span) {
	if !tracingOn.Load() {
		return ctx, Span{}
	}
	return start(ctx, "countersign.call", trace.SpanKindInternal,
		attribute.String("countersign.connection", connection), attribute.String("http.request.method", method))
}

// Verdict is the policy's judgement in the guardrail sense, kept apart from
// the action the gateway then took: allow (runs as it is), deny (refused),
// escalate (a person, or the agent, must be asked first).
func Verdict(tier, outcome string) string {
	switch {
	case outcome == "deny":
		return "deny"
	case outcome == "execute" && tier == "auto":
		return "allow"
	}
	return "escalate"
}

// Decided records the policy decision on a call: the counter by tier,
// outcome, verdict and rule, and the call span's attributes.
func Decided(sp Span, tier, outcome, rule string, escalated bool) {
	if metricsOn.Load() {
		Decisions.slow(1, labels{tier, outcome, Verdict(tier, outcome), rule})
	}
	if sp.s == nil {
		return
	}
	sp.s.SetAttributes(attribute.String("countersign.decision.tier", tier),
		attribute.String("countersign.decision.outcome", outcome),
		attribute.String("countersign.decision.verdict", Verdict(tier, outcome)),
		attribute.String("countersign.decision.rule", rule),
		attribute.Bool("countersign.decision.escalated", escalated))
}

// EndCall ends a call span with the action taken (executed, denied,
// confirmation_required, collected, or error) and the refusal's code.
func (s Span) EndCall(action, code string, err error) {
	if s.s == nil {
		return
	}
	s.s.SetAttributes(attribute.String("countersign.call.action", action))
	if code != "" {
		s.s.SetAttributes(attribute.String("countersign.call.code", code))
	}
	s.End(code, err)
}

// Paused records a confirmation created (the pause): a call's or a script
// batch's, by kind.
func Paused(ctx context.Context, kind, id string) {
	if metricsOn.Load() {
		Pauses.slow(1, labels{kind})
		Pending.slow(1, labels{})
	}
	if tracingOn.Load() {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("countersign.confirmation.id", id),
			attribute.String("countersign.confirmation.kind", kind))
	}
}

// Approved records an approver's decision on a confirmation: the counter
// by outcome, the time from its creation, the pending level, and a span
// "countersign.approve" from began to now in the trace of the call that
// paused (traceparent), linked to the approver's own request.
func Approved(ctx context.Context, began time.Time, traceparent, id string, approved bool, created time.Time) {
	outcome := "rejected"
	if approved {
		outcome = "approved"
	}
	if metricsOn.Load() {
		ApproverDecisions.slow(1, labels{outcome})
		TimeToDecision.slow(time.Since(created).Seconds(), labels{outcome})
		Pending.slow(-1, labels{})
	}
	if !tracingOn.Load() {
		return
	}
	// The record, and so the trace to join, is known once the decision is
	// stored: the span is made afterwards, starting when the decision began.
	_, sp := resume(ctx, "countersign.approve", traceparent, trace.SpanKindServer, began,
		attribute.String("countersign.confirmation.id", id), attribute.String("countersign.approval.outcome", outcome))
	sp.s.End()
}

// Finalized records how a wait ended when the workflow saw it end without
// an approver's decision: expired (counted) or failed; the pending level
// drops either way.
func Finalized(ctx context.Context, kind, status string) {
	if !metricsOn.Load() {
		return
	}
	if status == "expired" {
		Expirations.slow(1, labels{kind})
	}
	Pending.slow(-1, labels{})
}

// StartRedeem starts the span of an approval's redemption
// ("countersign.redeem") in the trace of the call that paused, linked to
// the redeeming request's own span; the upstream call is its child.
func StartRedeem(ctx context.Context, traceparent, id string) (context.Context, Span) {
	if !tracingOn.Load() {
		return ctx, Span{}
	}
	return resume(ctx, "countersign.redeem", traceparent, trace.SpanKindInternal, time.Time{}, attribute.String("countersign.confirmation.id", id))
}

// Redeemed records a redemption's outcome: executed, or the refusal's code.
func (s Span) Redeemed(outcome string, err error) {
	if metricsOn.Load() {
		Redemptions.slow(1, labels{outcome})
	}
	s.End(outcome, err)
}

// StartTask starts the span of a workflow task (notify, execute, finalize)
// in the trace of the call that paused.
func StartTask(ctx context.Context, task, traceparent, id string) (context.Context, Span) {
	if !tracingOn.Load() {
		return ctx, Span{}
	}
	return resume(ctx, "countersign.task "+task, traceparent, trace.SpanKindConsumer, time.Time{},
		attribute.String("countersign.task", task), attribute.String("countersign.confirmation.id", id))
}

// StartUpstream starts the client span of an upstream call ("{method}",
// by the HTTP conventions) and returns when it began, for the latency
// histogram; the zero time when nothing measures it.
func StartUpstream(ctx context.Context, connection, method, baseURL string) (context.Context, Span, time.Time) {
	if !tracingOn.Load() {
		if metricsOn.Load() {
			return ctx, Span{}, time.Now()
		}
		return ctx, Span{}, time.Time{}
	}
	ctx, sp := start(ctx, method, trace.SpanKindClient, attribute.String("http.request.method", method),
		attribute.String("server.address", hostOf(baseURL)), attribute.String("countersign.connection", connection))
	return ctx, sp, time.Now()
}

// Inject sets traceparent (and tracestate) on an upstream request's
// headers from ctx's span, when tracing is on and the request carries no
// traceparent already (a forwarded or configured one is sent as it was
// approved). It is the one header countersign adds to what was decided,
// only with tracing on, and it is never part of an approval's binding.
func Inject(ctx context.Context, h http.Header) {
	if !tracingOn.Load() || h.Get("traceparent") != "" || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, headerCarrier(h))
}

// headerCarrier sets the lower-case field names the W3C text uses.
type headerCarrier http.Header

func (c headerCarrier) Get(k string) string { return http.Header(c).Get(k) }
func (c headerCarrier) Set(k, v string)     { http.Header(c).Set(k, v) }
func (c headerCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// EndUpstream ends an upstream call's span and records its latency and,
// for a failure or a 5xx answer, an error by connection and type.
func (s Span) EndUpstream(connection string, began time.Time, status int, errType string, err error) {
	if metricsOn.Load() {
		UpstreamDuration.slow(since(began), labels{connection})
		switch {
		case err != nil:
			UpstreamErrors.slow(1, labels{connection, errType})
		case status >= 500:
			UpstreamErrors.slow(1, labels{connection, "http_5xx"})
		}
	}
	if s.s == nil {
		return
	}
	if status > 0 {
		s.s.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err == nil && status >= 500 {
		s.End("http_5xx", errStatus(status))
		return
	}
	s.End(errType, err)
}

type errStatus int

func (e errStatus) Error() string { return http.StatusText(int(e)) }

// AuditVerified records the breaks an audit chain verification found.
func AuditVerified(breaks int) {
	if breaks > 0 && metricsOn.Load() {
		AuditVerifyFailures.slow(float64(breaks), labels{})
	}
}

// ShadowDiffered counts a call the candidate policy would decide otherwise.
func ShadowDiffered(connection string) {
	if metricsOn.Load() {
		ShadowDiffers.slow(1, labels{connection})
	}
}

// hostOf is a base URL's host name, for server.address.
func hostOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Measuring reports whether any metrics sink is on.
func Measuring() bool { return metricsOn.Load() }

// MCPServed records an MCP request's duration (mcp.server.operation.duration).
func MCPServed(method, tool, errType string, d time.Duration) {
	if metricsOn.Load() {
		MCPDuration.slow(d.Seconds(), labels{method, tool, errType})
	}
}
