package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/webguard"
)

// JSON-RPC error codes the surface answers besides the SDK's.
const (
	// codeUnauthenticated is a refused key (the implementation-defined
	// server error range).
	codeUnauthenticated = -32001
	// codeForbidden is a request from a foreign origin or host.
	codeForbidden = -32003
)

// served are the methods /mcp answers, each declared in the server's
// capabilities. Everything else is answered as JSON-RPC "method not
// found" (-32601), including what the SDK could answer but the server
// does not declare: completions and resource subscriptions (nothing
// changes during a request). Prompts and logging are declared and
// answered (no prompts exist, so prompts/list is empty; logging/setLevel
// is accepted, and the server sends no log messages: the log goes to the
// gateway's own logs), since clients and the conformance suite ask for them.
var served = map[string]bool{
	"initialize":                       true,
	"ping":                             true,
	"server/discover":                  true,
	"tools/list":                       true,
	"tools/call":                       true,
	"resources/list":                   true,
	"resources/templates/list":         true,
	"resources/read":                   true,
	"prompts/list":                     true,
	"logging/setLevel":                 true,
	"subscriptions/listen":             true,
	"notifications/initialized":        true,
	"notifications/cancelled":          true,
	"notifications/progress":           true,
	"notifications/roots/list_changed": true,
}

// rpcMessage is what the surface reads of a message before the SDK does.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// ServeHTTP refuses a foreign origin or host, authenticates the Bearer
// key, screens the message (no batch, only the methods served, a session
// id this handler gave), then lets the SDK serve the request with a
// server made for the credential. Every error it or the SDK answers is a
// JSON-RPC error body.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = joinRepeated(r)
	rw := &rpcWriter{ResponseWriter: w}
	defer rw.finish()
	settings := h.o.Calls.Current().Settings
	if reason := foreign(r, settings); reason != "" {
		h.logger().WarnContext(r.Context(), "mcp: request refused", "reason", reason)
		writeRPCError(rw, http.StatusForbidden, nil, &jsonrpc.Error{Code: codeForbidden, Message: "Forbidden: " + reason + "; nothing ran"})
		return
	}
	cred, err := h.credential(r)
	if err != nil {
		status := http.StatusUnauthorized
		if fault.CodeOf(err) != fault.Unauthenticated {
			status = http.StatusInternalServerError
			h.logger().ErrorContext(r.Context(), "mcp: credential not looked up", "error", err)
		} else {
			rw.Header().Set("WWW-Authenticate", h.challenge(r))
		}
		how := "; this server takes an API key as Authorization: Bearer <key>, not OAuth"
		if h.o.Calls.SignsIn() {
			how = "; sign in with OAuth (see WWW-Authenticate) or send an API key as Authorization: Bearer <key>"
		}
		writeRPCError(rw, status, nil, &jsonrpc.Error{Code: codeUnauthenticated, Message: faultText(fault.CodeOf(err), fault.ReasonOf(err)) + how})
		return
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			writeRPCError(rw, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the request body could not be read"})
			return
		}
		if len(body) > maxBody {
			writeRPCError(rw, http.StatusRequestEntityTooLarge, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the request body is over 1 MiB"})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if done := h.screen(rw, r, cred, body); done {
			return
		}
	}
	ctx := context.WithValue(r.Context(), credKey{}, cred)
	ctx = context.WithValue(ctx, serverKey{}, new(*mcp.Server))
	h.sdk.ServeHTTP(rw, r.WithContext(ctx))
}

// joinRepeated returns r with each repeated header as one value, joined
// with commas as API Gateway joins them, so that a listener and Lambda
// read the same: two Authorization headers are one value no key matches,
// never the first of them.
func joinRepeated(r *http.Request) *http.Request {
	for _, vs := range r.Header {
		if len(vs) < 2 {
			continue
		}
		joined := new(http.Request)
		*joined = *r
		joined.Header = make(http.Header, len(r.Header))
		for k, vs := range r.Header {
			joined.Header[k] = []string{strings.Join(vs, ",")}
		}
		return joined
	}
	return r
}

// maxDepth is the deepest nesting of a message screen reads.
const maxDepth = 128

