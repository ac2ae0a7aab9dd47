package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/countersign/countersign/shared/telemetry/otlp/internal/protowire"
)

// Exporter sends spans to an OTLP/HTTP endpoint as protobuf
// (ExportTraceServiceRequest, POST, Content-Type application/x-protobuf).
//
// It encodes the OTLP messages with protowire rather than linking
// otlptracehttp, whose generated collector package links gRPC and the
// gRPC gateway (about 14 MB in each Lambda bootstrap): the wire format is
// the same, and the tests decode it with the official OTLP types.
type Exporter struct {
	// URL is the traces endpoint, e.g. http://127.0.0.1:4318/v1/traces.
	URL string
	// Headers are sent with every request (OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Gzip compresses the body (OTEL_EXPORTER_OTLP_COMPRESSION=gzip).
	Gzip bool
	// Timeout bounds one export (default 10 s).
	Timeout time.Duration
	// Client sends the requests; nil means a client of its own.
	Client *http.Client
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// maxResponse bounds what is read of the collector's answer.
const maxResponse = 64 << 10

// ExportSpans sends one batch; a non-2xx answer is an error naming the status.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := Encode(spans)
	if e.Gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlp: gzip: %w", err)
		}
		body = b.Bytes()
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export %d spans to %s: %s", len(spans), e.URL, resp.Status)
	}
	return nil
}

// Shutdown has nothing to release.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// FromEnv builds the exporter the OTEL_EXPORTER_OTLP_* variables describe:
// the traces endpoint as given, or the endpoint with /v1/traces appended;
// headers (k=v,k2=v2, values URL-decoded); timeout in milliseconds;
// compression gzip or none. A value it cannot honour is an error.
func FromEnv(getenv func(string) string) (*Exporter, error) {
	pick := func(name string) (string, string) {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return "OTEL_EXPORTER_OTLP_TRACES_" + name, v
		}
		return "OTEL_EXPORTER_OTLP_" + name, getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	e := &Exporter{}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		e.URL = v
	} else if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		e.URL = strings.TrimRight(v, "/") + "/v1/traces"
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP traces endpoint %q: want an http or https URL", e.URL)
	}
	if k, v := pick("HEADERS"); v != "" {
		e.Headers = map[string]string{}
		for pair := range strings.SplitSeq(v, ",") {
			name, value, ok := strings.Cut(pair, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return nil, fmt.Errorf("%s: %q is not name=value", k, pair)
			}
			dv, err := url.QueryUnescape(strings.TrimSpace(value))
			if err != nil {
				return nil, fmt.Errorf("%s: header %s: %w", k, name, err)
			}
			e.Headers[name] = dv
		}
	}
	if k, v := pick("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", k, v)
		}
		e.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch k, v := pick("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		e.Gzip = true
	default:
		return nil, fmt.Errorf("%s=%q: want gzip or none", k, v)
	}
	for _, name := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		if k, v := pick(name); v != "" {
			return nil, fmt.Errorf("%s is not supported: the exporter uses the system's roots", k)
		}
	}
	return e, nil
}

// Encode returns the ExportTraceServiceRequest of spans in protobuf: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope.
func Encode(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct{ name, version, schema string }
	type group struct {
		res    []byte
		schema string
		scopes map[scopeKey][][]byte
		order  []scopeKey
	}
	var groups []*group
	byRes := map[string]*group{}
	for _, s := range spans {
		var res []byte
		var schema string
		if r := s.Resource(); r != nil {
			res = appendAttrs(nil, 1, r.Attributes())
			schema = r.SchemaURL()
		}
		g := byRes[string(res)]
		if g == nil {
			g = &group{res: res, schema: schema, scopes: map[scopeKey][][]byte{}}
			byRes[string(res)] = g
			groups = append(groups, g)
		}
		sc := s.InstrumentationScope()
		k := scopeKey{sc.Name, sc.Version, sc.SchemaURL}
		if _, ok := g.scopes[k]; !ok {
			g.order = append(g.order, k)
		}
		g.scopes[k] = append(g.scopes[k], encodeSpan(s))
	}
	var out []byte
	for _, g := range groups {
		var rs []byte
		rs = protowire.AppendTag(rs, 1, protowire.BytesType)
		rs = protowire.AppendBytes(rs, g.res)
		for _, k := range g.order {
			var ss []byte
			ss = protowire.AppendTag(ss, 1, protowire.BytesType)
			ss = protowire.AppendBytes(ss, encodeScope(instrumentation.Scope{Name: k.name, Version: k.version}))
			for _, sp := range g.scopes[k] {
				ss = protowire.AppendTag(ss, 2, protowire.BytesType)
				ss = protowire.AppendBytes(ss, sp)
			}
			ss = appendString(ss, 3, k.schema)
			rs = protowire.AppendTag(rs, 2, protowire.BytesType)
			rs = protowire.AppendBytes(rs, ss)
		}
		rs = appendString(rs, 3, g.schema)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, rs)
	}
	return out
}

