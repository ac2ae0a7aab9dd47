package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/telemetry"
)

// Defaults used when the corresponding Client field is zero.
const (
	DefaultTimeout = 15 * time.Second
	DefaultMaxBody = 6 << 20 // 6 MiB, the Lambda response payload limit
)

var (
	// ErrUnreachable reports that the upstream could not be reached or did not answer in
	// time: refused or reset connections, DNS failures, TLS failures, timeouts and a
	// cancelled context. Errors returned by Do wrap it together with the cause, so
	// errors.Is(err, context.DeadlineExceeded) also works.
	ErrUnreachable = errors.New("upstream unreachable")

	// ErrResponseTooLarge reports a response body larger than Client.MaxBody.
	ErrResponseTooLarge = errors.New("upstream response too large")

	// ErrInvalidRequest reports a Request that cannot be sent: a bad base URL, method, path
	// or header. Nothing was sent upstream.
	ErrInvalidRequest = errors.New("invalid upstream request")
)

// Client calls upstream APIs. The zero value is ready to use; a Client is safe for
// concurrent use and should be reused so connections are kept alive.
type Client struct {
	// HTTP sends the requests. Nil means a shared client with a pooled transport (proxy from
	// the environment, HTTP/2 when offered, 64 idle connections per host) that does not
	// follow redirects: a 3xx comes back as the response, so configured credentials are
	// never replayed to another location and a write is never re-sent. Its plain-HTTP
	// calls without a proxy are sent on the caller's goroutine (directTransport, direct.go).
	HTTP *http.Client

	// Timeout bounds one call, from dialling to the last byte of the body. Zero means
	// DefaultTimeout.
	Timeout time.Duration

	// MaxBody caps the response body in bytes; a larger body is ErrResponseTooLarge. Zero
	// means DefaultMaxBody.
	MaxBody int64
}

// Request is one call to a connection's API.
type Request struct {
	// BaseURL is the connection's base_url, e.g. http://127.0.0.1:8081. It may carry a path
	// prefix (https://api.example.com/v2); Path is appended to it with exactly one slash.
	BaseURL string

	// Headers are the connection's configured headers, already ${env:} expanded. They are
	// set on every call and win over forwarded headers of the same name. A "Host" entry sets
	// the request's Host.
	Headers map[string]string

	// Method is the HTTP method, e.g. DELETE. Required.
	Method string

	// Path is the concrete path in its escaped (wire) form, starting with "/", e.g.
	// /contacts/12. Percent-escapes are kept as they are (an id holding %2F stays one
	// segment); characters that cannot appear in a path ("?", "#", spaces) are escaped.
	// Dot segments ("." and "..", also percent-encoded) are refused, so a call can never
	// leave the endpoint its policy matched or the base URL's prefix.
	Path string

	// Query is encoded as given (url.Values.Encode) when RawQuery is empty.
	Query url.Values

	// RawQuery, when non-empty, is sent unchanged instead of Query (REST pass-through).
	RawQuery string

	// Body is the request body; nil sends no body.
	Body []byte

	// ContentType is the body's media type; empty means application/json. Ignored when Body
	// is nil.
	ContentType string

	// IdempotencyKey is sent as Idempotency-Key when non-empty. A request is
	// sent once: the transport never re-sends it by itself (see sendOnce).
	IdempotencyKey string

	// Forward holds the agent's headers the connection forwards, one line each: the
	// content negotiation headers (DefaultForward) and the connection's forward_headers,
	// chosen by the caller from the agent's request, name → value. Every name must pass
	// CheckForwardName: a name with "_" or any character other than letters, digits and
	// "-", a hop-by-hop header, a credential, Host, a method, URL or client address
	// override, X-Forwarded-* or Countersign-* fails the request with ErrInvalidRequest and
	// nothing is sent. Configured headers of the same name win.
	Forward map[string]string

	// IfMatch is sent as If-Match when non-empty: the ETag of the
	// resource as the person saw it, so an API that honours it refuses a
	// write to a resource changed since.
	IfMatch string

	// Connection names the connection for telemetry only (the span's and
	// the metrics' label); it is never sent.
	Connection string
}

