// Package upstream calls a connection's API: it joins the connection's base URL with the
// concrete path of a call, sets the connection's configured headers on every request, passes
// the agent's headers the connection forwards (never one CheckForwardName refuses), caps the
// response body and reports network failures and timeouts as ErrUnreachable, which the HTTP
// layer maps to 502 upstream_unreachable (docs/api.md, Agent calls).
//
// The package knows nothing about tiers, credentials or confirmations: by the time a Request
// reaches Client.Do, the call has been decided.
package upstream