func encodeScope(s instrumentation.Scope) []byte {
	b := appendString(nil, 1, s.Name)
	return appendString(b, 2, s.Version)
}

// OTLP's span flags: bit 8 says whether the parent's remoteness is known,
// bit 9 that the parent is remote.
const (
	flagHasRemote = 0x100
	flagIsRemote  = 0x200
)

func encodeSpan(s sdktrace.ReadOnlySpan) []byte {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	var b []byte
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if parent.IsValid() {
		psid := parent.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(kindOf(s.SpanKind())))
	b = protowire.AppendTag(b, 7, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.StartTime().UnixNano()))
	b = protowire.AppendTag(b, 8, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.EndTime().UnixNano()))
	b = appendAttrs(b, 9, s.Attributes())
	b = appendUint(b, 10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.Fixed64Type)
		e = protowire.AppendFixed64(e, uint64(ev.Time.UnixNano()))
		e = appendString(e, 2, ev.Name)
		e = appendAttrs(e, 3, ev.Attributes)
		e = appendUint(e, 4, uint64(ev.DroppedAttributeCount))
		b = appendBytes(b, 11, e)
	}
	b = appendUint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		var lb []byte
		lb = appendBytes(lb, 1, ltid[:])
		lb = appendBytes(lb, 2, lsid[:])
		lb = appendString(lb, 3, l.SpanContext.TraceState().String())
		lb = appendAttrs(lb, 4, l.Attributes)
		lb = appendUint(lb, 5, uint64(l.DroppedAttributeCount))
		lb = appendFlags(lb, 6, l.SpanContext)
		b = appendBytes(b, 13, lb)
	}
	b = appendUint(b, 14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset {
		var sb []byte
		sb = appendString(sb, 2, st.Description)
		code := uint64(1) // STATUS_CODE_OK
		if st.Code == codes.Error {
			code = 2 // STATUS_CODE_ERROR
		}
		sb = appendUint(sb, 3, code)
		b = appendBytes(b, 15, sb)
	}
	flags := uint32(sc.TraceFlags()) | flagHasRemote
	if parent.IsRemote() {
		flags |= flagIsRemote
	}
	b = protowire.AppendTag(b, 16, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, flags)
	return b
}

func appendFlags(b []byte, field protowire.Number, sc trace.SpanContext) []byte {
	flags := uint32(sc.TraceFlags()) | flagHasRemote
	if sc.IsRemote() {
		flags |= flagIsRemote
	}
	b = protowire.AppendTag(b, field, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// kindOf maps the API's span kinds onto OTLP's (the same numbers, 1-5).
func kindOf(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return int(trace.SpanKindInternal)
	}
	return int(k)
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendString(b []byte, field protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendUint(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendAttrs appends each attribute as a KeyValue in field.
func appendAttrs(b []byte, field protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		var e []byte
		e = appendString(e, 1, string(kv.Key))
		e = appendBytes(e, 2, anyValue(kv.Value))
		b = appendBytes(b, field, e)
	}
	return b
}

// anyValue encodes an AnyValue: string 1, bool 2, int 3, double 4, array 5.
func anyValue(v attribute.Value) []byte {
	var b []byte
	switch v.Type() {
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, v.AsString())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		var arr []byte
		for _, e := range sliceValues(v) {
			arr = appendBytes(arr, 1, anyValue(e))
		}
		b = appendBytes(b, 5, arr)
	default:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, v.String())
	}
	return b
}

func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(x))
		}
	}
	return out
}