// Response is the upstream's answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends r and reads the whole response. A response with any status, 4xx and 5xx
// included, is a Response and a nil error. Errors wrap ErrInvalidRequest (nothing was
// sent), ErrUnreachable (network failure, timeout, cancelled context) or
// ErrResponseTooLarge.
//
// With tracing on (shared/telemetry) the call is a client span and the
// request carries its traceparent, unless it already carries one; that
// header is the one addition to what was decided, and it is not bound.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	ctx, sp, began := telemetry.StartUpstream(ctx, r.Connection, r.Method, r.BaseURL)
	resp, err := c.do(ctx, r)
	status := 0
	if resp != nil {
		status = resp.Status
	}
	sp.EndUpstream(r.Connection, began, status, errorType(err), err)
	return resp, err
}

// errorType is an upstream failure's error.type.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidRequest):
		return "invalid_request"
	case errors.Is(err, ErrResponseTooLarge):
		return "response_too_large"
	}
	return "unreachable"
}

func (c *Client) do(ctx context.Context, r Request) (*Response, error) {
	// The request is made with its deadline's context: no copy of it to
	// set the context afterwards. The context makes no timer unless
	// something waits on it (callctx.go).
	call := withCallDeadline(ctx, c.timeout())
	defer call.release()
	ctx = call
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	telemetry.Inject(ctx, req.Header)

	// The target names the call in errors only.
	target := func() string { return req.Method + " " + req.URL.Redacted() }
	resp, err := c.send(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, target(), err)
	}
	defer resp.Body.Close()

	max := c.maxBody()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s: %d bytes, limit %d", ErrResponseTooLarge, target(), resp.ContentLength, max)
	}
	body, err := callbody.ReadLimited(resp.Body, resp.ContentLength, max)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading body: %w", ErrUnreachable, target(), err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%w: %s: over %d bytes", ErrResponseTooLarge, target(), max)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// JSONBody returns the body parsed as JSON when the Content-Type is JSON (application/json
// or any +json type) and the body is exactly one JSON value. Numbers are json.Number so they
// re-encode exactly as the upstream sent them.
func (r *Response) JSONBody() (any, bool) {
	if r == nil || len(bytes.TrimSpace(r.Body)) == 0 || !isJSON(r.Header.Get("Content-Type")) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	return v, true
}

// RawJSON returns the body compacted when the Content-Type is JSON and the
// body is exactly one JSON value in valid UTF-8: the value JSONBody parses,
// without building it, for callers that only encode it again. Keys keep
// the upstream's order and numbers and strings their literal form. A body
// with invalid UTF-8 is not RawJSON (JSONBody replaces the bad bytes).
func (r *Response) RawJSON() (json.RawMessage, bool) {
	if r == nil {
		return nil, false
	}
	raw, ok := r.AppendRawJSON(make([]byte, 0, len(r.Body)))
	if !ok {
		return nil, false
	}
	return raw, true
}

// AppendRawJSON appends what RawJSON returns to dst, in one pass over the
// body (compacting validates it); false, and dst unchanged, when RawJSON
// would return false.
//
// It compacts with jsontext, as encoding/json.Compact would (the same
// bytes, the same bodies refused: TestAppendRawJSONMatchesCompact), in
// about a third of the time: /v1/calls compacts every JSON answer it
// carries.
func (r *Response) AppendRawJSON(dst []byte) ([]byte, bool) {
	if r == nil || !isJSON(r.Header.Get("Content-Type")) || !utf8.Valid(r.Body) {
		return dst, false
	}
	out, err := jsontext.AppendFormat(dst, r.Body, compactJSON...)
	if err != nil {
		return dst, false
	}
	return out, true
}

// compactJSON are jsontext's options of Value.Compact: whitespace removed,
// strings and numbers kept as written, duplicate names allowed as
// encoding/json allows them (UTF-8 is checked before).
var compactJSON = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true),
}

