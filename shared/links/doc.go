// Package links signs and verifies the approval links countersign sends to
// approvers (docs/api.md, The approval page):
//
//	<public_url>/approve/<id>?a=<approver>&exp=<unix>&kid=<key id>&sig=<base64url HMAC-SHA256>
//
// The MAC covers a domain-separated encoding of the confirmation id, the
// approver, the expiry and the key id, so no field can be changed or moved
// into another. A Signer holds the current key, used to sign, and older keys
// still accepted when verifying, so a key can be rotated without breaking the
// links already sent. LoadOrCreateKey keeps the key of the local stack in a
// file under its data directory; the deployed functions read theirs from
// Secrets Manager and build a Key themselves.
//
// The same key also seals short tokens (Seal, Open) for other surfaces: the
// MCP request state and the confirmation card's decision token. Their MACs
// are domain-separated from the links' and from each other by purpose.
package links