// screen reads one POSTed message and answers it itself when the SDK
// should not: a message the strict JSON reader refuses (a key twice at
// any depth, nesting over maxDepth, a number or string that would not
// read back as sent), a batch, a method not served, a session id this handler did
// not give this credential. On initialize it gives the client its session
// id. It reports whether it answered.
func (h *Handler) screen(w *rpcWriter, r *http.Request, cred *countersign.Credential, body []byte) bool {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		writeRPCError(w, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "JSON-RPC batches are not accepted: from protocol 2025-06-18 on, each POST carries one message"})
		return true
	}
	if err := callbody.Valid(trimmed, &callbody.Options{MaxDepth: maxDepth}); err != nil && !errors.Is(err, callbody.ErrSyntax) {
		// encoding/json, which the SDK reads with, keeps the last of two
		// equal keys ({"approve": false, "approve": true} would approve):
		// a message the strict reader refuses never reaches it.
		writeRPCError(w, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "the message is refused, nothing ran: " + err.Error()})
		return true
	}
	var m rpcMessage
	if json.Unmarshal(trimmed, &m) != nil || m.Method == "" {
		// Malformed JSON, or a response to a server request: the SDK answers.
		return false
	}
	w.id = m.ID
	isCall := len(m.ID) > 0 && string(m.ID) != "null"
	modern := r.Header.Get(protocolHeader) >= ProtocolMRTR
	if modern && isCall && isTaskMethod(m.Method) {
		h.serveTask(r.Context(), w, r, cred, m) // tasks.go
		return true
	}
	if !served[m.Method] {
		if !isCall {
			// A notification is never answered; one not served is ignored.
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		status := http.StatusOK
		if modern {
			status = http.StatusNotFound // as the SDK answers an unknown method on 2026-07-28
		}
		writeRPCError(w, status, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not served here: this server offers tools and one resource (the confirmation card)", m.Method)})
		return true
	}
	if modern {
		return false
	}
	if m.Method == "initialize" {
		var p mcp.InitializeParams
		if json.Unmarshal(m.Params, &p) == nil {
			if id := h.newSession(cred, &p); id != "" {
				w.Header().Set(sessionHeader, id)
			}
		}
		return false
	}
	if _, err := h.openSession(cred, r.Header.Get(sessionHeader)); err != nil {
		writeRPCError(w, http.StatusNotFound, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fault.ReasonOf(err)})
		return true
	}
	return false
}

// foreign says why a request comes from where /mcp does not answer, or "":
// a browser page whose Origin is not allowed (settings.json's
// mcp.allowed_origins; loopback origins by default), or, on a loopback
// listener (the local stack), a Host that does not name this machine (a
// page that rebound its name to 127.0.0.1). A request without Origin, as
// every non-browser client sends, is not foreign.
func foreign(r *http.Request, s config.Settings) string {
	if why := webguard.ForeignHost(r, s.PublicURL); why != "" {
		return why
	}
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return ""
	}
	if len(origins) == 1 && s.MCP.OriginAllowed(origins[0]) {
		return ""
	}
	if own, ok := config.NormalizeOrigin(s.PublicURL); ok && len(origins) == 1 {
		if o, ok := config.NormalizeOrigin(origins[0]); ok && o == own {
			return ""
		}
	}
	return fmt.Sprintf("the Origin %q is not allowed to call /mcp (settings.json mcp.allowed_origins)", clip(strings.Join(origins, ", ")))
}

// challenge is the WWW-Authenticate of a refused credential: with OAuth
// (Calls.Tokens), one that points at /mcp's Protected Resource Metadata;
// without, one that names the scheme this server takes.
func (h *Handler) challenge(r *http.Request) string {
	if h.o.Calls.SignsIn() {
		return h.o.Calls.Challenge("/mcp", bearerKey(r.Header.Get("Authorization")) != "")
	}
	if bearerKey(r.Header.Get("Authorization")) == "" {
		return `Bearer realm="countersign", error_description="this server takes an API key, not OAuth: send Authorization: Bearer <key>"`
	}
	return `Bearer realm="countersign", error="invalid_token", error_description="the key is not known (revoked or mistyped)"`
}

// credential is the request's credential: the one the gateway already
// found from the same headers (it reads the key before the body), or the
// Bearer key looked up now.
func (h *Handler) credential(r *http.Request) (*countersign.Credential, error) {
	if cred, ok := httpapi.Preauthenticated(r.Context()); ok {
		return cred, nil
	}
	return h.o.Calls.Authenticate(calls.ForResource(r.Context(), "/mcp"), bearerKey(r.Header.Get("Authorization")))
}

// bearerKey is the key of an Authorization: Bearer header, or "".
func bearerKey(h string) string {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// writeRPCError writes a JSON-RPC error response (id null when the request's
// id is not known).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
}

// rpcWriter turns the SDK's plain-text HTTP errors (an unsupported
// protocol header, a wrong Content-Type or Accept, GET or DELETE on a
// stateless server, a malformed body) into JSON-RPC error bodies with the
// same status, so every answer of /mcp is JSON-RPC.
type rpcWriter struct {
	http.ResponseWriter
	// id is the request's id, once read.
	id     json.RawMessage
	status int
	plain  bytes.Buffer
	held   bool
}

func (w *rpcWriter) WriteHeader(status int) {
	if w.held {
		return
	}
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.held, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcWriter) Write(b []byte) (int, error) {
	if w.held {
		if w.plain.Len() < 1024 {
			w.plain.Write(b)
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the SDK stream an event stream through.
func (w *rpcWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

func (w *rpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held plain-text error as a JSON-RPC error.
func (w *rpcWriter) finish() {
	if !w.held {
		return
	}
	msg := strings.TrimSpace(w.plain.String())
	code := int64(jsonrpc.CodeInvalidRequest)
	if strings.HasPrefix(msg, "malformed payload") {
		code = jsonrpc.CodeParseError
	}
	w.held = false
	writeRPCError(w.ResponseWriter, w.status, w.id, &jsonrpc.Error{Code: code, Message: msg})
}