func isJSON(contentType string) bool {
	// The common forms without parsing (and allocating) the parameters.
	switch contentType {
	case "application/json", "application/json; charset=utf-8", "application/json;charset=utf-8":
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) maxBody() int64 {
	if c.MaxBody > 0 {
		return c.MaxBody
	}
	return DefaultMaxBody
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP()
}

// send sends req once. The default client follows no redirect and has no
// cookie jar or timeout of its own (Timeout is the request context's), so
// for a URL without user information (which http.Client would turn into
// Basic credentials) it does exactly what its transport does: req goes to
// the transport directly, without the client's copy of the headers for
// redirects that never happen (about ten allocations a call).
func (c *Client) send(req *http.Request) (*http.Response, error) {
	if c.HTTP != nil || req.URL.User != nil {
		return c.httpClient().Do(req)
	}
	resp, err := defaultDirect().RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.Body == nil { // as http.Client makes it
		resp.Body = http.NoBody
	}
	return resp, nil
}

var defaultHTTP = sync.OnceValue(func() *http.Client {
	return &http.Client{
		Transport: NewTransport(),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
})

// defaultDirect sends the default client's plain-HTTP requests on the
// caller's goroutine (direct.go), and the rest on its transport.
var defaultDirect = sync.OnceValue(func() *directTransport {
	return newDirectTransport(defaultHTTP().Transport.(*http.Transport))
})

// NewTransport returns a new transport configured as the one the default
// client sends with: http.DefaultTransport's settings (proxy from the
// environment, HTTP/2 when offered, dial and TLS timeouts) with a larger
// idle pool: 64 connections per host, so that as many concurrent calls to
// one upstream reuse their connections instead of closing all but a few
// and dialling again. The benchmarks' bare reverse proxy uses it too, so
// the two hops are compared on the same transport.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}

// newRequest builds the *http.Request for r; errors wrap ErrInvalidRequest.
func (c *Client) newRequest(ctx context.Context, r Request) (*http.Request, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	if r.Method == "" {
		return nil, invalid("method is required")
	}
	u, err := joinURL(r.BaseURL, r.Path)
	if err != nil {
		return nil, invalid("%v", err)
	}
	if r.RawQuery != "" {
		u.RawQuery = r.RawQuery
	} else {
		u.RawQuery = r.Query.Encode()
	}

	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, invalid("%s %s: %v", r.Method, u.Redacted(), err)
	}

	// Lowest precedence first: forwarded, then what this call sets, then configured.
	for name, v := range r.Forward {
		if err := CheckForwardName(name); err != nil {
			return nil, invalid("forwarded header %q: %v", name, err)
		}
		if !validHeader(name, v) {
			return nil, invalid("forwarded header %q: invalid value", name)
		}
		req.Header.Set(name, v)
	}
	if r.Body != nil {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.IdempotencyKey != "" {
		if !validHeader("Idempotency-Key", r.IdempotencyKey) {
			return nil, invalid("idempotency key: invalid value")
		}
		req.Header.Set("Idempotency-Key", r.IdempotencyKey)
	}
	if r.IfMatch != "" {
		if !validHeader("If-Match", r.IfMatch) {
			return nil, invalid("If-Match: invalid value")
		}
		req.Header.Set("If-Match", r.IfMatch)
	}
	for name, v := range r.Headers {
		if !validHeader(name, v) {
			// The value may be a secret: name the header only.
			return nil, invalid("configured header %q: invalid name or value", name)
		}
		if textproto.CanonicalMIMEHeaderKey(name) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(name, v)
	}
	sendOnce(req.Header)
	return req, nil
}

// sendOnce keeps Go's transport from sending a write a second time on its own.
// http.Transport re-sends a request whose kept-alive connection broke after the
// request was written when the request counts as idempotent, and a Header map
// entry "Idempotency-Key" or "X-Idempotency-Key" makes it count (see the
// http.Transport documentation). The upstream may have acted on the first send;
// countersign calls it once per approved operation and records what came back,
// and an upstream that ignores the key would act twice. The same headers under
// lower-case map keys go out as the same fields (names are case-insensitive,
// RFC 9110 section 5.1) but are not the entries the transport looks for. An
// in-process RoundTripper reads them as h["idempotency-key"].
func sendOnce(h http.Header) {
	for _, k := range [...]string{"Idempotency-Key", "X-Idempotency-Key"} {
		if v, ok := h[k]; ok {
			delete(h, k)
			h[strings.ToLower(k)] = v
		}
	}
}

// baseURLs holds base URLs parsed and checked, by their text: a gateway
// calls the same few connections' base URLs again and again. Bounded: past
// maxBaseURLs it starts over.
var baseURLs struct {
	sync.RWMutex
	m map[string]*url.URL
}

const maxBaseURLs = 1024

// parseBase parses and checks a connection's base URL; the result must not
// be modified.
func parseBase(base string) (*url.URL, error) {
	baseURLs.RLock()
	u, ok := baseURLs.m[base]
	baseURLs.RUnlock()
	if ok {
		return u, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("base URL %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("base URL %q: no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("base URL %q: must not have a query or fragment", u.Redacted())
	}
	baseURLs.Lock()
	if baseURLs.m == nil || len(baseURLs.m) >= maxBaseURLs {
		baseURLs.m = make(map[string]*url.URL)
	}
	baseURLs.m[base] = u
	baseURLs.Unlock()
	return u, nil
}

// joinURL appends the escaped path p to base, keeping base's path prefix and p's
// percent-escapes. p must be canonical (policy.CanonicalPath): the bytes that were
// routed, bound and shown are the bytes the upstream receives, and a path that
// is not (an operation stored before paths were canonical) is refused.
func joinURL(base, p string) (*url.URL, error) {
	parsed, err := parseBase(base)
	if err != nil {
		return nil, err
	}
	u := *parsed // a copy: the cached one is shared (its *Userinfo cannot change)
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q: must start with /", p)
	}
	if canon, _, err := policy.CanonicalPath(p); err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	} else if canon != p {
		return nil, fmt.Errorf("path %q is not canonical (%q): it is not sent", p, canon)
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
		// An escaped slash or backslash may be decoded by the upstream before it
		// normalises the path, so look inside the segment too.
		for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '/' || r == '\\' }) {
			if part == "." || part == ".." {
				return nil, fmt.Errorf("path %q: dot segments are not allowed", p)
			}
		}
	}
	raw := strings.TrimRight(u.EscapedPath(), "/") + p
	decoded, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	}
	// RawPath is used on the wire when it is a valid encoding of Path; otherwise (a "?" or
	// a space in p) net/url escapes Path itself.
	u.Path, u.RawPath = decoded, raw
	return &u, nil
}

