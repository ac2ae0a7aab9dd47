// Package mcpotel records MCP requests by the OpenTelemetry semantic
// conventions for MCP: a server span named "{mcp.method.name} {target}"
// (the tool's or prompt's name when there is one), whose parent is the
// trace context the client put in params._meta (traceparent, tracestate),
// else the HTTP request's; and the mcp.server.operation.duration
// histogram (telemetry.MCPDuration). It is apart from package telemetry so
// that functions without an MCP server do not link the MCP SDK.
package mcpotel

import (
	"context"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/countersign/countersign/shared/telemetry"
)

// Middleware is an mcp.Server receiving middleware (AddReceivingMiddleware).
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		tracing, measuring := telemetry.Tracing(), telemetry.Measuring()
		if !tracing && !measuring {
			return next(ctx, method, req)
		}
		target, op := "", ""
		var meta map[string]any
		// A request without params (tools/list) holds a typed nil pointer.
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
			switch p := p.(type) {
			case *mcp.CallToolParamsRaw:
				target, op = p.Name, "execute_tool"
			case *mcp.CallToolParams:
				target, op = p.Name, "execute_tool"
			case *mcp.GetPromptParams:
				target = p.Name
			}
		}
		began := time.Now()
		var span trace.Span
		if tracing {
			ctx = telemetry.FromMeta(ctx, meta)
			name := method
			if target != "" {
				name += " " + target
			}
			attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
			if target != "" && op == "execute_tool" {
				attrs = append(attrs, attribute.String("gen_ai.tool.name", target), attribute.String("gen_ai.operation.name", op))
			} else if target != "" {
				attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
			}
			if s := req.GetSession(); s != nil && s.ID() != "" {
				attrs = append(attrs, attribute.String("mcp.session.id", s.ID()))
			}
			attrs = append(attrs, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
			ctx, span = otel.Tracer(telemetry.ScopeName).Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		}
		res, err := next(ctx, method, req)
		errType := ""
		switch {
		case err != nil:
			errType = "_OTHER"
		case isToolError(res):
			errType = "tool_error"
		}
		telemetry.MCPServed(method, target, errType, time.Since(began))
		if span != nil {
			if errType != "" {
				span.SetAttributes(attribute.String("error.type", errType))
				msg := errType
				if err != nil {
					msg = err.Error()
				}
				span.SetStatus(codes.Error, msg)
			}
			span.End()
		}
		return res, err
	}
}

// isToolError reports a tools/call result with isError set.
func isToolError(res mcp.Result) bool {
	r, ok := res.(*mcp.CallToolResult)
	return ok && r != nil && r.IsError
}
