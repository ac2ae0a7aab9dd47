// Package oauth makes countersign the OAuth 2.1 authorization server and
// resource server of its own surfaces (/mcp and the JSON API), so that a
// person signs in from a chat or coding client instead of pasting a key.
//
// Server is a net/http handler for:
//
//   - /.well-known/oauth-protected-resource and
//     /.well-known/oauth-protected-resource/mcp: RFC 9728 Protected
//     Resource Metadata naming this server as the authorization server;
//   - /.well-known/oauth-authorization-server: RFC 8414 metadata;
//   - /oauth/register: RFC 7591 dynamic client registration;
//   - /oauth/authorize: the authorization code grant with PKCE (S256
//     only), the RFC 8707 resource bound as the token's audience, and the
//     RFC 9207 iss parameter in every redirect; the person signs in
//     (SignIn) and consents on a page naming the client;
//   - /oauth/token: the code exchanged once for a short-lived access token
//     and a refresh token that rotates on every use (a reused refresh token
//     revokes the grant: every token of the family);
//   - /oauth/revoke: RFC 7009 revocation;
//   - /oauth/dev-signin: the development sign-in page (DevSignIn), on
//     loopback only.
//
// A client_id that is an https URL is a Client ID Metadata Document: the
// JSON at that URL is fetched (bounded in time and size, no redirects,
// public addresses only) and names the client and its redirect URIs.
//
// Codes, access and refresh tokens and client secrets are random and kept
// only as SHA-256 hashes in the store, compared in constant time; every
// access token is looked up on every call (Server.Verify), so a revoked
// grant is refused from the next call on every instance.
//
// The protocol types (metadata, registration) are the MCP Go SDK's
// oauthex; the PKCE S256 transform is golang.org/x/oauth2's.
package oauth
