package oauth

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// resourceMetadata answers RFC 9728 Protected Resource Metadata for the
// JSON API (suffix "") or /mcp (suffix "/mcp").
func (s *Server) resourceMetadata(w http.ResponseWriter, r *http.Request, suffix string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use GET")
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, &oauthex.ProtectedResourceMetadata{
		Resource:               s.issuer() + suffix,
		AuthorizationServers:   []string{s.issuer()},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "countersign",
	})
}

// serverMetadata answers RFC 8414 Authorization Server Metadata.
func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use GET")
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	iss := s.issuer()
	meta := &oauthex.AuthServerMeta{
		Issuer:                                     iss,
		AuthorizationEndpoint:                      iss + PathAuthorize,
		TokenEndpoint:                              iss + PathToken,
		RegistrationEndpoint:                       iss + PathRegister,
		RevocationEndpoint:                         iss + PathRevoke,
		ScopesSupported:                            []string{Scope},
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{"none", "client_secret_post", "client_secret_basic"},
		RevocationEndpointAuthMethodsSupported:     []string{"none", "client_secret_post", "client_secret_basic"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          !s.o.NoClientDocuments,
		AuthorizationResponseIssParameterSupported: true,
	}
	// oauthex writes jwks_uri even when empty; there is no JWKS (tokens
	// are opaque), so it is left out rather than given as "".
	b, err := json.Marshal(meta)
	var out map[string]any
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "the metadata could not be written")
		return
	}
	if out["jwks_uri"] == "" {
		delete(out, "jwks_uri")
	}
	writeJSON(w, http.StatusOK, out)
}
