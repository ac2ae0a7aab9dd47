package mcpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/store"
)

// Path is where the surface is served.
const Path = "/mcp"

// ExtraTool is a tool another part of countersign adds to every
// credential's server. It is listed and called like the built-in tools;
// Handle gets the authenticated credential and the client, and should take
// the same confirmation paths (Handler.Ask, Handler.Answer, the card) as an
// operation tool. (Code mode's run_script is not one: the card and
// confirmation_status need code mode too, so it comes in Options.Scripts.)
type ExtraTool struct {
	Tool *mcp.Tool
	// Visible decides whether a credential sees the tool; nil shows it to all.
	Visible func(cred *store.Credential) bool
	Handle  func(ctx context.Context, cred *store.Credential, client Client, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

// Options build a Handler. Calls and Signer are required; nil fields
// otherwise mean the defaults their comments give.
type Options struct {
	// Calls is the call pipeline every operation tool goes through; its
	// Config gives the connections, the workspace and the timeouts.
	Calls *calls.Service
	// Signer seals the request states and the card tokens with the link key.
	Signer *links.Signer
	// Scripts is code mode: with it every credential gets run_script,
	// and the card and confirmation_status run and show script batches.
	// gatewayapp attaches it; nil leaves code mode out.
	Scripts Scripts
	// Extra are tools added to every server.
	Extra []ExtraTool
	// ReadyWait bounds how long the card's decision waits for a new
	// confirmation to be ready (its workflow started and its approvers
	// told); 0 means 10 s.
	ReadyWait time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives the surface's warnings; nil discards.
	Logger *slog.Logger
}

// Handler is the MCP surface. It serves net/http (ServeHTTP) and API
// Gateway v2 events (Handle) with the same code.
type Handler struct {
	o   Options
	sdk http.Handler
}

// New builds the surface: a stateless Streamable HTTP handler of the SDK
// that answers every POST with one JSON response and holds no session.
func New(o Options) *Handler {
	if o.ReadyWait <= 0 {
		o.ReadyWait = 10 * time.Second
	}
	h := &Handler{o: o}
	h.sdk = mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       o.Logger,
		// Every request must carry a Bearer key, which a page rebinding a
		// loopback name cannot; the event adapter also carries no local
		// address for the SDK's check to look at.
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	return h
}

// maxBody is the largest request accepted (docs/api.md: 1 MiB).
const maxBody = 1 << 20

func (h *Handler) now() time.Time {
	if h.o.Now != nil {
		return h.o.Now().UTC()
	}
	return time.Now().UTC()
}

func (h *Handler) logger() *slog.Logger {
	if h.o.Logger != nil {
		return h.o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

type credKey struct{}

// credentialOf returns the credential ServeHTTP authenticated.
func credentialOf(ctx context.Context) *store.Credential {
	c, _ := ctx.Value(credKey{}).(*store.Credential)
	return c
}

// ServeHTTP authenticates the Bearer key, then lets the SDK serve the
// request with a server made for the credential.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cred, err := h.o.Calls.Authenticate(r.Context(), bearerKey(r.Header.Get("Authorization")))
	if err != nil {
		status := http.StatusUnauthorized
		if fault.CodeOf(err) != fault.Unauthenticated {
			status = http.StatusInternalServerError
			h.logger().ErrorContext(r.Context(), "mcp: credential not looked up", "error", err)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="countersign"`)
		writeRPCError(w, status, &jsonrpc.Error{Code: codeUnauthenticated, Message: faultText(fault.CodeOf(err), fault.ReasonOf(err))})
		return
	}
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, cred)))
}

// codeUnauthenticated is the JSON-RPC error code of a refused key (the
// implementation-defined server error range).
const codeUnauthenticated = -32001

func writeRPCError(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": e})
}

// bearerKey is the key of an Authorization: Bearer header, or "".
func bearerKey(h string) string {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// serverFor builds the server of one request: the credential's tools, the
// card resource, and a middleware that records the client and hides the
// card's tools from clients that cannot render it.
func (h *Handler) serverFor(r *http.Request) *mcp.Server {
	cred := credentialOf(r.Context())
	if cred == nil {
		return nil
	}
	settings := h.o.Calls.Current().Settings
	s := mcp.NewServer(&mcp.Implementation{Name: "countersign", Title: settings.Workspace.Name + " (countersign)", Version: "1"},
		&mcp.ServerOptions{
			Instructions: "Each tool calls one operation of " + settings.Workspace.Name + "'s APIs through countersign. " +
				"An operation that requires confirmation waits for a person; a denied call says why, as \"Denied (<code>): <reason>\".",
			Logger:       h.o.Logger,
			Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{AppsExtension: map[string]any{}}},
		})
	h.addOperationTools(s, cred)
	h.addConfirmationTools(s, cred)
	h.addScriptTool(s, cred)
	for _, x := range h.o.Extra {
		if x.Visible != nil && !x.Visible(cred) {
			continue
		}
		handle := x.Handle
		s.AddTool(x.Tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return handle(ctx, cred, clientOf(req), req)
		})
	}
	s.AddResource(cardResource(), h.readCard)
	s.AddReceivingMiddleware(h.middleware(cred))
	return s
}

// middleware records the client as the credential's last client seen, and
// drops the card's tools from tools/list for clients without MCP Apps.
func (h *Handler) middleware(cred *store.Credential) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			client := clientOf(req)
			if client.Name != "" {
				h.o.Calls.RecordClient(ctx, cred, calls.Client{Name: client.Name, Version: client.Version, CanAsk: client.CanAsk()})
			}
			if method == "tools/call" && !client.Apps {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && appsOnly[p.Name] {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool \"" + p.Name + "\""}
				}
			}
			res, err := next(ctx, method, req)
			if method == "tools/list" && err == nil && !client.Apps {
				if l, ok := res.(*mcp.ListToolsResult); ok {
					kept := l.Tools[:0:0]
					for _, t := range l.Tools {
						if !appsOnly[t.Name] {
							kept = append(kept, t)
						}
					}
					l.Tools = kept
				}
			}
			return res, err
		}
	}
}
