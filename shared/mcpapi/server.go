package mcpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/telemetry/mcpotel"
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
	Visible func(cred *countersign.Credential) bool
	Handle  func(ctx context.Context, cred *countersign.Credential, client Client, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

// Options build a Handler. Calls and Signer are required; nil fields
// otherwise mean the defaults their comments give.
type Options struct {
	// Calls is the call pipeline every operation tool goes through; its
	// Config gives the connections, the workspace and the timeouts.
	Calls Pipeline
	// Signer seals the request states and the card tokens with the link key.
	Signer *links.Signer
	// Scripts is code mode: with it every credential gets run_script,
	// and the card and confirmation_status run and show script batches.
	// gatewayapp attaches it; nil leaves code mode out.
	Scripts Scripts
	// Extra are tools added to every server.
	Extra []ExtraTool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives the surface's warnings; nil discards.
	Logger *slog.Logger
}

// Handler is the MCP surface, an http.Handler (ServeHTTP, transport.go).
type Handler struct {
	o   Options
	sdk http.Handler
}

// New builds the surface: a stateless Streamable HTTP handler of the SDK
// that answers every POST with one response and holds no session (the
// session ids of older revisions are sealed, not stored: session.go).
func New(o Options) *Handler {
	h := &Handler{o: o}
	h.sdk = mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       o.Logger,
		// ServeHTTP checks Origin and, on a loopback listener, Host
		// itself (transport.go), before the key: with settings.json's
		// allowed origins, and on Lambda too.
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

// serverKey holds, in a request's context, the server made for it: the
// SDK asks for it twice per request (for the protocol versions, then to
// serve), and one is enough.
type serverKey struct{}

// credentialOf returns the credential ServeHTTP authenticated.
func credentialOf(ctx context.Context) *countersign.Credential {
	c, _ := ctx.Value(credKey{}).(*countersign.Credential)
	return c
}

// serverFor builds the server of one request: the credential's tools, the
// card resource, and a middleware that records the client and hides the
// card's tools from clients that cannot render it.
func (h *Handler) serverFor(r *http.Request) *mcp.Server {
	cred := credentialOf(r.Context())
	if cred == nil {
		return nil
	}
	memo, _ := r.Context().Value(serverKey{}).(**mcp.Server)
	if memo != nil && *memo != nil {
		return *memo
	}
	s := h.newServer(cred)
	if memo != nil {
		*memo = s
	}
	return s
}

// newServer builds a credential's server. It declares what it answers and
// nothing else: tools and resources without list-changed notifications
// (a stateless server has no stream to send them on, so
// subscriptions/listen is acknowledged with nothing subscribed and ends at
// once), prompts (an empty list) and logging (a level is accepted; no
// log messages are sent), no completions (transport.go answers those
// methods "method not found"). Every list is private to the
// credential (cacheScope "private"): tools differ per credential and per
// client, and a shared cache must not hand one key's list to another.
func (h *Handler) newServer(cred *countersign.Credential) *mcp.Server {
	settings := h.o.Calls.Current().Settings
	s := mcp.NewServer(&mcp.Implementation{Name: "countersign", Title: settings.Workspace.Name + " (countersign)", Version: "1"},
		&mcp.ServerOptions{
			Instructions: "Each tool calls one operation of " + settings.Workspace.Name + "'s APIs through countersign. " +
				"An operation that requires confirmation waits for a person; a denied call says why, as \"Denied (<code>): <reason>\".",
			Logger: h.o.Logger,
			Capabilities: &mcp.ServerCapabilities{
				Tools:      &mcp.ToolCapabilities{},
				Resources:  &mcp.ResourceCapabilities{},
				Prompts:    &mcp.PromptCapabilities{},
				Extensions: map[string]any{AppsExtension: map[string]any{}, TasksExtension: map[string]any{}},
				// Deprecated from protocol 2026-07-28 on; the older revisions
				// this server speaks (legacyProtocols) have it.
				//lint:ignore SA1019 kept for the older protocol revisions
				Logging: &mcp.LoggingCapabilities{},
			},
			SupportedProtocolVersions: Protocols,
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
				c.CacheScope = "private"
			},
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
			return handle(ctx, cred, h.clientOf(cred, req), req)
		})
	}
	s.AddResource(cardResource(), h.readCard)
	s.AddReceivingMiddleware(h.middleware(cred))
	s.AddReceivingMiddleware(h.taskMiddleware(cred))
	s.AddReceivingMiddleware(mcpotel.Middleware)
	return s
}

// middleware records the client as the credential's last client seen, and
// drops the card's tools from tools/list for clients without MCP Apps.
func (h *Handler) middleware(cred *countersign.Credential) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			client := h.clientOf(cred, req)
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
