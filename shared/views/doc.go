// Package views holds what more than one surface shows of the domain's
// records, so that no surface imports another for a shape: who decided a
// confirmation (Decider, DecidedBy) and a quorum's count (Approvals), as
// the API, the approval events and the webhooks show them; and a script
// run as its owner reads it (ScriptResult, ShownCall, ScriptFailure), as
// POST /v1/scripts and the MCP run_script tool answer it, apart from the
// JavaScript engine (shared/script) so that a surface can use it without
// linking goja.
package views
