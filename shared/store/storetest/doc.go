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
//   - ListReviews lists confirmations of kind review only, ListConfirmations the others, by
//     CreatedAt, then by ID for equal times, either way, by stored status too; every listing pages
//     with a cursor, a page never holds more than its limit, and a cursor of another listing, a
//     malformed one or a page size out of range is refused (store.ErrBadCursor for cursors).
//   - TakeQuota counts exactly: racing takers get exactly the limit, the rest ErrQuotaFull.
//   - AppendAudit refuses a taken (chain, seq) slot and only moves a head forward; audit records never expire.
//   - Pending audit records (AddAudit) list in time order and are not in the chain; SealAudit
//     seals a batch up to the first taken slot, deletes their pending copies and moves the head.
//   - A script run's calls come back in Index order and its parts in Key
//     order, never another run's (not even one whose ID extends it); a part
//     holds any bytes, up to 256 KiB (the embedded store keeps it as base64).
//
// The suite makes its IDs unique per subtest, so newStore may hand every
// subtest the same backing store (one DynamoDB table per run) or a fresh one.
package storetest
