// Package countersign is the domain: the records countersign keeps and
// their states, one file a noun. A credential (credential.go) and the
// person it may be, with its Choice at the confirm tier and its Origin; a
// confirmation (confirmation.go) with its operations and their outcomes,
// and its Status (status.go: the one list of statuses, Valid, Terminal,
// and the one table of the words every surface says them in); the audit
// trail (audit.go); a script's journal (script.go); the authorization
// server's clients, codes, tokens and grants (oauth.go); passkeys, approval
// grants, what a person saw (current.go, changes.go); and a listing's
// pages (list.go).
//
// It imports nothing of the project, only the standard library: every
// other package imports it. The store adapters (shared/store/embedded,
// shared/store/dynamostore) keep these records; the decision
// (shared/policy), the pipeline, the workflow and the surfaces pass them
// around. What a surface shows of them lives with the surface, or in
// shared/views when several show it; the error codes are shared/fault's.
package countersign
