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
// Recording is two steps (seal.go): the record is written on its own
// (a random ID, no sequence number, no condition), so a credential's calls
// never wait on one another to record; then it is sealed into its chain
// with the other pending records, in time order, a batch at a time, by
// one goroutine per chain in each process, and the chain's head moves to
// the batch's last record. Append (the command line's key changes, a
// configuration load, a denial that opens a counting window) still writes
// straight into the chain: one conditional write of the record on its
// (chain, seq) slot, and a writer that loses the race reads the new end
// and tries again.
package audit
