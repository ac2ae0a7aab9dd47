// Package fault holds the one code type of countersign's errors and
// denials: every code of docs/api.md and the extensions docs/ lists
// lists. Transports render a code through their own table (HTTP status in
// httpapi, the tool result text in mcp); a test in each fails when a code
// has no entry there.
//
// The pure decision keeps its own small code type (policy.Code) so that
// shared/policy imports nothing of the project but the domain, and the
// domain nothing of it; every tier code is
// also a code here (FromTier converts, and a test proves each is known).
package fault
