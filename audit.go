package countersign

import (
	"time"
)

// AuditRecord is one entry of the audit trail: who did what, when, under
// which rule, to which bound operation, with what outcome. Records form
// chains (one per credential, and "system"): each carries the SHA-256 of
// the previous record of its chain (Prev) and of itself (Hash), computed by
// package audit. Optional fields are omitted from the JSON when empty, so
// adding one later does not change the hash of older records.
type AuditRecord struct {
	Chain string    `json:"chain"`
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	// ID names the record from the moment it is written, before it is
	// sealed into its chain (package audit): a sealer that finds it sealed
	// already never seals it twice. Absent on records written before IDs.
	ID string `json:"id,omitempty"`
	// Actor is who acted: a credential id, "approver:<name>",
	// "operator:<credential id>", "cli" or "system".
	Actor string `json:"actor"`
	// Action is what happened, e.g. "call.denied", "confirmation.approved".
	Action string `json:"action"`
	// Subject names what it happened to: a confirmation or review id, a
	// credential id, a configuration digest.
	Subject    string `json:"subject,omitempty"`
	Credential string `json:"credential,omitempty"`
	Connection string `json:"connection,omitempty"`
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"`
	Tier       string `json:"tier,omitempty"`
	Rule       string `json:"rule,omitempty"`
	// Binding is the bound operation's hash (canon.Binding).
	Binding string `json:"binding,omitempty"`
	// Outcome is the outcome status: a denial code, "confirmation_required",
	// "executed", a confirmation status, an upstream status.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Hook is the connection hooks' answer, when they were asked.
	Hook *AuditHook `json:"hook,omitempty"`
	// PathBytes and PathSHA256 are set when Path was cut to its bound
	// (package audit): the whole path's length and hex SHA-256.
	PathBytes  int    `json:"path_bytes,omitempty"`
	PathSHA256 string `json:"path_sha256,omitempty"`
	// ReasonBytes and ReasonSHA256 are the same for a cut Reason.
	ReasonBytes  int    `json:"reason_bytes,omitempty"`
	ReasonSHA256 string `json:"reason_sha256,omitempty"`
	// Count is how many identical events a summary record stands for
	// (absent: one). A summary repeats record First, made at Since, and
	// is made at the end of its window (At: the last repeat).
	Count int64      `json:"count,omitempty"`
	First int64      `json:"first,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// TTL is when the store may delete the record (unix seconds; absent:
	// never). Only the records of an expiring chain have one, and along
	// such a chain it never decreases, so records expire oldest first.
	TTL int64 `json:"ttl,omitempty"`
	// PrevTTL is the TTL of the previous record of the chain: a record
	// whose predecessor is gone shows that it was allowed to expire.
	PrevTTL int64 `json:"prev_ttl,omitempty"`
	// Prev is the Hash of the previous record of the chain ("" for Seq 1).
	Prev string `json:"prev"`
	// Hash is the hex SHA-256 of this record with Hash empty.
	Hash string `json:"hash"`
}

// AuditHook is a hook's answer in an audit record.
type AuditHook struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// AuditHead is where a chain ends: the Seq and Hash of its newest record.
// A deleted or edited newest record no longer matches it.
type AuditHead struct {
	Chain string `json:"chain"`
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
	// Expires is that record's TTL (0: never). The head itself never
	// expires: when every record of an expiring chain is gone it still
	// names the last one, and the chain goes on from it.
	Expires int64 `json:"expires,omitempty"`
}

// PendingAudit is a record written but not yet sealed into its chain
// (store.Store.AddAudit): Key is where the store keeps it.
type PendingAudit struct {
	Key    string
	Record AuditRecord
}

// AuditQuery selects records of one chain for ListAudit.
type AuditQuery struct {
	Chain string
	// After skips records with Seq at or below it.
	After int64
	// Limit bounds the records returned; 0 returns all.
	Limit int
	// Newest lists from the highest Seq down.
	Newest bool
}
