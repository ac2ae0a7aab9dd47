package mcpapi

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolMRTR is the first protocol revision with multi round-trip
// requests: a server can ask for input only by answering input_required.
const ProtocolMRTR = "2026-07-28"

// AppsExtension and AppsMIMEType are the MCP Apps extension's identifier and
// the media type of its HTML views.
const (
	AppsExtension = "io.modelcontextprotocol/ui"
	AppsMIMEType  = "text/html;profile=mcp-app"
)

// Client is what the surface knows of the client making a request.
type Client struct {
	Name, Version string
	// Protocol is the request's protocol revision.
	Protocol string
	// Elicit is set when countersign can ask the person through the client's
	// own dialog: a form elicitation in an input_required result, which
	// needs protocol 2026-07-28 and a declared form elicitation capability.
	// (On older revisions a stateless server cannot send the client a
	// request, so a declared elicitation capability cannot be used.)
	Elicit bool
	// Apps is set when the client declared MCP Apps with HTML views, so it
	// renders the confirmation card.
	Apps bool
}

// CanAsk reports whether the person can be asked through this client.
func (c Client) CanAsk() bool { return c.Elicit || c.Apps }

// label names the client in messages.
func (c Client) label() string {
	if c.Name == "" {
		return "This client"
	}
	return c.Name
}

// clientRequest is what every server request tells of its client: read
// from the request's _meta on protocol 2026-07-28, from the session's
// initialize parameters before it (*mcp.ServerRequest[P] has the methods).
type clientRequest interface {
	ProtocolVersion() string
	ClientInfo() *mcp.Implementation
	ClientCapabilities() *mcp.ClientCapabilities
}

// clientOf reads the client of a request.
func clientOf(req mcp.Request) Client {
	var (
		proto string
		info  *mcp.Implementation
		caps  *mcp.ClientCapabilities
	)
	switch r := req.(type) {
	case *mcp.InitializeRequest:
		// Initialize carries what the session does not know yet.
		if r.Params != nil {
			proto, info, caps = r.Params.ProtocolVersion, r.Params.ClientInfo, r.Params.Capabilities
		}
	case clientRequest:
		proto, info, caps = r.ProtocolVersion(), r.ClientInfo(), r.ClientCapabilities()
	}
	c := Client{Protocol: proto}
	if info != nil {
		c.Name, c.Version = info.Name, info.Version
	}
	if caps == nil {
		return c
	}
	if e := caps.Elicitation; e != nil && proto >= ProtocolMRTR {
		// {} is form elicitation, for clients older than form and url.
		c.Elicit = e.Form != nil || e.URL == nil
	}
	c.Apps = declaresApps(caps)
	return c
}

// declaresApps reports an MCP Apps extension that lists HTML views.
func declaresApps(caps *mcp.ClientCapabilities) bool {
	ext, ok := caps.Extensions[AppsExtension].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	return slices.ContainsFunc(types, func(v any) bool { s, _ := v.(string); return s == AppsMIMEType })
}
