package mcpapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/display"
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
	Elicit bool
	// URL is set when the client declared URL-mode elicitation and not
	// form mode: a person is sent to the confirmation's approval page
	// (URLElicitationRequiredError, -32042), where only they, signed in,
	// may decide; the gateway runs the approved call once.
	URL bool
	// Apps is set when the client declared MCP Apps with HTML views, so it
	// renders the confirmation card.
	Apps bool
	// OutOfBand is set when the client declared form elicitation on an
	// older revision (2025-11-25, 2025-06-18). There a server asks with an
	// elicitation/create request whose answer comes back in another POST,
	// which a stateless handler answering one JSON response per POST (and
	// a Lambda) cannot wait for; so the person is asked out of band: the
	// approvers get their links, the model is told to call
	// confirmation_status, and the gateway runs the approved call once.
	OutOfBand bool
	// NotPerson is set when the client's dialog and card were withheld
	// because the credential is a key, not a person signed in to this
	// client (countersign.Credential.AsksInClient): whoever holds a key
	// could answer its own question, so the approvers are asked instead.
	NotPerson bool
}

// CanAsk reports whether the person can be asked through this client.
func (c Client) CanAsk() bool { return c.Elicit || c.URL || c.Apps || c.OutOfBand }

// label names the client in messages: its name in its own words, cut to
// display.AgentLimit runes with hidden characters shown as escapes, so a
// name cannot flood or reorder the text the model reads.
func (c Client) label() string {
	if strings.TrimSpace(c.Name) == "" {
		return "This client"
	}
	return display.Agent(c.Name, display.AgentLimit)
}

// protocol is the client's protocol revision for messages, bounded as
// label bounds the name.
func (c Client) protocol() string {
	if c.Protocol == "" {
		return "an unknown revision"
	}
	return display.Agent(c.Protocol, display.AgentLimit)
}

// cannotAsk is the refusal's reason for a client that can be asked
// nothing: it names the client and its protocol revision.
func (c Client) cannotAsk() string {
	return fmt.Sprintf("%s (MCP %s) can show neither a confirmation dialog nor a card (it declared neither form elicitation nor MCP Apps)", c.label(), c.protocol())
}

// clientRequest is what every server request tells of its client: read
// from the request's _meta on protocol 2026-07-28, from the session's
// initialize parameters before it (*mcp.ServerRequest[P] has the methods).
type clientRequest interface {
	ProtocolVersion() string
	ClientInfo() *mcp.Implementation
	ClientCapabilities() *mcp.ClientCapabilities
}

// clientOf is the client of a request as countersign may use it: the
// client's own dialog (form elicitation) and the card are for a person
// signed in to that client; for a key (unless it opted in with
// ask_in_client) a client that could ask is asked out of band, through
// the approvers' links.
func (h *Handler) clientOf(cred *countersign.Credential, req mcp.Request) Client {
	c := h.clientDeclared(cred, req)
	if (c.Elicit || c.Apps) && !cred.AsksInClient() {
		c.Elicit, c.Apps, c.OutOfBand, c.NotPerson = false, false, true, true
	}
	if c.URL && !cred.IsPerson() {
		// The page decides for the credential's person: a key has none
		// (ask_in_client or not), so its approvers are asked instead.
		c.URL, c.OutOfBand, c.NotPerson = false, true, true
	}
	return c
}

// clientDeclared reads the client of a request. On an older revision a
// stateless request carries neither the client's name nor its
// capabilities (they came with initialize, in another POST): they are
// read from the session id this handler gave the client at initialize
// (session.go).
func (h *Handler) clientDeclared(cred *countersign.Credential, req mcp.Request) Client {
	c := clientOf(req)
	if c.Protocol >= ProtocolMRTR {
		return c
	}
	if _, isInit := req.(*mcp.InitializeRequest); isInit {
		return c
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return c
	}
	sess, err := h.openSession(cred, extra.Header.Get(sessionHeader))
	if err != nil || sess == nil {
		return c
	}
	proto := c.Protocol
	if extra.Header.Get(protocolHeader) == "" {
		proto = sess.Protocol
	}
	return sess.client(proto)
}

// clientOf reads the client of a request from the request alone.
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
	if declaresForm(caps) {
		if proto >= ProtocolMRTR {
			c.Elicit = true
		} else {
			c.OutOfBand = true
		}
	}
	c.URL = !declaresForm(caps) && declaresURL(caps)
	c.Apps = declaresApps(caps)
	return c
}

// declaresURL reports a URL-mode elicitation capability.
func declaresURL(caps *mcp.ClientCapabilities) bool {
	return caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// declaresForm reports a form elicitation capability ({} is form, for
// clients older than form and url).
func declaresForm(caps *mcp.ClientCapabilities) bool {
	e := caps.Elicitation
	return e != nil && (e.Form != nil || e.URL == nil)
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
