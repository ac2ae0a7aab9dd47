// Package reqlog carries a request's id in its context and puts it on
// every log line written with that context, so one request's lines can be
// found together (the API Gateway request id on AWS, a generated one on the
// local stack).
package reqlog

import (
	"context"
	"log/slog"
)

type key struct{}

// Attr is the name of the request id's attribute.
const Attr = "request_id"

// With returns ctx carrying the request id (an empty id changes nothing).
func With(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, key{}, id)
}

// ID returns the request id ctx carries, or "".
func ID(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Handler wraps h so that every record logged with a context carrying a
// request id gets a "request_id" attribute. A record that already has one
// (a hot path that adds it itself, sparing the copy) is passed as it is.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := ID(ctx); id != "" && !hasRequestID(r) {
		r = r.Clone()
		r.AddAttrs(slog.String(Attr, id))
	}
	return h.Handler.Handle(ctx, r)
}

func hasRequestID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == Attr
		return !found
	})
	return found
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(attrs)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }

// Logger returns l with its handler wrapped (nil discards).
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	if _, ok := l.Handler().(handler); ok {
		return l
	}
	return slog.New(Handler(l.Handler()))
}
