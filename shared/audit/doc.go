// Package audit is the tamper-evident audit trail: who did what, when,
// under which rule, to which bound operation, with what outcome.
//
// Records form chains, one per credential ("cred:<id>": its calls and what
// approvers and operators did to them) and two for the deployment
// ("system": key changes; "config": configuration loads), so appends from
// many processes at once contend only within one credential. Each record
// carries the SHA-256 of the previous record of its chain and of itself;
// the store keeps each chain's head (the newest Seq and Hash). Verify walks
// every chain: a deleted record leaves a gap, an edited one no longer
// hashes to what its successor (or, for the newest, the head) says.
//
// Appending is one conditional write of the record on its (chain, seq)
// slot; a writer that loses the race reads the new end and tries again.
// The store then moves the chain's head forward (a second, small write on
// DynamoDB; the same transaction in bbolt).
package audit
