// Package storetest is the contract suite for store.Store. Every adapter
// (embedded, dynamostore) runs the same Run from its own tests, so the
// adapters cannot drift apart.
//
// The contract the suite checks, beyond what the store.Store doc comments say:
//
//   - A record read back equals what encoding/json would give for the record
//     that was written (the records' JSON tags decide nil versus empty), with
//     every time.Time in UTC and at full nanosecond precision.
//   - Reads return copies: mutating a returned record, or the record passed to
//     a write after the write, never changes what is stored.
//   - Create* set the passed record's Version to 1; Update* increment it on
//     success and leave it unchanged on failure.
//   - SetLastClient and Update* return store.ErrNotFound for a missing record.
//   - ListReviews lists confirmations of kind review only, by CreatedAt, then by ID for equal times.
//   - AppendAudit refuses a taken (chain, seq) slot and only moves a head forward; audit records never expire.
//   - A script run's calls come back in Index order and its parts in Key
//     order, never another run's (not even one whose ID extends it); a part
//     holds any bytes, up to 256 KiB (the embedded store keeps it as base64).
//
// The suite makes its IDs unique per subtest, so newStore may hand every
// subtest the same backing store (one DynamoDB table per run) or a fresh one.
package storetest
