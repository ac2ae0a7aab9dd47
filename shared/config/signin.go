package config

import (
	"encoding/json"
	"net/url"

	"github.com/go-json-experiment/json/jsontext"
)

// SignIn is settings.json's sign_in block: the workspace's identity
// provider, through which people sign in from their chat and coding
// clients (OpenID Connect: Cognito, Okta, Entra ID, Google, ...).
// Without it, the local stack offers its development sign-in page and a
// deployment has no sign-in (keys only).
type SignIn struct {
	// Issuer is the provider's issuer URL (https; http only on a loopback
	// address), as its discovery document states it.
	Issuer string `json:"issuer"`
	// ClientID is countersign's client at the provider.
	ClientID string `json:"client_id"`
	// ClientSecret is that client's secret; it may be given as a
	// reference (ClientSecretRef), and then holds the resolved value.
	ClientSecret    string    `json:"client_secret"`
	ClientSecretRef SecretRef `json:"-"`
}

// Configured reports whether an identity provider is configured.
func (s SignIn) Configured() bool { return s.Issuer != "" }

// signInSettings reads the sign_in block.
func signInSettings(s *src, raw json.RawMessage) SignIn {
	var out SignIn
	var doc struct {
		Issuer       *string        `json:"issuer"`
		ClientID     *string        `json:"client_id"`
		ClientSecret jsontext.Value `json:"client_secret"`
	}
	if !s.decode("sign_in", raw, &doc) {
		return out
	}
	if doc.Issuer == nil {
		s.errf("sign_in.issuer", "missing: the identity provider's issuer URL (for example https://cognito-idp.<region>.amazonaws.com/<pool id>)")
	} else {
		iss := *doc.Issuer
		u, err := url.Parse(iss)
		switch {
		case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
			s.errf("sign_in.issuer", "%q is not an issuer URL (https://host[/path], no query or fragment)", iss)
		case u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname())):
			s.errf("sign_in.issuer", "%q must be https (http only on a loopback address, for tests)", iss)
		}
		out.Issuer = iss
	}
	if doc.ClientID == nil {
		s.errf("sign_in.client_id", "missing: countersign's client id at the identity provider")
	} else {
		if *doc.ClientID == "" {
			s.errf("sign_in.client_id", "must not be empty")
		}
		out.ClientID = *doc.ClientID
	}
	if doc.ClientSecret == nil {
		s.errf("sign_in.client_secret", `missing: the client's secret, as {"secretsmanager": "NAME"} (or the value itself, locally)`)
	} else if sec, ref, ok := s.secretOrRef("sign_in.client_secret", json.RawMessage(doc.ClientSecret)); ok {
		if sec == "" && ref.IsZero() {
			s.errf("sign_in.client_secret", "must not be empty")
		}
		out.ClientSecret, out.ClientSecretRef = sec, ref
	}
	return out
}