// DefaultForward are the request headers every connection forwards: content negotiation,
// which says how the agent wants the answer. They are sent and replayed with the approved
// call but not bound or shown. Accept-Encoding is not one of them: the transport asks for
// gzip itself and decodes the answer, which the gateway reads (JSON outcomes, previews); an
// agent's Accept-Encoding would turn that off and hand the gateway bytes it cannot read.
// Content-Type is sent as the body's media type (Request.ContentType), only with a body.
var DefaultForward = [...]string{"Accept", "Accept-Language"}

// neverForward are the request headers no connection may forward (canonical names), and
// why. countersign decided on one method, one URL, one caller and one body; an upstream
// (or a proxy in front of it) that honours any of these would run or attribute something
// else.
var neverForward = map[string]string{
	// Hop-by-hop: they describe the agent's connection, not the call (RFC 9110
	// section 7.6.1; Proxy-Connection and Keep-Alive are the pre-standard forms).
	"Connection":          "hop-by-hop",
	"Proxy-Connection":    "hop-by-hop",
	"Keep-Alive":          "hop-by-hop",
	"Te":                  "hop-by-hop",
	"Trailer":             "hop-by-hop",
	"Transfer-Encoding":   "hop-by-hop; framing is the transport's",
	"Upgrade":             "hop-by-hop; would switch the upstream connection's protocol",
	"Proxy-Authenticate":  "hop-by-hop",
	"Proxy-Authorization": "hop-by-hop credential",

	// Credentials: the agent's are countersign's; the connection's headers carry the upstream's.
	"Authorization": "a credential: the agent's countersign key; the connection's headers carry the upstream's",
	"Cookie":        "a credential: the agent's cookies are countersign's, never the upstream's",

	// Set by countersign or its transport, never by the agent.
	"Host":              "the connection's base_url decides the host",
	"Content-Length":    "framing is the transport's",
	"Content-Type":      "sent by countersign as the body's media type, only with a body",
	"Accept-Encoding":   "the transport negotiates compression and decodes the answer itself",
	"Expect":            "the transport's (100-continue)",
	"Idempotency-Key":   "always sent by countersign, as <credential>:<key> so two agents' keys never collide",
	"X-Idempotency-Key": "idempotency keys are countersign's: send Idempotency-Key, which goes upstream scoped to the credential",
	"Max-Forwards":      "proxy hop control (RFC 9110 section 7.6.2)",
	"Via":               "proxy hop information (RFC 9110 section 7.6.3)",

	// Method overrides: the upstream would run another method than the one decided.
	"X-Http-Method-Override": "method override (Rack::MethodOverride, Express method-override, Symfony, ASP.NET)",
	"X-Http-Method":          "method override (OData, Microsoft services)",
	"X-Method-Override":      "method override (Google APIs, iris)",
	"X-Original-Method":      "the method before a rewrite (nginx auth_request convention)",

	// URL and host overrides: the upstream would route to another path or host.
	"X-Original-Url":          "URL override (Symfony, Zend, IIS URL Rewrite)",
	"X-Rewrite-Url":           "URL override (Symfony, Zend, IIS URL Rewrite)",
	"X-Override-Url":          "URL override (listed by PortSwigger's request URL override issue)",
	"X-Original-Uri":          "the URI before a rewrite (nginx auth_request convention)",
	"X-Envoy-Original-Path":   "the path before an Envoy rewrite",
	"X-Original-Host":         "host override",
	"X-Host":                  "host override",
	"X-Http-Host-Override":    "host override",
	"X-Middleware-Subrequest": "internal marker that skipped Next.js middleware (CVE-2025-29927)",

	// Who is calling: only a proxy the upstream trusts may say, and countersign is not
	// forwarding for the agent's network address.
	"Forwarded":                "client address and scheme (RFC 7239)",
	"X-Real-Ip":                "client address (nginx realip)",
	"X-Client-Ip":              "client address",
	"Client-Ip":                "client address",
	"True-Client-Ip":           "client address (Akamai, Cloudflare)",
	"Cf-Connecting-Ip":         "client address (Cloudflare)",
	"Fastly-Client-Ip":         "client address (Fastly)",
	"X-Cluster-Client-Ip":      "client address (load balancers)",
	"X-Original-Forwarded-For": "client address (ingress-nginx)",
	"X-Azure-Clientip":         "client address (Azure Front Door)",
	"X-Azure-Socketip":         "client address (Azure Front Door)",
}

