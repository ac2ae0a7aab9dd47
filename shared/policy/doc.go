// Package policy is the pure decision at the heart of countersign: given a
// compiled policy and one agent call, it says whether the call executes,
// pauses for a person, or is denied, and why.
//
// A call is evaluated in a fixed order and the first rule that decides,
// decides (docs/design.md, The model): resolve the operation (unknown → deny
// unknown_operation), take the configured tier of the endpoint or tool,
// apply escalation rules (thresholds and delegation only ever raise the tier,
// and an escalated call is denied, never paused), apply the connection
// hook's answer, apply the credential's limits (read-only, write intent), and
// finally map the tier to an outcome, using the credential's Choice at the
// confirm tier.
//
// The package does no I/O, reads no clock and imports nothing of the
// project but the domain (the root package, for a credential's Choice),
// which imports nothing of it. A Policy is compiled once by NewPolicy (path templates into
// per-method segment tries, explanation strings precomputed) and is then safe
// for concurrent use; Resolve and Decide do not allocate on the common paths.
// Every Decision carries the effective and configured tiers, the rule that
// decided and a one-sentence reason, so every denial can explain itself.
package policy
