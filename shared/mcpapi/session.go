package mcpapi

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// The protocol's HTTP headers.
const (
	sessionHeader  = "Mcp-Session-Id"
	protocolHeader = "Mcp-Protocol-Version"
)

// Before protocol 2026-07-28 a client tells its name and capabilities
// only in initialize, and the requests after it, each its own POST to a
// stateless handler, carry nothing of them. So the answer to initialize
// gives the client an Mcp-Session-Id that is that information sealed with
// the link key (links.Signer.Seal): the client sends it back on every
// request (the transport's MUST), and each request reads from it how the
// person can be asked. Nothing is stored: the id is the session. It says
// only what the client declared of itself, bound to the credential, so
// it grants nothing; a changed, foreign or expired id answers 404, which
// tells the client to initialize again.
const (
	sessionPurpose = "mcp-session"
	// sessionTTL is how long a session id is good for.
	sessionTTL = 7 * 24 * time.Hour
	// maxClientText bounds the client's name and version in the id.
	maxClientText = 128
)

// legacyProtocols are the revisions negotiated by initialize, newest first.
var legacyProtocols = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Protocols are the protocol revisions /mcp negotiates, newest first.
var Protocols = append([]string{ProtocolMRTR}, legacyProtocols...)

// sessionState is what a session id carries.
type sessionState struct {
	Cred     string `json:"cred"`
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	Protocol string `json:"protocol"`
	Form     bool   `json:"form,omitempty"`
	Apps     bool   `json:"apps,omitempty"`
	URL      bool   `json:"url,omitempty"`
}

// client is the session's client on a request of revision proto.
func (s *sessionState) client(proto string) Client {
	return Client{Name: s.Name, Version: s.Version, Protocol: proto, OutOfBand: s.Form && proto < ProtocolMRTR, Apps: s.Apps,
		URL: s.URL && !s.Form}
}

// negotiated is the revision the SDK answers an initialize asking for
// requested: that one if it is negotiated, else the newest.
func negotiated(requested string) string {
	for _, v := range legacyProtocols {
		if v == requested {
			return v
		}
	}
	return legacyProtocols[0]
}

// newSession seals the session id of an initialize.
func (h *Handler) newSession(cred *countersign.Credential, p *mcp.InitializeParams) string {
	st := sessionState{Cred: cred.ID, Protocol: negotiated(p.ProtocolVersion)}
	if p.ClientInfo != nil {
		st.Name, st.Version = clip(p.ClientInfo.Name), clip(p.ClientInfo.Version)
	}
	if p.Capabilities != nil {
		st.Form, st.Apps, st.URL = declaresForm(p.Capabilities), declaresApps(p.Capabilities), declaresURL(p.Capabilities)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return ""
	}
	return h.o.Signer.Seal(sessionPurpose, b, h.now().Add(sessionTTL))
}

// errNoSession is a session id this handler did not give this credential,
// or one that expired.
var errNoSession = fault.New(fault.NotFound, "the Mcp-Session-Id is not one this server gave this key, or it expired: send initialize again for a new session")

// openSession reads a session id: nil for none, errNoSession for one that
// is changed, foreign or expired.
func (h *Handler) openSession(cred *countersign.Credential, id string) (*sessionState, error) {
	if id == "" {
		return nil, nil
	}
	payload, err := h.o.Signer.Open(sessionPurpose, id, h.now())
	if err != nil {
		return nil, errNoSession
	}
	var st sessionState
	if err := json.Unmarshal(payload, &st); err != nil || cred == nil || st.Cred != cred.ID {
		return nil, errNoSession
	}
	return &st, nil
}

// clip bounds a text the client chose, at a character boundary.
func clip(s string) string {
	if len(s) <= maxClientText {
		return s
	}
	s = s[:maxClientText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