// neverForwardPrefixes are header name prefixes never forwarded, for the same reasons.
var neverForwardPrefixes = [...]struct{ prefix, why string }{
	{"X-Forwarded-", "proxy claims (For, Host, Proto, Port, Prefix, Path, Uri, Method, ...)"},
	{"X-Envoy-", "Envoy trusts these from internal callers: retries, timeouts, original path"},
	{"X-Amzn-", "API Gateway's and ALB's own (trace id, remapped headers)"},
	{"Countersign-", "countersign's own protocol headers"},
}

// CheckForwardName returns why a request header named name may never be forwarded to an
// upstream, or nil if a connection may forward it. Names are compared case-insensitively.
// A name must be written with letters, digits and "-" only. A CGI-style server (WSGI,
// Rack, PHP, CGI) reads a header as HTTP_<NAME> with "-" turned into "_", so
// X_HTTP_METHOD_OVERRIDE and X-Http_Method-Override reach it as X-HTTP-Method-Override;
// Apache's CGI environment turns every other character ("." or "~" too) into "_" as well.
// No name outside letters, digits and "-" is therefore one name to every upstream.
func CheckForwardName(name string) error {
	if name == "" {
		return errors.New("a header needs a name")
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case b == '_':
			return errors.New(`has "_": CGI-style servers (WSGI, Rack, PHP) read it as "-", so it would reach them as another header; write the name with "-"`)
		case !isNameChar(b):
			return fmt.Errorf("has %q: write a forwarded header's name with letters, digits and \"-\" only", name[i:i+1])
		}
	}
	canonical := textproto.CanonicalMIMEHeaderKey(name)
	if why, ok := neverForward[canonical]; ok {
		return fmt.Errorf("is never forwarded: %s", why)
	}
	for _, p := range neverForwardPrefixes {
		if strings.HasPrefix(canonical, p.prefix) {
			return fmt.Errorf("is never forwarded: %s*: %s", p.prefix, p.why)
		}
	}
	return nil
}

// isNameChar reports a byte allowed in a forwarded header's name.
func isNameChar(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-'
}

// validHeader reports whether name is a token and value holds no control characters other
// than tab (so no header can be smuggled through CR or LF).
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return false
		}
	}
	for i := 0; i < len(value); i++ {
		if b := value[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
